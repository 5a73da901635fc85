//! Loopback ports for tests that need an address before anything listens on it.

/// A loopback port that nothing listens on now: bound on 127.0.0.1, read back and let go
/// (another program could take it meanwhile; tests use it at once). Panics when no port can be
/// bound.
pub fn unused_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .unwrap_or_else(|e| panic!("cannot bind a loopback port: {e}"))
}
