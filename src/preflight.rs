//! Checks at start that the host can run glommio, with a message that says how to fix it.

/// glommio refuses to start below this RLIMIT_MEMLOCK.
const MEMLOCK_BYTES_MIN: u64 = 512 * 1024;

/// Checks io_uring and RLIMIT_MEMLOCK.
pub fn check() -> Result<(), String> {
    check_memlock()?;
    check_io_uring()
}

fn check_memlock() -> Result<(), String> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut limit) } != 0 {
        return Err(format!(
            "cannot read RLIMIT_MEMLOCK: {}",
            std::io::Error::last_os_error()
        ));
    }
    if limit.rlim_cur >= MEMLOCK_BYTES_MIN {
        return Ok(());
    }
    if limit.rlim_max >= MEMLOCK_BYTES_MIN {
        // The soft limit may be raised up to the hard one without privileges.
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit reads the struct we own.
        if unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &raised) } == 0 {
            return Ok(());
        }
    }
    Err(format!(
        "RLIMIT_MEMLOCK is {} KiB; io_uring (glommio) needs at least {} KiB of lockable memory.\n\
         Fix: `ulimit -l 65536` in the shell that starts sluice, LimitMEMLOCK=infinity in its systemd unit,\n\
         or `--ulimit memlock=-1` for a container (see deploy/).",
        limit.rlim_cur / 1024,
        MEMLOCK_BYTES_MIN / 1024
    ))
}

fn check_io_uring() -> Result<(), String> {
    // struct io_uring_params is 120 bytes; zeroed means "no flags".
    let mut params = [0u8; 120];
    // SAFETY: io_uring_setup reads and writes the params buffer we own; the fd is closed below.
    let fd = unsafe { libc::syscall(libc::SYS_io_uring_setup, 4u32, params.as_mut_ptr()) };
    if fd >= 0 {
        // SAFETY: fd is a descriptor we just opened.
        unsafe { libc::close(fd as i32) };
        return Ok(());
    }
    let error = std::io::Error::last_os_error();
    let fix = match error.raw_os_error() {
        Some(libc::ENOSYS) => "this kernel has no io_uring: Sluice needs Linux 5.8 or newer",
        Some(libc::EPERM) | Some(libc::EACCES) => {
            "io_uring is disabled: set `sysctl kernel.io_uring_disabled=0`, or allow io_uring_setup in the \
             container's seccomp profile"
        }
        Some(libc::ENOMEM) => "not enough lockable memory for a ring: raise RLIMIT_MEMLOCK (`ulimit -l 65536`)",
        _ => "io_uring is not usable on this host",
    };
    Err(format!("io_uring_setup failed ({error}): {fix}"))
}
