//! Remote hosts: profiles (validated, stored in `hosts.toml` in Headroom's folder), the managed
//! OpenSSH config file with a `Host` block per profile (written atomically, included once from
//! the user's `~/.ssh/config`, never touching the user's own blocks), and `check` over the system
//! `ssh`. Everything reaches `ssh` as an argument vector; nothing is ever given to a local shell.

pub mod check;
pub mod rtt;
pub mod sshconfig;
pub mod vnc;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::CoreError;

/// Overrides the folder of the user's OpenSSH files (`~/.ssh`); tests point it at a temp dir.
pub const SSH_DIR_ENV: &str = "HEADROOM_SSH_DIR";

/// One remote host.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostProfile {
    pub name: String,
    pub host: String,
    #[serde(default)]
    pub port: Option<u16>,
    #[serde(default)]
    pub user: Option<String>,
    /// Private key file (the agent is used too); passwords are never stored.
    #[serde(default)]
    pub identity: Option<String>,
    /// A jump host, `[user@]host[:port]`, as OpenSSH's `ProxyJump`.
    #[serde(default)]
    pub jump: Option<String>,
    /// The VNC (Screen Sharing) port on the remote, reached through an SSH tunnel.
    #[serde(default = "default_vnc_port")]
    pub vnc_port: u16,
    /// Where `headroom` is on the remote, when it is not on the login shell's PATH.
    #[serde(default)]
    pub headroom_path: Option<String>,
    #[serde(default)]
    pub notes: String,
    /// Where checkpoints and data live (`host:port` or a URL): runs on this host record the
    /// round trip to it, measured from the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub artifact_store: Option<String>,
}

fn default_vnc_port() -> u16 {
    5900
}

fn bad(what: &str, value: &str, rule: &str) -> CoreError {
    CoreError::InvalidInput(format!("{what} {value:?} is refused: {rule}"))
}

fn is_host_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':')
}

/// A profile name: a letter or digit, then letters, digits, `.`, `_`, `-` (at most 64).
pub fn check_name(name: &str) -> Result<(), CoreError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(bad(
            "the name",
            name,
            "use letters, digits, '.', '_' and '-' (starting with a letter or digit, at most 64)",
        ))
    }
}

/// A host name or an IP address (IPv6 with colons), never starting with `-`.
pub fn check_host(host: &str) -> Result<(), CoreError> {
    let ok = !host.is_empty()
        && host.len() <= 253
        && !host.starts_with('-')
        && host.chars().all(is_host_char);
    if ok {
        Ok(())
    } else {
        Err(bad(
            "the host",
            host,
            "a host name or an IP address: letters, digits, '.', '-', '_' and ':' only",
        ))
    }
}

/// A login name: letters, digits, `.`, `_`, `-`, not starting with `-`.
pub fn check_user(user: &str) -> Result<(), CoreError> {
    let ok = !user.is_empty()
        && user.len() <= 64
        && !user.starts_with('-')
        && user
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(bad(
            "the user",
            user,
            "letters, digits, '.', '_' and '-' only, not starting with '-'",
        ))
    }
}

/// `[user@]host[:port]`.
pub fn check_jump(jump: &str) -> Result<(), CoreError> {
    let (user, rest) = match jump.split_once('@') {
        Some((u, r)) => (Some(u), r),
        None => (None, jump),
    };
    if let Some(u) = user {
        check_user(u)?;
    }
    let host = match rest.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => {
            p.parse::<u16>()
                .map_err(|_| bad("the jump host's port", p, "a number from 1 to 65535"))?;
            h
        }
        _ => rest,
    };
    check_host(host)
}

/// A path on this machine or the remote: no control characters, no leading `-`.
pub fn check_path(what: &str, path: &str) -> Result<(), CoreError> {
    let ok = !path.is_empty()
        && !path.starts_with('-')
        && !path.chars().any(|c| c.is_control() || c == '"');
    if ok {
        Ok(())
    } else {
        Err(bad(
            what,
            path,
            "a file path without control characters or double quotes, not starting with '-'",
        ))
    }
}

