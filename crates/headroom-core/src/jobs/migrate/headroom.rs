//! Step 4, Headroom there: the portable bundle copied with its libtorch when the remote runs
//! the same OS and architecture, and its doctor run there.

use super::*;

/// Where Headroom goes on a remote it is copied to, relative to the login folder.
pub const REMOTE_HOME: &str = ".headroom";

/// This Headroom as files another machine of the same OS and architecture runs as they are: the
/// two binaries and the libtorch folder the worker's rpath names (`../lib/headroom` beside a
/// Linux bundle's binaries, `../Frameworks` in Headroom.app).
#[derive(Debug, Clone)]
pub struct Portable {
    pub headroom: PathBuf,
    pub worker: PathBuf,
    pub libs: PathBuf,
    /// Where the libraries go under [`REMOTE_HOME`], so the worker's rpath finds them there.
    pub libs_under: &'static str,
}

/// The portable form of the running Headroom, or why it has none (a development build links the
/// libtorch of the venv it was built with, which another machine lacks).
pub fn portable() -> Result<Portable, String> {
    let headroom = crate::jobs::worker_binary().map_err(|e| e.to_string())?;
    let worker = crate::jobs::torch_worker_beside(&headroom).map_err(|e| e.to_string())?;
    let dir = headroom.parent().unwrap_or_else(|| Path::new("."));
    let libs_under = if cfg!(target_os = "macos") {
        "Frameworks"
    } else {
        "lib/headroom"
    };
    let libs = dir.join("..").join(libs_under);
    if libs.is_dir() {
        Ok(Portable {
            headroom,
            worker,
            libs,
            libs_under,
        })
    } else {
        Err(format!(
            "this Headroom ({}) is a development build: its libtorch is the one it was built with, not a folder beside it ({} is missing)",
            headroom.display(),
            libs.display()
        ))
    }
}

/// `uname -s` / `uname -m` in Rust's names: `Linux`/`x86_64` → `linux`/`x86_64`, `Darwin`/`arm64`
/// → `macos`/`aarch64`.
pub fn rust_platform(os: &str, arch: &str) -> (String, String) {
    let os = match os.trim() {
        "Darwin" => "macos".to_owned(),
        o => o.to_lowercase(),
    };
    let arch = match arch.trim() {
        "arm64" => "aarch64".to_owned(),
        "amd64" => "x86_64".to_owned(),
        a => a.to_owned(),
    };
    (os, arch)
}

pub(super) fn headroom_step(ctx: &mut Context<'_>) -> Outcome {
    let p = ctx.profile;
    let version = |p: &HostProfile| {
        remote(
            p,
            &format!("{} --version", sh_quote(&check::remote_headroom(p))),
            None,
            ctx.timeout + Duration::from_secs(20),
            ctx.timeout,
        )
    };
    match version(p) {
        Ok(f) if f.success() => {
            return pass(format!(
                "{} answers on {}; its doctor: {}",
                f.stdout.trim(),
                p.name,
                doctor_lights(p, ctx.timeout)
            ));
        }
        Ok(_) => {}
        Err(e) => return fail(e.to_string(), "install OpenSSH's client"),
    }
    // Not there: copy this Headroom when the remote runs what it was built for.
    let (os, arch, remote_home) = match remote_platform(p, ctx.timeout) {
        Ok(x) => x,
        Err(o) => return o,
    };
    let here = (std::env::consts::OS, std::env::consts::ARCH);
    let install_there = format!(
        "install Headroom on {} for {os} {arch} (the .deb on Linux, Headroom.app on macOS, built by `bash scripts/bundle.sh` on such a machine), then name it: `headroom remote add {} … --headroom-path PATH --replace`",
        p.name, p.name
    );
    if (os.as_str(), arch.as_str()) != here {
        return fail(
            format!("Headroom does not answer on {}, which runs {os} {arch}; this machine runs {} {}, so its binaries cannot be copied there", p.name, here.0, here.1),
            install_there,
        );
    }
    let bundle = match portable() {
        Ok(b) => b,
        Err(why) => {
            return fail(
                format!("Headroom does not answer on {}; {why}", p.name),
                format!("run this step from an installed Headroom (the .deb or Headroom.app, which carry their libtorch), or {install_there}"),
            )
        }
    };
    (ctx.on)(&format!(
        "copying Headroom and its libtorch to {}:{REMOTE_HOME}",
        p.name
    ));
    let bin = format!("{REMOTE_HOME}/bin");
    let libs = format!("{REMOTE_HOME}/{}", bundle.libs_under);
    let copy = remote(
        p,
        &format!("mkdir -p {} {}", sh_quote(&bin), sh_quote(&libs)),
        None,
        ctx.timeout + Duration::from_secs(10),
        ctx.timeout,
    )
    .and_then(|_| {
        rsync_paths(
            p,
            &[bundle.headroom.as_path(), bundle.worker.as_path()],
            &bin,
            ctx.timeout,
            &mut *ctx.on,
        )
    })
    .and_then(|f| {
        if f.success() {
            rsync(
                p,
                &bundle.libs,
                &libs,
                &[],
                &[],
                ctx.timeout,
                Some(&mut *ctx.on),
            )
        } else {
            Ok(f)
        }
    });
    match copy {
        Ok(f) if f.success() => {}
        Ok(f) => {
            let e = last_line(&f.stderr);
            let fix = if e.contains("No space left") {
                "free space on the remote's login disk".to_owned()
            } else {
                install_there.clone()
            };
            return fail(format!("copying Headroom to {} failed: {e}", p.name), fix);
        }
        Err(e) => return fail(e.to_string(), "install rsync here and on the remote"),
    }
    let path = if remote_home.starts_with('/') {
        format!("{remote_home}/{bin}/headroom")
    } else {
        format!("{bin}/headroom")
    };
    let installed = HostProfile {
        headroom_path: Some(path.clone()),
        ..p.clone()
    };
    let answer = match version(&installed) {
        Ok(f) if f.success() => f.stdout.trim().to_owned(),
        Ok(f) => {
            return fail(
                format!(
                    "Headroom was copied to {}:{bin} but does not start there: {}",
                    p.name,
                    last_line(&f.stderr)
                ),
                install_there,
            )
        }
        Err(e) => return fail(e.to_string(), "install OpenSSH's client"),
    };
    if let Err(e) = crate::remote::Hosts::load().and_then(|mut h| {
        h.add(installed.clone(), true)?;
        h.save()
    }) {
        return fail(
            format!(
                "{answer} runs on {} but the profile could not be saved: {e}",
                p.name
            ),
            "check that Headroom's folder is writable",
        );
    }
    let lights = doctor_lights(&installed, ctx.timeout);
    pass(format!(
        "copied {} and its libtorch ({}) to {}:{REMOTE_HOME}; {answer} answers there (the profile's headroom path is now {path}); its doctor: {lights}",
        bundle.headroom.display(),
        bundle.libs.display(),
        p.name
    ))
}

/// The remote doctor's lights ("cpu: green, mps: red"), or why there are none: one ssh call of
/// `doctor --json` (no round trips timed, unlike a whole `remote check`).
pub(super) fn doctor_lights(p: &HostProfile, timeout: Duration) -> String {
    match check::doctor_lights(p, timeout) {
        Ok(Ok(lights)) if lights.is_empty() => "no lights".into(),
        Ok(Ok(lights)) => lights.join(", "),
        Ok(Err(why)) => why,
        Err(e) => e.to_string(),
    }
}
