//! `testkit-server`: a real MCP server with fault injection, for Switchboard's tests.

use clap::Parser;

fn main() {
    let options = switchboard_testkit::Options::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("testkit-server: cannot start the async runtime: {error}");
            std::process::exit(1);
        }
    };
    let code = runtime.block_on(switchboard_testkit::server::run(options));
    // Exit without waiting for the blocking thread that may still sit in a read
    // of stdin.
    std::process::exit(code);
}
