//! `testkit-registry`: a local MCP Registry serving recorded `server.json` documents.

use clap::Parser;

fn main() {
    let options = switchboard_testkit::registry::RegistryOptions::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("testkit-registry: cannot start the async runtime: {error}");
            std::process::exit(1);
        }
    };
    if let Err(error) = runtime.block_on(switchboard_testkit::registry::run(options)) {
        eprintln!("testkit-registry: {error}");
        std::process::exit(1);
    }
}
