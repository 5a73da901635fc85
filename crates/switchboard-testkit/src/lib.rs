//! Test partners for Switchboard. The MCP test server lands with the connections work.
