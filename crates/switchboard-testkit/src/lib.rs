//! Test partners for Switchboard: real MCP servers with faults switched on by flags, and
//! helpers that build real configuration trees on disk.

pub mod config_tree;
