//! Which core each executor runs on.
//!
//! Data shard `i` is pinned to the `i mod n`-th allowed CPU, so more shards than cores is
//! allowed (tests use it). The controller gets a CPU of its own when
//! `sluice.controller.dedicated.core` is set and one is left over; otherwise it shares the first
//! shard's CPU, so that on a small host every core serves data.

/// The placement of every executor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// CPU of each data shard, by shard id.
    pub shard_cpus: Vec<usize>,
    /// CPU of the controller executor.
    pub controller_cpu: usize,
    /// Whether the controller shares its CPU with a shard.
    pub controller_shares_cpu: bool,
}

impl Topology {
    /// Lays out `shards` data shards (0 = one per CPU) over the allowed `cpus`.
    pub fn plan(cpus: &[usize], shards: usize, controller_dedicated: bool) -> Topology {
        assert!(!cpus.is_empty(), "at least one CPU is allowed");
        let shard_count = if shards == 0 { cpus.len() } else { shards };
        let shard_cpus: Vec<usize> = (0..shard_count).map(|i| cpus[i % cpus.len()]).collect();
        let spare = (shard_count < cpus.len()).then(|| cpus[shard_count]);
        let (controller_cpu, controller_shares_cpu) = match (controller_dedicated, spare) {
            (true, Some(cpu)) => (cpu, false),
            _ => (shard_cpus[0], true),
        };
        Topology {
            shard_cpus,
            controller_cpu,
            controller_shares_cpu,
        }
    }

    /// Whether two or more shards share a CPU (then spinning before parking only steals time).
    pub fn oversubscribed(&self) -> bool {
        let mut cpus = self.shard_cpus.clone();
        cpus.sort_unstable();
        cpus.dedup();
        cpus.len() < self.shard_cpus.len()
    }
}

/// The CPUs this process may run on.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: sched_getaffinity fills the cpu_set_t we own.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let ok =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) }
            == 0;
    let cpus: Vec<usize> = if ok {
        // SAFETY: CPU_ISSET reads the set we own, for indexes within its size.
        (0..libc::CPU_SETSIZE as usize)
            .filter(|i| unsafe { libc::CPU_ISSET(*i, &set) })
            .collect()
    } else {
        Vec::new()
    };
    if cpus.is_empty() {
        let n = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        return (0..n).collect();
    }
    cpus
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_cores_put_both_to_data_and_share_the_controller() {
        let t = Topology::plan(&[0, 1], 0, false);
        assert_eq!(t.shard_cpus, vec![0, 1]);
        assert_eq!(t.controller_cpu, 0);
        assert!(t.controller_shares_cpu);
        assert!(!t.oversubscribed());
    }

    #[test]
    fn dedicated_controller_needs_a_spare_core() {
        let t = Topology::plan(&[0, 1, 2, 3], 3, true);
        assert_eq!(t.controller_cpu, 3);
        assert!(!t.controller_shares_cpu);
        let t = Topology::plan(&[0, 1], 0, true);
        assert!(t.controller_shares_cpu);
    }

    #[test]
    fn more_shards_than_cores_wrap_around() {
        let t = Topology::plan(&[4, 5], 4, false);
        assert_eq!(t.shard_cpus, vec![4, 5, 4, 5]);
        assert!(t.oversubscribed());
    }
}