impl HostProfile {
    /// A profile for `host` under `name` with every other field at its default (the login
    /// user, port 22, no jump, VNC on 5900); not yet validated.
    pub fn new(name: impl Into<String>, host: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            host: host.into(),
            port: None,
            user: None,
            identity: None,
            jump: None,
            vnc_port: default_vnc_port(),
            headroom_path: None,
            notes: String::new(),
            artifact_store: None,
        }
    }

    /// Checks every field; the first problem is the error.
    pub fn validate(&self) -> Result<(), CoreError> {
        check_name(&self.name)?;
        check_host(&self.host)?;
        if self.port == Some(0) {
            return Err(bad("the port", "0", "a number from 1 to 65535"));
        }
        if self.vnc_port == 0 {
            return Err(bad("the VNC port", "0", "a number from 1 to 65535"));
        }
        if let Some(u) = &self.user {
            check_user(u)?;
        }
        if let Some(j) = &self.jump {
            check_jump(j)?;
        }
        if let Some(i) = &self.identity {
            check_path("the identity file", i)?;
        }
        if let Some(p) = &self.headroom_path {
            check_path("the remote headroom path", p)?;
        }
        if let Some(a) = &self.artifact_store {
            rtt::parse_target(a)?;
        }
        if self.notes.chars().any(|c| c == '\n' || c == '\r') {
            return Err(bad("the notes", &self.notes, "one line"));
        }
        Ok(())
    }

    /// `user@host` (or `host`), for messages.
    pub fn target(&self) -> String {
        match &self.user {
            Some(u) => format!("{u}@{}", self.host),
            None => self.host.clone(),
        }
    }
}

/// The user's OpenSSH folder: `$HEADROOM_SSH_DIR`, else `~/.ssh`.
pub fn ssh_dir() -> Result<PathBuf, CoreError> {
    if let Some(d) = std::env::var_os(SSH_DIR_ENV).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(d));
    }
    dirs::home_dir()
        .map(|h| h.join(".ssh"))
        .ok_or_else(|| CoreError::InvalidInput("no home folder is known for this user".into()))
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostsFile {
    #[serde(default)]
    hosts: BTreeMap<String, HostProfile>,
}

/// The profiles, in `hosts.toml` in Headroom's folder.
#[derive(Debug)]
pub struct Hosts {
    path: PathBuf,
    hosts: BTreeMap<String, HostProfile>,
}

impl Hosts {
    /// `hosts.toml` in Headroom's folder.
    pub fn path() -> Result<PathBuf, CoreError> {
        Ok(crate::paths::data_dir()?.join("hosts.toml"))
    }

    /// Loads the profiles; none when the file does not exist.
    pub fn load() -> Result<Self, CoreError> {
        Self::load_from(&Self::path()?)
    }

