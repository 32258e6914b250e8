//! A run's facts as rows for a report: what ran, where, under which conditions, on which data.

use super::*;

/// A mount for people: "network: nfs4 nas:/export at /mnt/data".
pub(super) fn mount_text(m: &headroom_probe::mounts::MountFacts) -> String {
    let class = match m.class {
        MountClass::Local => "local",
        MountClass::Network => "network",
        MountClass::External => "external drive",
        MountClass::Unknown => "unknown kind",
    };
    format!("{class}: {} {} at {}", m.fs_type, m.source, m.mount_point)
}

/// The context's rows: the user's Python, the mount of Headroom's folder and the apps holding
/// memory.
pub(super) fn context_facts(x: Option<&RunContext>) -> Vec<(&'static str, String)> {
    let unknown = || "unknown".to_owned();
    let mount = x
        .and_then(|x| x.data_mount.as_ref())
        .map_or_else(unknown, mount_text);
    let apps = x.map_or_else(unknown, |x| {
        let held: Vec<String> = x
            .apps
            .iter()
            .filter(|a| a.bytes > 0)
            .map(|a| {
                let names = if a.apps.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", a.apps.join(", "))
                };
                format!(
                    "{} {}{names}",
                    a.group,
                    headroom_model::budget::format_bytes(a.bytes)
                )
            })
            .collect();
        if held.is_empty() {
            "none of the conferencing apps, IDEs or browsers".into()
        } else {
            held.join("; ")
        }
    });
    let python = x
        .and_then(|x| x.python.as_ref())
        .map_or_else(unknown, |p| match &p.torch {
            Some(v) => format!("torch {v} ({})", p.python),
            None => format!("no torch in {}", p.python),
        });
    vec![
        ("your Python", python),
        ("Headroom folder on", mount),
        ("apps holding memory", apps),
    ]
}

/// The run's facts as (label, value) rows, its conditions at the start among them; what was not
/// recorded says `unknown`.
pub fn facts(r: &RunRecord, rec: &Recorded) -> Vec<(&'static str, String)> {
    let c = rec.conditions.as_ref();
    let unknown = || "unknown".to_owned();
    let power = match c.and_then(|c| c.power_source) {
        Some(PowerSource::Ac) => "AC adapter".to_owned(),
        Some(PowerSource::Battery) => "battery".to_owned(),
        Some(PowerSource::Ups) => "UPS".to_owned(),
        Some(PowerSource::Unknown) | None => unknown(),
    };
    let battery = match c.map(|c| c.battery.as_ref()) {
        None => unknown(),
        Some(None) => "none".to_owned(),
        Some(Some(b)) => format!(
            "{}{}",
            b.percent.map_or_else(unknown, |p| format!("{p} %")),
            b.state
                .as_deref()
                .map(|s| format!(", {s}"))
                .unwrap_or_default()
        ),
    };
    let low_power = match c.and_then(|c| c.low_power_mode) {
        Some(true) => "on".to_owned(),
        Some(false) => "off".to_owned(),
        None => unknown(),
    };
    let thermal = match c {
        Some(c) if !c.thermal_warnings.is_empty() => c.thermal_warnings.join("; "),
        Some(c) if c.thermal_exposed => "no warning".to_owned(),
        _ => unknown(),
    };
    let mut rows = vec![
        ("kind", r.kind.to_string()),
        ("status", r.status.as_str().to_owned()),
        ("started", r.started_at.clone()),
        ("finished", r.finished_at.clone().unwrap_or_else(unknown)),
        ("host", r.host.clone()),
        ("device", format!("{} ({})", r.device, r.device_name)),
        ("workload", r.workload.clone()),
        ("dtype / mode", r.dtype_mode()),
        ("libtorch", r.libtorch.clone()),
        (
            "git",
            match (&r.git_commit, r.git_dirty) {
                (Some(c), Some(true)) => format!("{c} (uncommitted changes)"),
                (Some(c), _) => c.clone(),
                (None, _) => unknown(),
            },
        ),
        (
            "budget",
            r.budget_bytes
                .map_or_else(unknown, headroom_model::budget::format_bytes),
        ),
        (
            "chosen batch",
            r.chosen_batch
                .map_or_else(|| "none".into(), |b| b.to_string()),
        ),
        (
            "peak memory",
            r.peak_bytes
                .map_or_else(unknown, headroom_model::budget::format_bytes),
        ),
        (
            "CPU fallback",
            match r.fallback {
                Some(true) => {
                    // A wrapped run keeps the operators PyTorch named in its report.
                    let ops: Vec<&str> = r
                        .report
                        .as_ref()
                        .and_then(|x| x.get("fallback_ops"))
                        .and_then(serde_json::Value::as_array)
                        .map(|a| a.iter().filter_map(serde_json::Value::as_str).collect())
                        .unwrap_or_default();
                    if ops.is_empty() {
                        "yes".into()
                    } else {
                        format!("yes: {}", ops.join(", "))
                    }
                }
                Some(false) => "no".into(),
                None => unknown(),
            },
        ),
        ("note", r.note.clone().unwrap_or_default()),
    ];
    rows.extend([
        ("power", power),
        ("battery", battery),
        ("Low Power Mode", low_power),
        ("thermal", thermal),
        (
            "CPU governor",
            c.and_then(|c| c.cpu_governor.clone())
                .unwrap_or_else(unknown),
        ),
        (
            "threads",
            rec.hello
                .as_ref()
                .map_or_else(unknown, |h| h.threads.to_string()),
        ),
        ("data", data_fact(rec.data.as_ref())),
        (
            "data on",
            rec.data.as_ref().map_or_else(
                || "not named (--data)".into(),
                |d| {
                    if d.mounts.is_empty() {
                        unknown()
                    } else {
                        d.mounts
                            .iter()
                            .map(mount_text)
                            .collect::<Vec<_>>()
                            .join("; ")
                    }
                },
            ),
        ),
        (
            "artifact store",
            rec.artifact_rtt
                .as_ref()
                .map_or_else(|| "not named".into(), ArtifactRtt::describe),
        ),
    ]);
    if r.kind == RunKind::Run {
        if let Some(o) = r
            .report
            .clone()
            .and_then(|v| serde_json::from_value::<WatchOutcome>(v).ok())
        {
            rows.extend(strategy_facts(&o));
        }
    }
    rows.extend(context_facts(rec.context.as_ref()));
    if let Some(p) = &rec.proof {
        rows.extend(p.rows());
    }
    rows
}

