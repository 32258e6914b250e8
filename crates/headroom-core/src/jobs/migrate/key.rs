//! Step 2, a key that opens the host: made if missing, installed the way `ssh-copy-id` does
//! (a password read once, never stored).

use super::*;

pub(super) fn key_step(ctx: &mut Context<'_>) -> Outcome {
    let p = ctx.profile;
    let login = |t| remote(p, "true", None, t + Duration::from_secs(5), t);
    let f = match login(ctx.timeout) {
        Ok(f) => f,
        Err(e) => return fail(e.to_string(), "install OpenSSH's client"),
    };
    if f.success() {
        return pass(format!("the key opens {} (a batch-mode login)", p.name));
    }
    let why = check::classify(p, &f.stderr, f.timed_out(), ctx.timeout);
    if why.kind != check::FailureKind::Auth {
        return fail(why.message, why.fix);
    }
    let Some(identity) = p.identity.as_deref() else {
        return fail(
            format!("{} refused every key offered, and the profile names no key file to install", p.name),
            format!("give the profile a key: `headroom remote add {} … --identity ~/.ssh/id_ed25519 --replace` (Headroom makes the key when the file does not exist)", p.name),
        );
    };
    let Some(password) = ctx.password else {
        return fail(
            format!("{} refused the key {identity}", p.name),
            format!("install it with your password, typed once and never stored: `headroom remote migrate {} --project {} --step key --password-stdin`, or by hand: `ssh-copy-id -i {identity}.pub {}`", p.name, ctx.project.name, p.target()),
        );
    };
    if let Err(e) = ensure_key(Path::new(identity)) {
        return fail(e.to_string(), "check that the key's folder is writable");
    }
    match install_key(p, Path::new(identity), password, ctx.timeout) {
        Ok(()) => {}
        Err(o) => return o,
    }
    match login(ctx.timeout) {
        Ok(f) if f.success() => pass(format!(
            "installed {identity}.pub in {}'s ~/.ssh/authorized_keys with your password (not stored); a batch-mode login now opens it",
            p.name
        )),
        Ok(f) => fail(
            format!("the key was installed but {} still refuses it: {}", p.name, f.stderr.trim()),
            "check the remote's ~/.ssh permissions (700) and authorized_keys (600), and whether its sshd allows public keys",
        ),
        Err(e) => fail(e.to_string(), "install OpenSSH's client"),
    }
}

/// Makes an ed25519 key at `path` when there is none (no passphrase, as the profile uses it in
/// batch mode).
pub(super) fn ensure_key(path: &Path) -> Result<(), CoreError> {
    if path.exists() && path.with_extension(pub_ext(path)).exists() {
        return Ok(());
    }
    if let Some(d) = path.parent() {
        crate::paths::ensure_dir(d)?;
    }
    let f = crate::child::run_within(
        Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C", "headroom", "-f"])
            .arg(path),
        Duration::from_secs(20),
    )
    .map_err(|e| spawn_err("ssh-keygen", &e))?;
    if f.success() {
        Ok(())
    } else {
        Err(CoreError::InvalidInput(format!(
            "ssh-keygen could not make {}: {}",
            path.display(),
            f.stderr.trim()
        )))
    }
}

pub(super) fn pub_ext(path: &Path) -> String {
    match path.extension() {
        Some(e) => format!("{}.pub", e.to_string_lossy()),
        None => "pub".into(),
    }
}

/// Appends the public key of `identity` to the remote's `authorized_keys` (once), logging in with
/// `password` through an askpass helper that reads it from a FIFO in a private folder: the
/// password is never written to a file, an argument or the environment.
pub(super) fn install_key(
    p: &HostProfile,
    identity: &Path,
    password: &str,
    timeout: Duration,
) -> Result<(), Outcome> {
    let public = std::fs::read(identity.with_extension(pub_ext(identity))).map_err(|e| {
        fail(
            format!("cannot read {}.pub: {e}", identity.display()),
            "make the key again (delete the private key file and run this step again)",
        )
    })?;
    let dir = tempdir().map_err(|e| fail(e, "check that the temp folder is writable"))?;
    let fifo = dir.join("pw");
    let askpass = dir.join("askpass");
    let made = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes())
        .ok()
        .is_some_and(|c| unsafe { libc::mkfifo(c.as_ptr(), 0o600) } == 0);
    let script = format!("#!/bin/sh\ncat {}\n", sh_quote(&fifo.display().to_string()));
    let wrote = made && std::fs::write(&askpass, script).is_ok() && set_mode(&askpass, 0o700);
    if !wrote {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(fail(
            "cannot make the private password channel",
            "check that the temp folder is writable",
        ));
    }
    // The writer blocks until the helper reads; it is unblocked below if ssh never asks.
    let secret = format!("{password}\n");
    let fifo_w = fifo.clone();
    let writer = std::thread::spawn(move || {
        if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&fifo_w) {
            let _ = f.write_all(secret.as_bytes());
        }
    });
    // The password login: no key, one prompt, answered by the helper.
    let words = match check::ssh_words(p, timeout, false) {
        Ok(w) => w,
        Err(e) => return Err(fail(e.to_string(), "set HEADROOM_SSH_DIR or HOME")),
    };
    let mut c = Command::new(&words[0]);
    c.args(&words[1..])
        .args([
            "-o",
            "PubkeyAuthentication=no",
            "-o",
            "PreferredAuthentications=password,keyboard-interactive",
            "-o",
            "NumberOfPasswordPrompts=1",
        ])
        .arg(&p.name)
        .arg("umask 077; mkdir -p ~/.ssh && touch ~/.ssh/authorized_keys && read -r k && { grep -qxF \"$k\" ~/.ssh/authorized_keys || printf '%s\\n' \"$k\" >> ~/.ssh/authorized_keys; }")
        .env("SSH_ASKPASS", &askpass)
        .env("SSH_ASKPASS_REQUIRE", "force");
    let f = run_fed(&mut c, Some(&public), timeout + Duration::from_secs(10));
    // Unblock the writer if the helper never ran, then forget everything.
    if !writer.is_finished() {
        let _ = std::fs::File::open(&fifo);
    }
    let _ = writer.join();
    let _ = std::fs::remove_dir_all(&dir);
    match f {
        Ok(f) if f.success() => Ok(()),
        Ok(f) => {
            let e = f.stderr.trim();
            if e.contains("Permission denied") {
                Err(fail(
                    format!("{} refused the password", p.name),
                    "type the password again (the rental's login password), or install the key by hand with `ssh-copy-id`",
                ))
            } else {
                let why = check::classify(p, e, f.timed_out(), timeout);
                Err(fail(why.message, why.fix))
            }
        }
        Err(e) => Err(fail(e.to_string(), "install OpenSSH's client")),
    }
}

pub(super) fn set_mode(path: &Path, mode: u32) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).is_ok()
}

/// A private (0700) temp folder.
pub(super) fn tempdir() -> Result<PathBuf, String> {
    let base = std::env::temp_dir();
    for i in 0..100u32 {
        let d = base.join(format!("headroom-askpass-{}-{i}", std::process::id()));
        if std::fs::create_dir(&d).is_ok() {
            if set_mode(&d, 0o700) {
                return Ok(d);
            }
            let _ = std::fs::remove_dir_all(&d);
        }
    }
    Err(format!(
        "cannot make a private folder in {}",
        base.display()
    ))
}
