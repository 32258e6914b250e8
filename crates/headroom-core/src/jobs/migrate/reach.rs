//! Step 3, reachable with room: the ssh check and the free disk in the remote folder (`df`).

use super::*;

/// The available KiB in `df -Pk`'s output (POSIX format: the 4th field of the last line).
pub fn parse_df_available(text: &str) -> Option<u64> {
    let line = text.lines().rev().find(|l| !l.trim().is_empty())?;
    let kib: u64 = line.split_whitespace().nth(3)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Room a project needs on the remote beyond its own bytes (its environment is made there).
pub const DISK_MARGIN: u64 = 64 << 20;

pub(super) fn check_step(ctx: &mut Context<'_>) -> Outcome {
    let p = ctx.profile;
    let opts = CheckOptions {
        timeout: ctx.timeout,
        doctor: false,
        ..CheckOptions::default()
    };
    let r = match check::check(p, &opts) {
        Ok(r) => r,
        Err(e) => return fail(e.to_string(), "install OpenSSH's client"),
    };
    if !r.ok {
        let f = r.failure.unwrap_or(check::Failure {
            kind: check::FailureKind::Other,
            message: "the check failed".into(),
            fix: "run `headroom remote check NAME`".into(),
        });
        return fail(f.message, f.fix);
    }
    let dir = sh_quote(ctx.remote_dir);
    let df = remote(
        p,
        &format!("mkdir -p {dir} && df -Pk {dir}"),
        None,
        ctx.timeout + Duration::from_secs(10),
        ctx.timeout,
    );
    let free = match df {
        Ok(f) if f.success() => parse_df_available(&f.stdout),
        Ok(f) => {
            return fail(
                format!(
                    "cannot make the remote folder {}: {}",
                    ctx.remote_dir,
                    f.stderr.trim()
                ),
                "choose a folder the remote user may write: --remote-dir DIR",
            )
        }
        Err(e) => return fail(e.to_string(), "install OpenSSH's client"),
    };
    let need = project_bytes(&ctx.project.dir).saturating_add(DISK_MARGIN);
    let fmt = crate::budget::format_bytes;
    let figures = format!(
        "{}: RTT {}, {} {}, {} memory",
        p.name,
        r.rtt_ms
            .map_or_else(|| "?".into(), |v| format!("{v:.1} ms")),
        r.os.as_deref().unwrap_or("?"),
        r.arch.as_deref().unwrap_or("?"),
        r.memory_bytes.map_or_else(|| "?".into(), fmt)
    );
    match free {
        Some(f) if f >= need => pass(format!(
            "{figures}; {} free in {} (the project needs {})",
            fmt(f),
            ctx.remote_dir,
            fmt(need)
        )),
        Some(f) => fail(
            format!(
                "{figures}; only {} free in {} on {}, and the project needs {} (its files and {} for its environment)",
                fmt(f),
                ctx.remote_dir,
                p.name,
                fmt(need),
                fmt(DISK_MARGIN)
            ),
            "free space there, or choose a folder on a larger disk with --remote-dir DIR",
        ),
        None => fail(
            format!("{figures}; `df -Pk {}` gave no free-space figure", ctx.remote_dir),
            "check that the remote has a POSIX df",
        ),
    }
}
