//! Figures of the process and its threads from /proc, read at scrape time (no cost between
//! scrapes): CPU seconds, memory, open descriptors, and each shard thread's CPU time (its busy
//! time: with `sluice.spin.before.park.us = 0`, the default, a parked executor uses none).

/// What /proc says about the process.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ProcessStats {
    /// User + system CPU seconds.
    pub cpu_seconds: f64,
    /// Resident memory.
    pub resident_bytes: u64,
    /// Virtual memory.
    pub virtual_bytes: u64,
    /// Threads.
    pub threads: u64,
    /// Start time, seconds since the epoch.
    pub start_time_seconds: f64,
    /// Open file descriptors.
    pub open_fds: u64,
    /// RLIMIT_NOFILE's soft limit.
    pub max_fds: u64,
}

/// Clock ticks per second of /proc's CPU times.
fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}

fn page_bytes() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(page).unwrap_or(4096)
}

/// The fields of a `/proc/.../stat` line after the command name (which may hold spaces and
/// parentheses: everything up to the last ')' is skipped). Field 3 of proc(5) is index 0.
fn stat_fields(line: &str) -> Option<Vec<&str>> {
    let rest = line.get(line.rfind(')')? + 1..)?;
    Some(rest.split_whitespace().collect())
}

/// (utime + stime) in seconds from a stat line.
fn cpu_seconds_of(line: &str) -> Option<f64> {
    let fields = stat_fields(line)?;
    // proc(5): utime is field 14, stime 15; index = field - 3.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) as f64 / ticks_per_second())
}

/// CPU seconds of one thread of this process; None when it is gone or unreadable.
pub fn thread_cpu_seconds(tid: i32) -> Option<f64> {
    if tid <= 0 {
        return None;
    }
    let line = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    cpu_seconds_of(&line)
}

/// The process' figures; fields that cannot be read stay 0.
pub fn process_stats() -> ProcessStats {
    let mut stats = ProcessStats::default();
    if let Ok(line) = std::fs::read_to_string("/proc/self/stat") {
        stats.cpu_seconds = cpu_seconds_of(&line).unwrap_or(0.0);
        if let Some(fields) = stat_fields(&line) {
            let field = |n: usize| fields.get(n - 3).and_then(|v| v.parse::<u64>().ok());
            stats.threads = field(20).unwrap_or(0);
            stats.virtual_bytes = field(23).unwrap_or(0);
            stats.resident_bytes = field(24).unwrap_or(0) * page_bytes();
            if let (Some(start_ticks), Some(boot)) = (field(22), boot_time_seconds()) {
                stats.start_time_seconds = boot + start_ticks as f64 / ticks_per_second();
            }
        }
    }
    stats.open_fds = std::fs::read_dir("/proc/self/fd")
        .map(|dir| dir.count() as u64)
        .unwrap_or(0);
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        stats.max_fds = limit.rlim_cur;
    }
    stats
}

/// The boot time (`btime` of /proc/stat), seconds since the epoch.
fn boot_time_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse::<f64>().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        let line = "4242 (shard (0) x) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 7 0 1234 5000 300";
        let fields = stat_fields(line).unwrap();
        assert_eq!(fields[0], "S");
        let expected = 300.0 / ticks_per_second();
        assert!((cpu_seconds_of(line).unwrap() - expected).abs() < 1e-9);
        assert_eq!(cpu_seconds_of("garbage"), None);
    }

    #[test]
    fn this_process_is_seen() {
        let stats = process_stats();
        assert!(stats.resident_bytes > 0);
        assert!(stats.open_fds > 0);
        assert!(stats.threads >= 1);
        assert!(stats.start_time_seconds > 1e9);
        assert!(thread_cpu_seconds(super::super::current_tid()).is_some());
        assert_eq!(thread_cpu_seconds(0), None);
    }
}
