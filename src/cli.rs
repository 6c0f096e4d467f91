//! Command-line arguments.

use std::path::PathBuf;

/// One-line usage.
pub const USAGE: &str =
    "usage: sluice [--config FILE] [--override key=value]... | --help | --help-config | --version";

/// `sluice --help`.
pub const HELP: &str = "\
sluice — a Kafka-compatible streaming broker, thread-per-core on io_uring

USAGE:
    sluice [--config FILE] [--override key=value]...

OPTIONS:
    -c, --config FILE        TOML configuration, applied over the embedded single-node default
                             (config/sluice.toml). Settings use Apache Kafka's names.
        --override KEY=VALUE Set one setting, after the file (repeatable), as Kafka's
                             kafka-server-start --override does.
        --help-config        List every setting with its meaning.
    -h, --help               This text.
    -V, --version            The version.

With no options Sluice runs as a single node: it listens on 127.0.0.1:9092 and keeps its data
in ./data. Logs go to stderr; RUST_LOG sets the level (e.g. RUST_LOG=debug).
SIGINT or SIGTERM shuts down gracefully: stop accepting, finish in-flight requests, flush, exit 0.
";

/// What to do.
pub enum Command {
    /// Run the broker.
    Run(RunArgs),
    /// Print help.
    Help,
    /// Print the settings.
    HelpConfig,
    /// Print the version.
    Version,
}

/// Arguments of a broker run.
pub struct RunArgs {
    /// `--config`.
    pub config: Option<PathBuf>,
    /// `--override`s, in order.
    pub overrides: Vec<String>,
}

/// Parses the arguments after the program name.
pub fn parse(mut args: impl Iterator<Item = String>) -> Result<Command, String> {
    let mut run = RunArgs {
        config: None,
        overrides: Vec::new(),
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--help-config" => return Ok(Command::HelpConfig),
            "-V" | "--version" => return Ok(Command::Version),
            "-c" | "--config" => {
                let file = args.next().ok_or("--config needs a file")?;
                run.config = Some(PathBuf::from(file));
            }
            "--override" => run
                .overrides
                .push(args.next().ok_or("--override needs key=value")?),
            other => {
                if let Some(file) = other.strip_prefix("--config=") {
                    run.config = Some(PathBuf::from(file));
                } else if let Some(item) = other.strip_prefix("--override=") {
                    run.overrides.push(item.to_string());
                } else {
                    return Err(format!("unknown argument '{other}'"));
                }
            }
        }
    }
    Ok(Command::Run(run))
}

/// `sluice --help-config`: every setting, from the same table the loader uses.
pub fn help_config() -> String {
    let mut out = String::from(
        "Settings (TOML keys, Apache Kafka's names; see config/sluice.toml for the defaults):\n\n",
    );
    for setting in sluice_config::SETTINGS {
        out.push_str(&format!("  {:<42} {}\n", setting.name, setting.doc));
    }
    out
}
