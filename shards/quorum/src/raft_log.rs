//! raft-rs logs through `slog`; this drain hands its records to `tracing` under the target
//! `raft`, so they obey `RUST_LOG` like the rest of the broker instead of vanishing.
//!
//! Levels: raft-rs logs every election step at INFO ("became candidate", "received votes"),
//! which the driver already reports once per role change at INFO; those go to DEBUG. Its
//! warnings and errors (a rejected append, a bad message) stay warnings and errors.

use std::fmt::{self, Write as _};

use slog::{Drain, Key, Level, OwnedKVList, Record, Serializer, KV};

/// An `slog` drain that forwards to `tracing`.
pub struct TracingDrain;

impl Drain for TracingDrain {
    type Ok = ();
    type Err = slog::Never;

    fn log(&self, record: &Record<'_>, values: &OwnedKVList) -> Result<(), slog::Never> {
        let level = record.level();
        // Formatting costs an allocation: only for records someone will see.
        let enabled = match level {
            Level::Critical | Level::Error => {
                tracing::enabled!(target: "raft", tracing::Level::ERROR)
            }
            Level::Warning => tracing::enabled!(target: "raft", tracing::Level::WARN),
            Level::Info => tracing::enabled!(target: "raft", tracing::Level::DEBUG),
            Level::Debug | Level::Trace => {
                tracing::enabled!(target: "raft", tracing::Level::TRACE)
            }
        };
        if !enabled {
            return Ok(());
        }
        let mut line = KeyValues(String::new());
        let _ = record.kv().serialize(record, &mut line);
        let _ = values.serialize(record, &mut line);
        let message = record.msg();
        let fields = line.0;
        match level {
            Level::Critical | Level::Error => tracing::error!(target: "raft", "{message}{fields}"),
            Level::Warning => tracing::warn!(target: "raft", "{message}{fields}"),
            Level::Info => tracing::debug!(target: "raft", "{message}{fields}"),
            Level::Debug | Level::Trace => tracing::trace!(target: "raft", "{message}{fields}"),
        }
        Ok(())
    }
}

/// slog's key-value pairs as ` key=value` text.
struct KeyValues(String);

impl Serializer for KeyValues {
    fn emit_arguments(&mut self, key: Key, value: &fmt::Arguments<'_>) -> slog::Result {
        let _ = write!(self.0, " {key}={value}");
        Ok(())
    }
}

/// The logger raft-rs is given.
pub fn logger() -> slog::Logger {
    slog::Logger::root(TracingDrain.fuse(), slog::o!())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_keep_their_message_and_fields() {
        let mut line = KeyValues(String::new());
        let _ = line.emit_arguments("term", &format_args!("{}", 7));
        let _ = line.emit_arguments("raft_id", &format_args!("{}", 2));
        assert_eq!(line.0, " term=7 raft_id=2");
        // Without a subscriber nothing is enabled and nothing is formatted.
        let logger = logger();
        slog::info!(logger, "became follower"; "term" => 3);
    }
}