/// The data row: how many files, how large, and one checksum for the set.
pub(super) fn data_fact(data: Option<&DataRecord>) -> String {
    match data.map(|d| d.shards.as_slice()) {
        None => "not named (--data)".into(),
        Some([]) => "no files".into(),
        Some(s) => format!(
            "{} file{}, {}, set sha256 {}",
            s.len(),
            if s.len() == 1 { "" } else { "s" },
            headroom_model::budget::format_bytes(s.iter().map(|x| x.bytes).sum()),
            &crate::datasum::digest(s)[..16]
        ),
    }
}

/// A user's run's dtype policy: full precision, or autocast with its dtypes (set by Headroom
/// when `--amp` or a sweep over `amp` forced it).
pub(super) fn precision_text(o: Option<&Observed>) -> String {
    match o {
        None => "not observed".to_owned(),
        Some(o) if o.autocast.is_empty() => "full precision (no autocast)".to_owned(),
        Some(o) => format!(
            "autocast {}{}",
            o.autocast.join(", "),
            if o.amp_forced.is_some() {
                " (set by Headroom)"
            } else {
                ""
            }
        ),
    }
}

/// The seed the program set and whether its DataLoader workers are seeded too.
pub(super) fn seed_text(o: Option<&Observed>) -> String {
    let s = o
        .and_then(|o| o.seed)
        .map_or_else(|| "not seen".to_owned(), |s| s.to_string());
    let init = match o.and_then(|o| o.loader.as_ref()) {
        Some(l) if l.worker_init_fn => ", worker_init_fn set",
        Some(l) if l.num_workers > 0 => ", no worker_init_fn",
        _ => "",
    };
    format!("{s}{init}")
}

/// The strategy that produced a user's run's figures, as the runbook asks a published figure
/// to name: precision, accumulation and the effective batch, checkpointing, the release at
/// epoch ends, the seed, the metrics, and what else used the machine while it was timed.
pub(super) fn strategy_facts(out: &WatchOutcome) -> Vec<(&'static str, String)> {
    let o = out.observed.as_ref();
    let seen = |f: &dyn Fn(&Observed) -> String| o.map_or_else(|| "not observed".to_owned(), f);
    let accumulation = seen(&|x| {
        let k = x.accumulation.unwrap_or(1).max(1);
        match out.batch {
            Some(b) => format!(
                "{k} batch{} per optimizer step (effective batch {})",
                if k == 1 { "" } else { "es" },
                u64::from(b) * u64::from(k)
            ),
            None => format!(
                "{k} batch{} per optimizer step",
                if k == 1 { "" } else { "es" }
            ),
        }
    });
    let checkpointing = seen(&|x| if x.checkpointing { "on" } else { "off" }.to_owned());
    let release = seen(&|x| match x.release_forced.as_deref() {
        None | Some("none") => "none".to_owned(),
        Some(r) => format!("{r} (set by Headroom)"),
    });
    let metrics = if out.metrics.is_empty() {
        "none reported".to_owned()
    } else {
        out.metrics
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let beside = match &out.load {
        None => "not read".to_owned(),
        Some(l) => l
            .disturbance()
            .unwrap_or_else(|| "a quiet machine".to_owned()),
    };
    vec![
        ("dtype policy", precision_text(o)),
        ("accumulation", accumulation),
        ("activation checkpointing", checkpointing),
        ("release at epoch ends", release),
        ("seed", seed_text(o)),
        ("metrics", metrics),
        ("timed beside", beside),
    ]
}
