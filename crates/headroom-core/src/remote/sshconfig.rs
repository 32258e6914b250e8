//! The managed OpenSSH config: `config.d/headroom` in the user's SSH folder holds one `Host`
//! block per profile, and the user's `config` gets one `Include` line at its top (added once,
//! after a backup). The user's own text is never rewritten: the only change to it is that line.

use std::path::{Path, PathBuf};

use super::HostProfile;
use crate::paths::{io_err as io, set_mode};
pub use crate::paths::{through_links, write_atomically};
use crate::CoreError;

const HEADER: &str =
    "# Managed by Headroom (`headroom remote add/rm`): each Host below is a profile.\n\
# Edits here are overwritten; your own blocks belong in ~/.ssh/config.\n";

/// The managed file in `ssh_dir`.
pub fn managed_path(ssh_dir: &Path) -> PathBuf {
    ssh_dir.join("config.d").join("headroom")
}

/// The line added to the user's config (an absolute path, so it resolves the same whichever
/// config file `ssh -F` reads).
pub fn include_line(ssh_dir: &Path) -> String {
    format!("Include \"{}\"", managed_path(ssh_dir).display())
}

/// The managed file's text for `profiles` (already validated: no field can break a line).
pub fn render<'a>(profiles: impl IntoIterator<Item = &'a HostProfile>) -> String {
    let mut out = String::from(HEADER);
    for p in profiles {
        out.push_str(&format!("\nHost {}\n    HostName {}\n", p.name, p.host));
        if let Some(port) = p.port {
            out.push_str(&format!("    Port {port}\n"));
        }
        if let Some(u) = &p.user {
            out.push_str(&format!("    User {u}\n"));
        }
        if let Some(i) = &p.identity {
            out.push_str(&format!(
                "    IdentityFile \"{i}\"\n    IdentitiesOnly yes\n"
            ));
        }
        if let Some(j) = &p.jump {
            out.push_str(&format!("    ProxyJump {j}\n"));
        }
    }
    out
}

/// What [`sync`] changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncReport {
    pub managed: PathBuf,
    /// The Include line was added to the user's config now.
    pub include_added: bool,
    /// Where the user's config was copied before the line was added.
    pub backup: Option<PathBuf>,
}

/// Adds the Include line at the top of `ssh_dir/config` unless it is there already; the rest of
/// the file stays byte for byte. A copy of the old file goes to `config.headroom-backup` first.
pub fn ensure_include(ssh_dir: &Path) -> Result<(bool, Option<PathBuf>), CoreError> {
    let config = ssh_dir.join("config");
    let line = include_line(ssh_dir);
    let old = match std::fs::read(&config) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io("cannot read", &config)(e)),
    };
    if let Some(old) = &old {
        let text = String::from_utf8_lossy(old);
        if text.lines().any(|l| l.trim() == line) {
            return Ok((false, None));
        }
    }
    let mut new = format!("{line}\n").into_bytes();
    let mut backup = None;
    if let Some(old) = &old {
        let b = ssh_dir.join("config.headroom-backup");
        write_atomically(&b, old, 0o600)?;
        backup = Some(b);
        new.extend_from_slice(old);
    }
    write_atomically(&config, &new, 0o600)?;
    Ok((true, backup))
}

