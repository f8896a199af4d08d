//! A fault-injecting FUSE mount for log-dir failure tests: a passthrough
//! of a fresh backing dir (`tests/support/faultfs.c`, built here with gcc
//! against libfuse3; tests/run.sh installs libfuse3-dev and fuse3) whose
//! fsyncs fail with EIO while a control file exists. Needs root and
//! /dev/fuse, as CI has.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `tests/support/faultfs.c`, built once per test process (the tests of a
/// file start in parallel and share one build) and kept per target dir.
fn faultfs_binary() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(build_faultfs).clone()
}

fn build_faultfs() -> PathBuf {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("faultfs");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/faultfs.c");
    let fresh = |o: &Path| {
        let (Ok(a), Ok(b)) = (std::fs::metadata(o), std::fs::metadata(&src)) else {
            return false;
        };
        a.modified().unwrap() >= b.modified().unwrap()
    };
    if fresh(&out) {
        return out;
    }
    let flags = Command::new("pkg-config")
        .args(["--cflags", "--libs", "fuse3"])
        .output()
        .expect("pkg-config (install: apt-get install pkg-config libfuse3-dev fuse3)");
    assert!(
        flags.status.success(),
        "pkg-config finds no fuse3: apt-get install libfuse3-dev fuse3 (tests/run.sh does)"
    );
    let flags = String::from_utf8(flags.stdout).unwrap();
    // Built under a temporary name and renamed, so that another test
    // process never runs a half-written binary.
    let tmp = out.with_extension(format!("tmp{}", std::process::id()));
    let built = Command::new("gcc")
        .args(["-O2", "-Wall", "-o"])
        .arg(&tmp)
        .arg(&src)
        .args(flags.split_whitespace())
        .status()
        .expect("gcc (install: apt-get install gcc)");
    assert!(built.success(), "building {}", src.display());
    std::fs::rename(&tmp, &out).unwrap();
    out
}

/// A faultfs mount of a fresh backing dir, unmounted on drop.
pub struct FaultFs {
    backing: tempfile::TempDir,
    mount: tempfile::TempDir,
    daemon: Child,
}

impl FaultFs {
    pub fn mount() -> FaultFs {
        // SAFETY: geteuid has no preconditions.
        assert_eq!(
            unsafe { libc::geteuid() },
            0,
            "this test mounts a FUSE file system and needs root (CI runs as root)"
        );
        assert!(
            Path::new("/dev/fuse").exists(),
            "this test needs /dev/fuse (modprobe fuse)"
        );
        let bin = faultfs_binary();
        let backing = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let mount = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let daemon = Command::new(&bin)
            .arg(backing.path())
            .arg(mount.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start faultfs");
        let fs = FaultFs {
            backing,
            mount,
            daemon,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !fs.is_mounted() {
            assert!(Instant::now() < deadline, "faultfs did not mount in 30 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        fs
    }

    pub fn is_mounted(&self) -> bool {
        let want = self.mount.path().to_string_lossy().into_owned();
        std::fs::read_to_string("/proc/self/mountinfo")
            .unwrap_or_default()
            .lines()
            .any(|l| l.split(' ').nth(4) == Some(want.as_str()))
    }

    /// The log dir: a folder inside the mount.
    pub fn log_dir(&self) -> PathBuf {
        let d = self.mount.path().join("data");
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Every fsync on the mount fails with EIO while this is on.
    pub fn fail_fsync(&self, on: bool) {
        self.fail("fsync", on);
    }

    /// Every write on the mount fails with EIO (and is not applied) while
    /// this is on.
    pub fn fail_write(&self, on: bool) {
        self.fail("write", on);
    }

    fn fail(&self, op: &str, on: bool) {
        let control = self.backing.path().join(format!(".faultfs-fail-{op}"));
        if on {
            std::fs::write(control, "EIO\n").unwrap();
        } else {
            let _ = std::fs::remove_file(control);
        }
    }
}

impl Drop for FaultFs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.mount.path())
            .status();
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
    }
}
