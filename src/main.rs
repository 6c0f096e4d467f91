//! `sluice`: a Kafka-compatible streaming broker, thread-per-core on io_uring.

mod bootstrap;
mod cli;
mod preflight;
mod topology;

use std::process::ExitCode;

use sluice_config::BrokerConfig;
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    let args = match cli::parse(std::env::args().skip(1)) {
        Ok(cli::Command::Run(args)) => args,
        Ok(cli::Command::Help) => {
            print!("{}", cli::HELP);
            return ExitCode::SUCCESS;
        }
        Ok(cli::Command::HelpConfig) => {
            print!("{}", cli::help_config());
            return ExitCode::SUCCESS;
        }
        Ok(cli::Command::Version) => {
            println!("sluice {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("sluice: {message}\n\n{}", cli::USAGE);
            return ExitCode::from(2);
        }
    };
    tune_allocator();
    init_tracing();
    let config = match BrokerConfig::load(args.config.as_deref(), &args.overrides) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("sluice: {error}");
            return ExitCode::from(2);
        }
    };
    if let Err(message) = preflight::check() {
        eprintln!("sluice: {message}");
        return ExitCode::from(1);
    }
    match bootstrap::run(config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            tracing::error!("{message}");
            eprintln!("sluice: {message}");
            ExitCode::from(1)
        }
    }
}

/// Request frames and read buffers are often megabytes. glibc serves such sizes with a fresh
/// mmap each time and unmaps them on free, so every request paid page faults and page zeroing
/// (a fifth of the broker's CPU while consuming, by perf). Keeping them in the heap lets freed
/// buffers be reused; memory stays bounded by the buffers in flight.
fn tune_allocator() {
    const MMAP_THRESHOLD_BYTES: libc::c_int = 16 << 20;
    const TRIM_THRESHOLD_BYTES: libc::c_int = 32 << 20;
    // SAFETY: mallopt only changes allocator tunables; called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES);
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES);
    }
}

fn init_tracing() {
    // glommio logs an ERROR while probing iopoll support on every file it opens; it is harmless
    // and would drown real errors, so its target is capped unless RUST_LOG asks for it.
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,glommio=off"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_ansi(ansi)
        .with_writer(std::io::stderr)
        .init();
}
