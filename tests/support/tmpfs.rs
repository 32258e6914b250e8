//! A real tmpfs for the tests of a full or read-only disk, mounted on a fresh folder and
//! unmounted on drop. Shared by the CLI's integration tests and the app's end-to-end test through
//! `#[path]`. Needs mount(2) (root, or CAP_SYS_ADMIN); where it is refused the test is skipped,
//! unless HEADROOM_REQUIRE_MOUNT=1 (set by .ci/run as root) makes that a failure.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// A mounted tmpfs; `at` is its root.
pub struct Tmpfs {
    _dir: tempfile::TempDir,
    pub at: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs with mount(8)'s `options` (`size=2m`, `size=8m,ro`); `None` (and a line
    /// saying the test was skipped) where mount(2) is refused.
    pub fn mount(options: &str) -> Option<Self> {
        let dir = tempfile::tempdir().expect("temp dir");
        let at = dir.path().join("fs");
        std::fs::create_dir(&at).expect("mount point");
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(&at)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            assert!(
                std::env::var("HEADROOM_REQUIRE_MOUNT").as_deref() != Ok("1"),
                "mount(2) is refused here but HEADROOM_REQUIRE_MOUNT=1 asks for this test"
            );
            eprintln!("skipped: cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN)");
            return None;
        }
        Some(Self { _dir: dir, at })
    }

    /// Remounts it with `mode` (`ro`, `rw`).
    #[allow(dead_code)] // not every test binary that includes this file remounts
    pub fn remount(&self, mode: &str) {
        let st = Command::new("mount")
            .args(["-o", &format!("remount,{mode}")])
            .arg(&self.at)
            .status()
            .expect("mount");
        assert!(st.success(), "remount {mode}");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.at).status();
    }
}
