//! Switchboard: the host side of the Model Context Protocol.

pub mod import;
