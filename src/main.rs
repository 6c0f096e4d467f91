//! `sluice`: a Kafka-compatible streaming broker, thread-per-core on io_uring.

mod bootstrap;
mod clean_shutdown;
mod cli;
mod preflight;
mod topology;

use std::process::ExitCode;

use sluice_config::BrokerConfig;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

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
    stop_on_panic();
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

/// A panic on any thread — a shard, the controller executor, the signal thread — stops the
/// process at once, logged with its thread and a backtrace, exit code 101. Without this a shard
/// thread's panic ended that thread only: its partitions and connections stopped answering
/// while the process lived on, and nobody noticed until shutdown joined the thread.
fn stop_on_panic() {
    std::panic::set_hook(Box::new(|info| {
        let thread = std::thread::current();
        let thread = thread.name().unwrap_or("unnamed");
        let backtrace = std::backtrace::Backtrace::force_capture();
        tracing::error!("panic on thread {thread}: {info}; the process stops\n{backtrace}");
        eprintln!("sluice: panic on thread {thread}: {info}");
        std::process::exit(101);
    }));
}

fn init_tracing() {
    // glommio logs through the `log` crate (bridged here by tracing-log) and raft-rs through
    // slog (`sluice_quorum`'s drain, target `raft`): both obey RUST_LOG like Sluice's own lines.
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,glommio=warn,raft=warn"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let format = tracing_subscriber::fmt::layer()
        .with_target(false)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    tracing_subscriber::registry()
        .with(QuietIopollProbe)
        .with(format.with_filter(filter))
        .init();
}

/// glommio logs an ERROR while probing io_uring poll support on each block device it opens
/// files on (`reactor.rs`: "got unexpected error when probing iopoll support"); on most
/// filesystems the probe fails and glommio falls back, as intended, so the line would only
/// drown real errors. Everything else glommio says passes through.
struct QuietIopollProbe;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for QuietIopollProbe {
    fn event_enabled(
        &self,
        event: &tracing::Event<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) -> bool {
        if !event.metadata().target().starts_with("glommio") {
            return true;
        }
        let mut probe = MentionsIopollProbe(false);
        event.record(&mut probe);
        !probe.0
    }
}

struct MentionsIopollProbe(bool);

impl tracing::field::Visit for MentionsIopollProbe {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 |= format!("{value:?}").contains("probing iopoll support");
        }
    }
}
