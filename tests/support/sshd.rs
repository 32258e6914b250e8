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
}

impl Sshd {
    pub fn start() -> Self {
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
        };
        s.launch();
        s
    }

    fn launch(&mut self) {
        let d = self.dir.path();
        let config = format!(
            "Port {}\nListenAddress 127.0.0.1\nHostKey {}\nPidFile {}\nAuthorizedKeysFile {}\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n\
             PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\nLogLevel INFO\n",
            self.port,
            d.join("hostkey").display(),
            d.join("sshd.pid").display(),
            d.join("authorized_keys").display(),
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
