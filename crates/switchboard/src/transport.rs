//! Transports: how bytes reach a server. Each submodule turns one `Transport` variant of the
//! configuration into something rmcp can drive; nothing here knows about handshakes or states.

pub(crate) mod http;
pub(crate) mod http_lane;
pub(crate) mod ide;
pub(crate) mod lane;
pub(crate) mod line_guard;
pub(crate) mod proxy;
pub(crate) mod remote;
pub(crate) mod sse;
pub(crate) mod stdio;
pub(crate) mod ws;