/// Writes the managed file for `profiles` and makes sure the user's config includes it.
pub fn sync<'a>(
    ssh_dir: &Path,
    profiles: impl IntoIterator<Item = &'a HostProfile>,
) -> Result<SyncReport, CoreError> {
    let managed = managed_path(ssh_dir);
    if !ssh_dir.exists() {
        std::fs::create_dir_all(ssh_dir).map_err(io("cannot create folder", ssh_dir))?;
        set_mode(ssh_dir, 0o700)?;
    }
    write_atomically(&managed, render(profiles).as_bytes(), 0o600)?;
    let (include_added, backup) = ensure_include(ssh_dir)?;
    Ok(SyncReport {
        managed,
        include_added,
        backup,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(name: &str) -> HostProfile {
        HostProfile {
            port: Some(2222),
            user: Some("ada".into()),
            identity: Some("/Users/ada/.ssh/id ed25519".into()),
            jump: Some("ops@bastion.example.com:22".into()),
            ..HostProfile::new(name, "203.0.113.7")
        }
    }

    fn files(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .expect("dir")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn the_users_config_keeps_every_byte_and_gains_one_line_once() {
        let dir = tempfile::tempdir().expect("tmp");
        let ssh = dir.path().join(".ssh");
        std::fs::create_dir(&ssh).expect("mkdir");
        // The user's own config: comments, a wildcard block, odd spacing, CRLF, no final newline.
        let mine = b"# my config\r\nHost *\r\n  ServerAliveInterval 60\n\nHost work\n\tHostName 10.0.0.2\n   User  me".to_vec();
        std::fs::write(ssh.join("config"), &mine).expect("write");
        let r = sync(&ssh, [&profile("m4")]).expect("sync");
        assert!(r.include_added);
        let now = std::fs::read(ssh.join("config")).expect("read");
        let line = format!("{}\n", include_line(&ssh));
        assert_eq!(
            &now[..line.len()],
            line.as_bytes(),
            "the Include line comes first"
        );
        assert_eq!(
            &now[line.len()..],
            &mine[..],
            "the rest is the user's, byte for byte"
        );
        assert_eq!(
            std::fs::read(r.backup.expect("backup")).expect("backup"),
            mine
        );
        let managed = std::fs::read_to_string(managed_path(&ssh)).expect("managed");
        assert!(
            managed.contains("Host m4\n    HostName 203.0.113.7\n    Port 2222\n    User ada\n"),
            "{managed}"
        );
        assert!(
            managed.contains("IdentityFile \"/Users/ada/.ssh/id ed25519\""),
            "{managed}"
        );
        assert!(
            managed.contains("ProxyJump ops@bastion.example.com:22"),
            "{managed}"
        );

        // Again, and with a second profile: the user's file does not change any more.
        let before = std::fs::metadata(ssh.join("config"))
            .expect("meta")
            .modified()
            .expect("mtime");
        let r = sync(&ssh, [&profile("m4"), &profile("studio")]).expect("sync again");
        assert!(!r.include_added);
        assert_eq!(std::fs::read(ssh.join("config")).expect("read"), now);
        let after = std::fs::metadata(ssh.join("config"))
            .expect("meta")
            .modified()
            .expect("mtime");
        assert_eq!(before, after, "not rewritten");
        let managed = std::fs::read_to_string(managed_path(&ssh)).expect("managed");
        assert_eq!(managed.matches("\nHost ").count(), 2);
        // Writing the same profiles leaves the managed file alone (same mtime), and no temp
        // file is left anywhere.
        let m1 = std::fs::metadata(managed_path(&ssh))
            .expect("m")
            .modified()
            .expect("t");
        sync(&ssh, [&profile("m4"), &profile("studio")]).expect("idempotent");
        let m2 = std::fs::metadata(managed_path(&ssh))
            .expect("m")
            .modified()
            .expect("t");
        assert_eq!(m1, m2);
        assert_eq!(
            files(&ssh),
            ["config", "config.d", "config.headroom-backup"]
        );
        assert_eq!(files(&ssh.join("config.d")), ["headroom"]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(managed_path(&ssh))
                .expect("m")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn without_a_config_one_is_made_with_only_the_include() {
        let dir = tempfile::tempdir().expect("tmp");
        let ssh = dir.path().join("fresh-ssh");
        let r = sync(&ssh, std::iter::empty()).expect("sync");
        assert!(r.include_added && r.backup.is_none());
        assert_eq!(
            std::fs::read_to_string(ssh.join("config")).expect("config"),
            format!("{}\n", include_line(&ssh))
        );
        assert_eq!(
            std::fs::read_to_string(managed_path(&ssh)).expect("managed"),
            HEADER
        );
        // Everything made under a fresh ~/.ssh is private: folders 0700, files 0600.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).expect("made").permissions().mode() & 0o777;
            assert_eq!(mode(&ssh), 0o700);
            assert_eq!(mode(&ssh.join("config.d")), 0o700);
            assert_eq!(mode(&ssh.join("config")), 0o600);
            assert_eq!(mode(&managed_path(&ssh)), 0o600);
        }
    }
}
