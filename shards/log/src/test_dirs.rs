//! Where a crate's unit tests keep their files: one directory per test process under the
//! system's temporary directory, removed when the process exits, so that repeated runs leave
//! nothing behind (the tests that delete their logs still left the directories above them, and a
//! few tests keep theirs to the end). Built for this crate's tests and, with the `test-support`
//! feature, for other crates' (`sluice-replica`'s dev-dependency); never in the broker.

use std::path::PathBuf;
use std::sync::Once;

/// This process's directory, `sluice-unit-tests-PID`: each test module keeps its tests' files in
/// a directory of its own inside it. The first call registers its removal at exit.
pub fn root() -> PathBuf {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        // SAFETY: `remove_root` is an `extern "C"` function without arguments, as `atexit`
        // takes; it runs once, when the test harness returns from `main` or calls `exit`.
        let registered = unsafe { libc::atexit(remove_root) };
        assert_eq!(
            registered, 0,
            "atexit refused the test directories' removal"
        );
    });
    root_of(std::process::id())
}

/// The directory of the test process `pid`.
fn root_of(pid: u32) -> PathBuf {
    std::env::temp_dir().join(format!("sluice-unit-tests-{pid}"))
}

extern "C" fn remove_root() {
    // Nothing to report to at exit; a failure leaves the directory, as before.
    let _ = std::fs::remove_dir_all(root_of(std::process::id()));
}

#[cfg(test)]
mod tests {
    use std::process::{Command, Stdio};

    /// Set in the child process the test below starts.
    const CHILD: &str = "SLUICE_TEST_DIRS_CHILD";

    #[test]
    fn a_test_process_leaves_no_directory_behind() {
        if std::env::var_os(CHILD).is_some() {
            // The child: a file a few directories down, as a test's log would leave it.
            let dir = super::root().join("kind").join("name-0");
            std::fs::create_dir_all(&dir).expect("create a test directory");
            std::fs::write(dir.join("00000000000000000000.log"), b"kept").expect("write a file");
            println!("ROOT {}", super::root().display());
            return;
        }
        let child = Command::new(std::env::current_exe().expect("the test binary"))
            .args([
                "--exact",
                "test_dirs::tests::a_test_process_leaves_no_directory_behind",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the test binary");
        let root = super::root_of(child.id());
        let output = child.wait_with_output().expect("wait for the test binary");
        assert!(output.status.success(), "{output:?}");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            stdout.contains(&format!("ROOT {}", root.display())),
            "the child wrote elsewhere: {stdout}"
        );
        assert!(
            !root.exists(),
            "{} is still there after its process exited",
            root.display()
        );
    }
}
