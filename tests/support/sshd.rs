//! A real OpenSSH server on 127.0.0.1 for tests: its own free port, a throwaway host key and user
//! key (`userkey`, authorised), its log at level INFO. Shared by the CLI tests and the app's
//! end-to-end test through `#[path]`.
#![allow(dead_code)] // each test crate uses part of it

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where Debian's openssh-server puts the daemon.
pub const SSHD: &str = "/usr/sbin/sshd";

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

pub fn keygen(path: &Path) {
    let st = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "headroom-test", "-f"])
        .arg(path)
        .status()
        .expect("ssh-keygen (openssh-client)");
    assert!(st.success());
}

pub fn whoami() -> String {
    let out = Command::new("id").arg("-un").output().expect("id -un");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A real sshd on 127.0.0.1, stopped when dropped.
pub struct Sshd {
    pub dir: tempfile::TempDir,
    pub port: u16,
    child: Option<Child>,
    /// Serves users from their own `~/.ssh/authorized_keys` and takes passwords (a fresh
    /// rental's first login), instead of the test key alone.
    passwords: bool,
}

impl Sshd {
    pub fn start() -> Self {
        Self::start_with(false)
    }

    /// An sshd as a freshly rented machine has one: each user's own `~/.ssh/authorized_keys`,
    /// passwords accepted.
    pub fn start_with_passwords() -> Self {
        Self::start_with(true)
    }

    fn start_with(passwords: bool) -> Self {
        assert!(
            Path::new(SSHD).exists(),
            "{SSHD} is missing: install openssh-server (scripts/bootstrap.sh does)"
        );
        // sshd wants its privilege-separation folder; only root can make it (bootstrap does).
        let _ = std::fs::create_dir_all("/run/sshd");
        let dir = tempfile::tempdir().expect("sshd dir");
        keygen(&dir.path().join("hostkey"));
        keygen(&dir.path().join("userkey"));
        std::fs::copy(
            dir.path().join("userkey.pub"),
            dir.path().join("authorized_keys"),
        )
        .expect("authorized_keys");
        let mut s = Self {
            dir,
            port: free_port(),
            child: None,
            passwords,
        };
        s.launch();
        s
    }

    fn launch(&mut self) {
        let d = self.dir.path();
        let (keys, passwords) = if self.passwords {
            (".ssh/authorized_keys".to_owned(), "yes")
        } else {
            (d.join("authorized_keys").display().to_string(), "no")
        };
        let config = format!(
            "Port {}\nListenAddress 127.0.0.1\nHostKey {}\nPidFile {}\nAuthorizedKeysFile {keys}\n\
             PasswordAuthentication {passwords}\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n\
             PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\nLogLevel INFO\n",
            self.port,
            d.join("hostkey").display(),
            d.join("sshd.pid").display(),
        );
        std::fs::write(d.join("sshd_config"), config).expect("sshd_config");
        let child = Command::new(SSHD)
            .arg("-D")
            .arg("-E")
            .arg(d.join("sshd.log"))
            .arg("-f")
            .arg(d.join("sshd_config"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start sshd");
        self.child = Some(child);
        let until = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < until,
                "sshd did not listen on {}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Restarts on the same port with a new host key.
    pub fn rekey(&mut self) {
        self.stop();
        let key = self.dir.path().join("hostkey");
        std::fs::remove_file(&key).expect("old host key");
        let _ = std::fs::remove_file(self.dir.path().join("hostkey.pub"));
        keygen(&key);
        self.launch();
    }

    /// Starts again on the same port with the same host key (after [`Self::stop`]: a host
    /// that was away comes back).
    pub fn restart(&mut self) {
        self.stop();
        self.launch();
    }

    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Logins the server accepted so far (its log at level INFO).
    pub fn logins(&self) -> usize {
        std::fs::read_to_string(self.dir.path().join("sshd.log"))
            .unwrap_or_default()
            .matches("Accepted publickey")
            .count()
    }

    /// The listening daemon's pid.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    pub fn userkey(&self) -> PathBuf {
        self.dir.path().join("userkey")
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A user made for one test with an empty home and a password: a freshly rented machine's login,
/// with no Headroom and no project. Removed, home and all, when dropped. Needs root (useradd);
/// where it is refused the test is skipped, unless HEADROOM_REQUIRE_MOUNT=1 (set by .ci/run as
/// root) makes that a failure.
pub struct FreshUser {
    pub name: String,
    pub password: String,
    pub home: PathBuf,
}

impl FreshUser {
    pub fn create() -> Option<Self> {
        let name = format!("hr-fresh-{}", std::process::id() % 100_000);
        let _ = Command::new("userdel")
            .args(["-r", &name])
            .stderr(Stdio::null())
            .status();
        let made = Command::new("useradd")
            .args(["-m", "-s", "/bin/sh", &name])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !made {
            assert!(
                std::env::var("HEADROOM_REQUIRE_MOUNT").as_deref() != Ok("1"),
                "useradd is refused here but HEADROOM_REQUIRE_MOUNT=1 asks for this test"
            );
            eprintln!("skipped: cannot make a fresh user here (needs root)");
            return None;
        }
        let password = format!("pw-{}-{}", std::process::id(), name.len() * 7919);
        let mut chpasswd = Command::new("chpasswd")
            .stdin(Stdio::piped())
            .spawn()
            .expect("chpasswd");
        use std::io::Write;
        chpasswd
            .stdin
            .take()
            .expect("stdin")
            .write_all(format!("{name}:{password}\n").as_bytes())
            .expect("password");
        assert!(chpasswd.wait().expect("chpasswd").success());
        let home = PathBuf::from(format!("/home/{name}"));
        Some(Self {
            name,
            password,
            home,
        })
    }

    /// Runs `script` as this user (for the test's own set-up and checks).
    pub fn sh(&self, script: &str) -> std::process::Output {
        Command::new("su")
            .args(["-s", "/bin/sh", "-c", script, &self.name])
            .output()
            .expect("su")
    }
}

/// Gives the venv at `venv` (one a migration made on a fresh host) the torch of `python` through
/// a `.pth` naming that torch's site-packages: the same Python minor version, and no 4.7 GB
/// download into a throwaway home.
pub fn lend_torch(venv: &Path, python: &Path) {
    let out = Command::new(python)
        .args([
            "-c",
            "import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))",
        ])
        .output()
        .expect("site-packages");
    let site = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(
        !site.is_empty(),
        "{} has no torch: {}",
        python.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let lib = std::fs::read_dir(venv.join("lib"))
        .expect("the venv's lib")
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("python3"))
        })
        .expect("python3.X");
    std::fs::write(
        lib.join("site-packages/headroom-test-torch.pth"),
        format!("{site}\n"),
    )
    .expect("pth");
}

impl Drop for FreshUser {
    fn drop(&mut self) {
        let _ = Command::new("pkill").args(["-u", &self.name]).status();
        let _ = Command::new("userdel")
            .args(["-r", &self.name])
            .stderr(Stdio::null())
            .status();
    }
}