    pub fn load_from(path: &Path) -> Result<Self, CoreError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(source) => {
                return Err(CoreError::Io {
                    what: "cannot read the host profiles",
                    path: path.display().to_string(),
                    source,
                })
            }
        };
        Self::parse(&text, path)
    }

    /// The profiles in `text` (the contents of the hosts file at `path`, named in errors), each
    /// validated.
    pub fn parse(text: &str, path: &Path) -> Result<Self, CoreError> {
        let file: HostsFile = toml::from_str(text).map_err(|e| {
            CoreError::InvalidInput(format!(
                "host profiles {} are malformed: {}; fix the file or remove the broken entry",
                path.display(),
                e.to_string().trim_end()
            ))
        })?;
        for (key, p) in &file.hosts {
            p.validate()?;
            if key != &p.name {
                return Err(CoreError::InvalidInput(format!(
                    "host profiles {}: entry {key:?} is named {:?}; make them the same",
                    path.display(),
                    p.name
                )));
            }
        }
        Ok(Self {
            path: path.to_owned(),
            hosts: file.hosts,
        })
    }

    pub fn list(&self) -> impl Iterator<Item = &HostProfile> {
        self.hosts.values()
    }

    pub fn get(&self, name: &str) -> Result<&HostProfile, CoreError> {
        self.hosts.get(name).ok_or_else(|| {
            CoreError::InvalidInput(format!(
                "no remote host named {name:?}; `headroom remote list` shows them, `headroom remote add` adds one"
            ))
        })
    }

    /// Adds (or, with `replace`, replaces) a validated profile.
    pub fn add(&mut self, p: HostProfile, replace: bool) -> Result<(), CoreError> {
        p.validate()?;
        if !replace && self.hosts.contains_key(&p.name) {
            return Err(CoreError::InvalidInput(format!(
                "a remote host named {:?} exists already; pick another name, or replace it (--replace; in the app, tick \"replace a host of the same name\")",
                p.name
            )));
        }
        self.hosts.insert(p.name.clone(), p);
        Ok(())
    }

    /// Removes a profile; `false` when there was none.
    pub fn remove(&mut self, name: &str) -> bool {
        self.hosts.remove(name).is_some()
    }

    /// Loads the profiles, lets `f` change them, then writes `hosts.toml`, the managed ssh file
    /// and the Include line of `ssh_dir/config`, all under one edit lock (another `remote add`
    /// from the CLI or the app waits). Both sides change or neither: when the ssh side cannot
    /// be written, `hosts.toml` and the managed file are put back as they were.
    pub fn edit<T>(
        ssh_dir: &Path,
        f: impl FnOnce(&mut Self) -> Result<T, CoreError>,
    ) -> Result<(T, sshconfig::SyncReport), CoreError> {
        Self::edit_at(&Self::path()?, ssh_dir, f)
    }

    /// [`Hosts::edit`] of the profiles at `path`.
    pub fn edit_at<T>(
        path: &Path,
        ssh_dir: &Path,
        f: impl FnOnce(&mut Self) -> Result<T, CoreError>,
    ) -> Result<(T, sshconfig::SyncReport), CoreError> {
        let _edits = crate::paths::lock_edits(path)?;
        let mut hosts = Self::load_from(path)?;
        let out = f(&mut hosts)?;
        let managed = sshconfig::managed_path(ssh_dir);
        let before = [
            (path.to_path_buf(), std::fs::read(path).ok()),
            (managed.clone(), std::fs::read(&managed).ok()),
        ];
        let result = hosts
            .save()
            .and_then(|()| sshconfig::sync(ssh_dir, hosts.list()));
        match result {
            Ok(report) => Ok((out, report)),
            Err(e) => {
                for (at, old) in &before {
                    let _ = match old {
                        Some(bytes) => sshconfig::write_atomically(at, bytes, 0o600),
                        None => std::fs::remove_file(at).or(Ok(())),
                    };
                }
                Err(e)
            }
        }
    }

    /// Writes the profiles atomically (a temp file renamed over the old one).
    pub fn save(&self) -> Result<(), CoreError> {
        let file = HostsFile {
            hosts: self.hosts.clone(),
        };
        let text = format!(
            "# Headroom's remote host profiles (`headroom remote add/rm` edit this file).\n{}",
            toml::to_string(&file).map_err(|e| CoreError::InvalidInput(e.to_string()))?
        );
        sshconfig::write_atomically(&self.path, text.as_bytes(), 0o600)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(name: &str, host: &str) -> HostProfile {
        HostProfile {
            port: Some(2222),
            user: Some("ada".into()),
            identity: Some("~/.ssh/id_ed25519".into()),
            ..HostProfile::new(name, host)
        }
    }

    #[test]
    fn shell_metacharacters_and_option_lookalikes_are_refused() {
        assert!(profile("rented-m4", "m4.example.com").validate().is_ok());
        assert!(profile("v6", "fe80::1").validate().is_ok());
        for host in [
            "host; rm -rf ~",
            "-oProxyCommand=evil",
            "a b",
            "h$(id)",
            "h`id`",
            "h|x",
            "",
        ] {
            let e = profile("x", host).validate().expect_err(host).to_string();
            assert!(e.contains("the host"), "{host}: {e}");
        }
        for name in ["has space", "-x", "a/b", "ünï", ""] {
            assert!(profile(name, "h").validate().is_err(), "{name}");
        }
        let mut p = profile("x", "h");
        p.user = Some("root;id".into());
        assert!(p.validate().is_err());
        p.user = Some("ada".into());
        p.jump = Some("bastion.example.com:22".into());
        assert!(p.validate().is_ok());
        p.jump = Some("ops@bastion:notaport".into());
        assert!(p.validate().is_err());
        p.jump = None;
        p.identity = Some("key\nProxyCommand evil".into());
        assert!(
            p.validate().is_err(),
            "a newline would inject into the ssh config"
        );
        p.identity = None;
        p.port = Some(0);
        assert!(p.validate().is_err());
    }

    #[test]
    fn profiles_round_trip_and_a_duplicate_is_refused() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("hosts.toml");
        let mut hosts = Hosts::load_from(&path).expect("none yet");
        hosts
            .add(profile("m4", "m4.example.com"), false)
            .expect("add");
        let e = hosts
            .add(profile("m4", "other"), false)
            .expect_err("dup")
            .to_string();
        assert!(e.contains("--replace"), "{e}");
        hosts.save().expect("save");
        let again = Hosts::load_from(&path).expect("load");
        assert_eq!(
            again.get("m4").expect("m4"),
            &profile("m4", "m4.example.com")
        );
        assert!(again.get("nope").is_err());
        std::fs::write(&path, "[hosts.x]\nname = \"x\"\nhost = \"a;b\"\n").expect("write");
        assert!(
            Hosts::load_from(&path).is_err(),
            "a hand-edited bad host is refused too"
        );
    }
}
