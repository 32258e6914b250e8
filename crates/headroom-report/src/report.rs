//! Reports of recorded runs, worth attaching where a figure is promised: the run's facts, its
//! points, and its curves (throughput and peak memory against batch, budget and chosen batch
//! marked) as Markdown with an SVG beside it, one standalone HTML file (the SVG inline, no
//! network), CSV of the points, or JSON.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::datasum::DataRecord;
use crate::plot::{epochs_svg, png_from_svg, readings_svg, sweep_svg, ChartSpec};
use headroom_model::epochs::{EpochSample, EpochThresholds};
use headroom_model::outcome::WatchOutcome;
use headroom_model::protocol::Hello;
use headroom_model::protocol::Point;
use headroom_model::samples::ArtifactRtt;
use headroom_model::samples::MemoryReading;
use headroom_probe::mounts::MountClass;
use headroom_probe::readiness::{Conditions, PowerSource};
use headroom_store::ledger::{Ledger, RunContext, RunRecord};
use headroom_store::CoreError;

/// A report format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Md,
    Html,
    Csv,
    Json,
    /// The run's charts alone, as SVG.
    Svg,
    /// The run's charts alone, as PNG.
    Png,
}

impl Format {
    pub fn parse(s: &str) -> Result<Self, CoreError> {
        match s {
            "md" | "markdown" => Ok(Self::Md),
            "html" => Ok(Self::Html),
            "csv" => Ok(Self::Csv),
            "json" => Ok(Self::Json),
            "svg" => Ok(Self::Svg),
            "png" => Ok(Self::Png),
            other => Err(CoreError::InvalidInput(format!(
                "unknown report format {other:?}: use md, html, csv, json, svg or png"
            ))),
        }
    }

    fn ext(self) -> &'static str {
        match self {
            Self::Md => "md",
            Self::Html => "html",
            Self::Csv => "csv",
            Self::Json => "json",
            Self::Svg => "svg",
            Self::Png => "png",
        }
    }
}

/// The columns of a point in CSV, in order.
pub const CSV_COLUMNS: [&str; 12] = [
    "batch",
    "status",
    "samples_per_s",
    "step_ms_p50",
    "step_ms_p95",
    "data_ms",
    "forward_ms",
    "backward_ms",
    "peak_bytes",
    "peak_process_bytes",
    "gpu_busy",
    "message",
];

/// One CSV field, quoted when it holds a comma, a quote or a line break (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(String::new, |x| x.to_string())
}

/// The points as CSV, a header line first.
pub fn points_csv(points: &[Point]) -> String {
    let mut out = CSV_COLUMNS.join(",");
    out.push('\n');
    for p in points {
        let row = [
            p.batch.to_string(),
            p.status.as_str().to_owned(),
            opt(p.samples_per_s),
            opt(p.step_ms_p50),
            opt(p.step_ms_p95),
            opt(p.data_ms),
            opt(p.forward_ms),
            opt(p.backward_ms),
            opt(p.peak_bytes),
            opt(p.peak_process_bytes),
            opt(p.gpu_busy),
            p.message.clone().unwrap_or_default(),
        ];
        let fields: Vec<String> = row.iter().map(|f| csv_field(f)).collect();
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

/// What was recorded around a run besides its row and points; each part `None` where the run
/// predates it or it could not be known.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Recorded {
    /// Power, battery, Low Power Mode, thermal state at the start.
    pub conditions: Option<Conditions>,
    /// Where the ledger lived, who held memory, the user's Python's torch.
    pub context: Option<RunContext>,
    /// What the worker reported when it started (threads, memory it saw).
    pub hello: Option<Hello>,
    /// Checksums of the dataset files named with `--data`, and the mounts they are on.
    pub data: Option<DataRecord>,
    /// The round trip to the artifact store, measured where the run ran.
    pub artifact_rtt: Option<ArtifactRtt>,
    /// The arm64 proof: machine, Python architecture, torch build, MPS flags.
    pub proof: Option<Arm64Proof>,
}

/// What the runbook asks to see before any latency is promised: the machine and its
/// architecture, the Python's architecture, the torch build and its MPS flags. From the doctor
/// run on the same host nearest before the run (the newest one if none was before it), and for a
/// wrapped run, torch's MPS flags as the training process itself saw them.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Arm64Proof {
    /// The doctor run it comes from.
    pub doctor_run: Option<i64>,
    pub machine: String,
    pub python: String,
    pub torch: String,
    pub mps: String,
    /// Everything above says native arm64 on Apple Silicon, with MPS built and available.
    pub native_apple_silicon: bool,
}

impl Arm64Proof {
    /// From a doctor report (its primary interpreter) and what a wrapped run observed.
    pub fn from_report(
        doctor_run: Option<i64>,
        rep: Option<&headroom_probe::readiness::Report>,
        observed: Option<&headroom_model::observed::Observed>,
    ) -> Self {
        Self::from_report_on(doctor_run, rep, observed, "this machine")
    }

    /// [`Self::from_report`] for a run on `place` ("this machine", or a remote host's name),
    /// which is where a missing doctor run is to be made.
    pub fn from_report_on(
        doctor_run: Option<i64>,
        rep: Option<&headroom_probe::readiness::Report>,
        observed: Option<&headroom_model::observed::Observed>,
        place: &str,
    ) -> Self {
        let unknown = || format!("unknown (run `headroom doctor` on {place})");
        let m = rep.map(|r| &r.machine);
        let machine = m.map_or_else(unknown, |m| {
            format!(
                "{} {}, {}{}",
                m.cpu.as_deref().unwrap_or("unknown CPU"),
                m.arch,
                if m.apple_silicon {
                    "Apple Silicon"
                } else {
                    "not Apple Silicon"
                },
                match m.translated {
                    Some(true) => ", Headroom translated by Rosetta",
                    _ => "",
                }
            )
        });
        let py = rep.and_then(|r| r.primary.and_then(|i| r.pythons.get(i)));
        let facts = py.and_then(|p| p.facts.as_ref());
        let python = match (py, facts) {
            (Some(p), Some(f)) => format!(
                "{} {} ({}{})",
                f.executable,
                f.version,
                f.machine,
                if p.binary_archs.is_empty() {
                    String::new()
                } else {
                    format!("; binary {}", p.binary_archs.join(", "))
                }
            ),
            _ => unknown(),
        };
        let t = facts.and_then(|f| f.torch.as_ref());
        let torch = match (t, observed.and_then(|o| o.torch_version.as_deref())) {
            (_, Some(v)) => format!("{v} (as the training process loaded it)"),
            (Some(t), None) => format!(
                "{}{}",
                t.version,
                t.cuda_version
                    .as_deref()
                    .map_or_else(String::new, |c| format!(", CUDA {c}"))
            ),
            (None, None) => unknown(),
        };
        let flags = observed
            .and_then(|o| Some((o.mps_built?, o.mps_available?)))
            .or_else(|| t.map(|t| (t.mps_built, t.mps_available)));
        let mps = flags.map_or_else(unknown, |(b, a)| {
            format!(
                "built {}, available {}",
                if b { "yes" } else { "no" },
                if a { "yes" } else { "no" }
            )
        });
        let native_apple_silicon = m.is_some_and(|m| m.apple_silicon && m.translated != Some(true))
            && facts.is_some_and(|f| f.machine == "arm64")
            && flags == Some((true, true));
        Self {
            doctor_run,
            machine,
            python,
            torch,
            mps,
            native_apple_silicon,
        }
    }

    /// The rows a report shows.
    pub fn rows(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                "arm64 proof",
                format!(
                    "{}{}",
                    if self.native_apple_silicon {
                        "native arm64 on Apple Silicon with MPS"
                    } else {
                        "NOT shown to be native arm64 with MPS: promise no latency from this run"
                    },
                    self.doctor_run
                        .map_or_else(String::new, |d| format!(" (doctor run {d})"))
                ),
            ),
            ("machine", self.machine.clone()),
            ("Python", self.python.clone()),
            ("torch build", self.torch.clone()),
            ("MPS", self.mps.clone()),
        ]
    }
}

/// The doctor run on `r`'s host nearest before it (else the newest there), with its report.
fn proof_for(ledger: &Ledger, r: &RunRecord) -> Result<Arm64Proof, CoreError> {
    let doctors: Vec<RunRecord> = ledger
        .list_runs(500)?
        .into_iter()
        .filter(|d| {
            d.kind == headroom_store::ledger::RunKind::Doctor
                && d.host == r.host
                && d.report.is_some()
        })
        .collect();
    let pick = doctors
        .iter()
        .find(|d| d.started_at <= r.started_at)
        .or_else(|| doctors.first());
    let report: Option<headroom_probe::readiness::Report> =
        pick.and_then(|d| serde_json::from_value(d.report.clone()?).ok());
    let observed = (r.kind == headroom_store::ledger::RunKind::Run)
        .then(|| {
            serde_json::from_value::<WatchOutcome>(r.report.clone()?)
                .ok()?
                .observed
        })
        .flatten();
    Ok(Arm64Proof::from_report_on(
        pick.filter(|_| report.is_some()).map(|d| d.id),
        report.as_ref(),
        observed.as_ref(),
        if r.host == headroom_probe::machine::hostname() {
            "this machine"
        } else {
            &r.host
        },
    ))
}

fn first<T: serde::de::DeserializeOwned>(
    ledger: &Ledger,
    id: i64,
    kind: &str,
) -> Result<Option<T>, CoreError> {
    Ok(ledger.samples::<T>(id, kind)?.into_iter().next())
}

/// Everything recorded around run `id`.
pub fn recorded(ledger: &Ledger, id: i64) -> Result<Recorded, CoreError> {
    let (r, _) = ledger.get_run(id)?;
    let proof = (r.kind != headroom_store::ledger::RunKind::Doctor)
        .then(|| proof_for(ledger, &r))
        .transpose()?;
    Ok(Recorded {
        proof,
        conditions: first(ledger, id, "conditions")?,
        context: first(ledger, id, "context")?,
        hello: first(ledger, id, "hello")?,
        data: first(ledger, id, "data")?,
        artifact_rtt: first(ledger, id, "artifact_rtt")?,
    })
}

/// A mount for people: "network: nfs4 nas:/export at /mnt/data".
fn mount_text(m: &headroom_probe::mounts::MountFacts) -> String {
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
fn context_facts(x: Option<&RunContext>) -> Vec<(&'static str, String)> {
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
    rows.extend(context_facts(rec.context.as_ref()));
    if let Some(p) = &rec.proof {
        rows.extend(p.rows());
    }
    rows
}

/// The data row: how many files, how large, and one checksum for the set.
fn data_fact(data: Option<&DataRecord>) -> String {
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

/// One of a run's pictures.
#[derive(Debug, Clone)]
pub struct Chart {
    /// Its file name after `run-ID`: empty for the batch chart, `-memory` for memory.
    pub suffix: &'static str,
    /// What it shows, for the text around it.
    pub alt: &'static str,
    pub svg: String,
}

/// The size reports draw at (the app's panels draw smaller).
const REPORT_CHART: (u32, u32) = (720, 560);
const REPORT_MEMORY_CHART: (u32, u32) = (720, 400);
/// PNGs are drawn at twice the SVG's size, sharp on a high-density screen.
pub const PNG_SCALE: f32 = 2.0;

/// The leak thresholds run `id` was judged with; runs recorded before they were kept use the
/// configured ones.
fn thresholds(ledger: &Ledger, id: i64) -> Result<EpochThresholds, CoreError> {
    if let Some(t) = ledger
        .samples::<EpochThresholds>(id, "thresholds")?
        .into_iter()
        .next()
    {
        return Ok(t);
    }
    Ok(headroom_store::config::load()
        .map(|c| c.epochs)
        .unwrap_or_default())
}

/// The run's pictures: throughput and peak memory against batch when it has points, memory per
/// epoch when it has epochs, else the watched tree's memory over time when it has readings.
pub fn charts(ledger: &Ledger, r: &RunRecord, points: &[Point]) -> Result<Vec<Chart>, CoreError> {
    charts_at(ledger, r, points, REPORT_CHART, REPORT_MEMORY_CHART)
}

/// [`charts`] drawn at other sizes (the app's popover draws them smaller, so text stays legible).
pub fn charts_at(
    ledger: &Ledger,
    r: &RunRecord,
    points: &[Point],
    (bw, bh): (u32, u32),
    (w, h): (u32, u32),
) -> Result<Vec<Chart>, CoreError> {
    let mut out = Vec::new();
    if !points.is_empty() {
        out.push(Chart {
            suffix: "",
            alt: "throughput and peak memory against batch",
            svg: sweep_svg(&ChartSpec {
                points,
                summary: r.summary.as_ref(),
                budget_bytes: r.budget_bytes,
                width: bw,
                height: bh,
            })?,
        });
    }
    let epochs: Vec<EpochSample> = ledger.samples(r.id, "epoch")?;
    if !epochs.is_empty() {
        out.push(Chart {
            suffix: "-memory",
            alt: "memory per epoch with the leak threshold",
            svg: epochs_svg(&epochs, &thresholds(ledger, r.id)?, w, h)?,
        });
    } else {
        let readings: Vec<MemoryReading> = ledger.samples(r.id, "memory")?;
        if !readings.is_empty() {
            out.push(Chart {
                suffix: "-memory",
                alt: "the process tree's memory over time with the leak threshold",
                svg: readings_svg(&readings, thresholds(ledger, r.id)?.leak_growth, w, h)?,
            });
        }
    }
    Ok(out)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn title(r: &RunRecord) -> String {
    format!(
        "Headroom run {}: {} of {} on {}",
        r.id, r.kind, r.workload, r.device
    )
}

fn points_rows(points: &[Point]) -> Vec<[String; 6]> {
    let f = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |x| format!("{x:.2}"));
    points
        .iter()
        .map(|p| {
            [
                p.batch.to_string(),
                p.status.as_str().to_owned(),
                f(p.samples_per_s),
                f(p.step_ms_p50),
                f(p.step_ms_p95),
                p.peak_bytes
                    .map_or_else(|| "-".to_owned(), headroom_model::budget::format_bytes),
            ]
        })
        .collect()
}

const POINT_HEADER: [&str; 6] = [
    "batch",
    "status",
    "samples/s",
    "p50 ms",
    "p95 ms",
    "peak memory",
];

/// Markdown, each picture referenced by its base name (`run-7`, `run-7-memory`): the SVG shown,
/// the PNG beside it linked.
pub fn markdown(
    r: &RunRecord,
    rec: &Recorded,
    points: &[Point],
    images: &[(String, &str)],
) -> String {
    let mut s = format!("# {}\n\n| fact | value |\n|---|---|\n", title(r));
    for (k, v) in facts(r, rec) {
        let _ = writeln!(s, "| {k} | {} |", v.replace('|', "\\|"));
    }
    if let Some(sum) = &r.summary {
        let _ = writeln!(s, "\n**Recommendation**: {}", sum.reason);
    }
    for (base, alt) in images {
        let _ = writeln!(s, "\n![{alt}]({base}.svg) ([PNG]({base}.png))");
    }
    for (header, rows) in tables(points, rec) {
        let _ = writeln!(s, "\n| {} |", header.join(" | "));
        let _ = writeln!(s, "|{}", "---|".repeat(header.len()));
        for row in rows {
            let _ = writeln!(s, "| {} |", row.join(" | ").replace('\n', " "));
        }
    }
    s
}

/// The tables below the facts: the points, and the dataset files with their checksums.
fn tables(points: &[Point], rec: &Recorded) -> Vec<(Vec<&'static str>, Vec<Vec<String>>)> {
    let mut out = Vec::new();
    if !points.is_empty() {
        out.push((
            POINT_HEADER.to_vec(),
            points_rows(points).into_iter().map(Vec::from).collect(),
        ));
    }
    if let Some(data) = rec
        .data
        .as_ref()
        .map(|d| &d.shards)
        .filter(|d| !d.is_empty())
    {
        out.push((
            vec!["data file", "size", "sha256"],
            data.iter()
                .map(|d| {
                    vec![
                        d.path.clone(),
                        headroom_model::budget::format_bytes(d.bytes),
                        d.sha256.clone(),
                    ]
                })
                .collect(),
        ));
    }
    out
}

/// One standalone HTML file: styles and the SVG inline, nothing fetched.
pub fn html(r: &RunRecord, rec: &Recorded, points: &[Point], svgs: &[&str]) -> String {
    let mut s = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\n\
         <style>body{{font:14px system-ui,sans-serif;margin:2em;color:#1f2937}}\
         table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #d1d5db;\
         padding:4px 8px;text-align:left}}th{{background:#f3f4f6}}</style></head><body>\n\
         <h1>{t}</h1>\n<table>\n",
        t = escape(&title(r))
    );
    for (k, v) in facts(r, rec) {
        let _ = writeln!(s, "<tr><th>{k}</th><td>{}</td></tr>", escape(&v));
    }
    s.push_str("</table>\n");
    if let Some(sum) = &r.summary {
        let _ = writeln!(
            s,
            "<p><strong>Recommendation</strong>: {}</p>",
            escape(&sum.reason)
        );
    }
    for svg in svgs {
        let _ = writeln!(s, "<figure>{svg}</figure>");
    }
    for (header, rows) in tables(points, rec) {
        s.push_str("<table><tr>");
        for h in header {
            let _ = write!(s, "<th>{h}</th>");
        }
        s.push_str("</tr>\n");
        for row in rows {
            s.push_str("<tr>");
            for c in row {
                let _ = write!(s, "<td>{}</td>", escape(&c));
            }
            s.push_str("</tr>\n");
        }
        s.push_str("</table>\n");
    }
    s.push_str("</body></html>\n");
    s
}

fn write(path: &Path, bytes: impl AsRef<[u8]>) -> Result<PathBuf, CoreError> {
    std::fs::write(path, bytes).map_err(|source| CoreError::Io {
        what: "cannot write the report",
        path: path.display().to_string(),
        source,
    })?;
    Ok(path.to_path_buf())
}

fn create_dir(dir: &Path) -> Result<(), CoreError> {
    std::fs::create_dir_all(dir).map_err(|source| CoreError::Io {
        what: "cannot create the report folder",
        path: dir.display().to_string(),
        source,
    })
}

/// Writes `svg` as `BASE.svg` and `BASE.png` in `dir`.
fn write_pictures(dir: &Path, base: &str, svg: &str) -> Result<Vec<PathBuf>, CoreError> {
    Ok(vec![
        write(&dir.join(format!("{base}.svg")), svg)?,
        write(
            &dir.join(format!("{base}.png")),
            png_from_svg(svg, PNG_SCALE)?,
        )?,
    ])
}

/// Writes run `id`'s report in `format` into `dir` (`run-ID.EXT`; a Markdown report has its
/// pictures beside it as SVG and PNG); returns the files written.
pub fn export(
    ledger: &Ledger,
    id: i64,
    format: Format,
    dir: &Path,
) -> Result<Vec<PathBuf>, CoreError> {
    let (r, points) = ledger.get_run(id)?;
    let rec = recorded(ledger, id)?;
    create_dir(dir)?;
    let base = dir.join(format!("run-{id}.{}", format.ext()));
    let mut files = Vec::new();
    match format {
        Format::Json => {
            let doc = serde_json::json!({ "run": r, "recorded": rec, "points": points });
            files.push(write(&base, serde_json::to_string_pretty(&doc)?)?);
        }
        Format::Csv => files.push(write(&base, points_csv(&points))?),
        Format::Md => {
            let charts = charts(ledger, &r, &points)?;
            let mut images = Vec::new();
            for c in &charts {
                let name = format!("run-{id}{}", c.suffix);
                files.extend(write_pictures(dir, &name, &c.svg)?);
                images.push((name, c.alt));
            }
            let md = markdown(&r, &rec, &points, &images);
            files.insert(0, write(&base, md)?);
        }
        Format::Html => {
            let charts = charts(ledger, &r, &points)?;
            let svgs: Vec<&str> = charts.iter().map(|c| c.svg.as_str()).collect();
            files.push(write(&base, html(&r, &rec, &points, &svgs))?);
        }
        Format::Svg | Format::Png => {
            let charts = charts(ledger, &r, &points)?;
            if charts.is_empty() {
                return Err(CoreError::InvalidInput(format!(
                    "run {id} ({}) has no curves to draw: export it as md, html, csv or json",
                    r.kind
                )));
            }
            for c in &charts {
                let path = dir.join(format!("run-{id}{}.{}", c.suffix, format.ext()));
                files.push(if format == Format::Svg {
                    write(&path, &c.svg)?
                } else {
                    write(&path, png_from_svg(&c.svg, PNG_SCALE)?)?
                });
            }
        }
    }
    Ok(files)
}

/// How the legend of a side-by-side chart names a run: its id, host and device.
pub fn overlay_label(r: &RunRecord) -> String {
    format!("run {} · {} · {} {}", r.id, r.host, r.device, r.workload)
}

/// A run's headline figures for [`crate::plot::pair_svg`], labelled "run 30 · host · device".
pub fn figures_of(r: &RunRecord) -> crate::plot::Figures {
    let get = |k: &str| {
        r.report
            .as_ref()
            .and_then(|v| v.get(k))
            .and_then(serde_json::Value::as_f64)
    };
    crate::plot::Figures {
        label: format!("run {} · {} · {}", r.id, r.host, r.device),
        samples_per_s: get("samples_per_s"),
        step_ms: get("step_ms_p50"),
        peak_bytes: r.peak_bytes,
    }
}

/// Runs without points (a project's runs here and there) as bars side by side, `width` wide;
/// `None` when none of them measured anything.
pub fn pair_chart_at(runs: &[&RunRecord], width: u32) -> Result<Option<String>, CoreError> {
    let figures: Vec<crate::plot::Figures> = runs.iter().map(|r| figures_of(r)).collect();
    if figures
        .iter()
        .all(|f| f.samples_per_s.is_none() && f.step_ms.is_none() && f.peak_bytes.is_none())
    {
        return Ok(None);
    }
    crate::plot::pair_svg(&figures, width).map(Some)
}

/// Runs with points drawn side by side (one against another, local against remote) as
/// `compare-A-B….svg` and `.png` in `dir`; `None` when fewer than two of them have points.
pub fn export_overlay(
    ledger: &Ledger,
    ids: &[i64],
    dir: &Path,
) -> Result<Option<Vec<PathBuf>>, CoreError> {
    let mut runs = Vec::new();
    for &id in ids {
        let (r, points) = ledger.get_run(id)?;
        if !points.is_empty() {
            runs.push((overlay_label(&r), r.id, points));
        }
    }
    if runs.len() < 2 {
        return Ok(None);
    }
    let svg = overlay_chart(&runs)?;
    create_dir(dir)?;
    let ids: Vec<String> = runs.iter().map(|r| r.1.to_string()).collect();
    write_pictures(dir, &format!("compare-{}", ids.join("-")), &svg).map(Some)
}

/// The side-by-side chart of (label, id, points) runs.
pub fn overlay_chart(runs: &[(String, i64, Vec<Point>)]) -> Result<String, CoreError> {
    overlay_chart_at(runs, REPORT_CHART)
}

/// [`overlay_chart`] at another size.
pub fn overlay_chart_at(
    runs: &[(String, i64, Vec<Point>)],
    (w, h): (u32, u32),
) -> Result<String, CoreError> {
    let overlays: Vec<crate::plot::Overlay<'_>> = runs
        .iter()
        .map(|(label, _, points)| crate::plot::Overlay { label, points })
        .collect();
    crate::plot::overlay_svg(&overlays, w, h)
}

/// Draws runs `ids` side by side into `path`, SVG or PNG by its extension.
pub fn write_overlay(ledger: &Ledger, ids: &[i64], path: &Path) -> Result<(), CoreError> {
    let mut runs = Vec::new();
    for &id in ids {
        let (r, points) = ledger.get_run(id)?;
        if points.is_empty() {
            return Err(CoreError::InvalidInput(format!(
                "run {id} ({}) has no points to draw; pick sweeps (`headroom ledger list`)",
                r.kind
            )));
        }
        runs.push((overlay_label(&r), id, points));
    }
    let svg = overlay_chart(&runs)?;
    match path.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("svg") => write(path, svg).map(|_| ()),
        Some(e) if e.eq_ignore_ascii_case("png") => {
            write(path, png_from_svg(&svg, PNG_SCALE)?).map(|_| ())
        }
        _ => Err(CoreError::InvalidInput(format!(
            "{}: name the chart file .svg or .png",
            path.display()
        ))),
    }
}

/// Two budgets within 5 % of the larger one: too close to explain a difference in speed or in
/// the batch chosen (19.9 GiB against 20.1 GiB is two machines' free memory, not a cause).
fn within_a_twentieth(a: Option<u64>, b: Option<u64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.abs_diff(b).saturating_mul(20) <= a.max(b),
        _ => false,
    }
}

/// Facts left out of a comparison: they differ between any two runs and explain nothing.
const NOT_COMPARED: [&str; 8] = [
    "arm64 proof",
    "status",
    "started",
    "finished",
    "note",
    "chosen batch",
    "peak memory",
    "apps holding memory",
];

/// How close two runs' metrics must be to agree (`ledger compare --tolerance`): an absolute
/// difference (`0.01`) or a share of the first run's value (`1%`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tolerance {
    Absolute(f64),
    Relative(f64),
}

impl Default for Tolerance {
    /// 1 % of the first run's value.
    fn default() -> Self {
        Self::Relative(0.01)
    }
}

impl Tolerance {
    /// `0.01` or `1%`.
    pub fn parse(s: &str) -> Result<Self, CoreError> {
        let bad = || {
            CoreError::InvalidInput(format!(
                "--tolerance {s:?}: give an absolute difference (0.01) or a share of the first run's value (1%)"
            ))
        };
        let t = s.trim();
        let (num, relative) = match t.strip_suffix('%') {
            Some(n) => (n.trim(), true),
            None => (t, false),
        };
        let v: f64 = num.parse().map_err(|_| bad())?;
        if !v.is_finite() || v < 0.0 {
            return Err(bad());
        }
        Ok(if relative {
            Self::Relative(v / 100.0)
        } else {
            Self::Absolute(v)
        })
    }

    /// The largest difference allowed from `base`.
    pub fn allowed(self, base: f64) -> f64 {
        match self {
            Self::Absolute(a) => a,
            Self::Relative(r) => r * base.abs(),
        }
    }

    pub fn describe(self) -> String {
        match self {
            Self::Absolute(a) => format!("±{a}"),
            Self::Relative(r) => format!("±{} %", r * 100.0),
        }
    }
}

/// Two user runs' metrics, precision, seeds and effective batch, side by side: what must agree
/// before their results may be compared, and whether their metrics agree within `tol`.
pub fn training_lines(a: &WatchOutcome, b: &WatchOutcome, tol: Tolerance) -> Vec<String> {
    let (oa, ob) = (a.observed.as_ref(), b.observed.as_ref());
    let precision = |o: Option<&headroom_model::observed::Observed>| match o {
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
    };
    let seed = |o: Option<&headroom_model::observed::Observed>| {
        let s = o
            .and_then(|o| o.seed)
            .map_or_else(|| "not seen".to_owned(), |s| s.to_string());
        let init = match o.and_then(|o| o.loader.as_ref()) {
            Some(l) if l.worker_init_fn => ", worker_init_fn set",
            Some(l) if l.num_workers > 0 => ", no worker_init_fn",
            _ => "",
        };
        format!("{s}{init}")
    };
    let mut out = vec![
        format!("  dtype policy: {} vs {}", precision(oa), precision(ob)),
        format!("  seed: {} vs {}", seed(oa), seed(ob)),
    ];
    let effective = |o: &WatchOutcome| {
        let accum = o
            .observed
            .as_ref()
            .and_then(|x| x.accumulation)
            .unwrap_or(1)
            .max(1);
        o.batch.map(|b| (b, accum, u64::from(b) * u64::from(accum)))
    };
    if let (Some((b0, k0, e0)), Some((b1, k1, e1))) = (effective(a), effective(b)) {
        if e0 == e1 {
            out.push(format!(
                "  effective batch: {e0} in both ({b0} × {k0} vs {b1} × {k1})"
            ));
        } else {
            #[allow(clippy::cast_precision_loss)]
            let ratio = e1 as f64 / e0 as f64;
            out.push(format!(
                "  effective batch: {e0} ({b0} × {k0} backward calls per step) vs {e1} ({b1} × {k1}): the second takes {:.2}× the optimizer steps per epoch; scale its learning rate by {ratio:.2} (linear rule; {:.2} by the square-root rule) and its schedule's step counts by {:.2} before comparing results",
                1.0 / ratio,
                ratio.sqrt(),
                1.0 / ratio
            ));
        }
    }
    let names: std::collections::BTreeSet<&String> =
        a.metrics.keys().chain(b.metrics.keys()).collect();
    if names.is_empty() {
        out.push(
            "  metrics: none reported (print `headroom-metric NAME VALUE`, or give `headroom run --metric NAME=REGEX`)"
                .into(),
        );
    }
    for name in names {
        match (a.metrics.get(name), b.metrics.get(name)) {
            (Some(x), Some(y)) => {
                let diff = (y - x).abs();
                let allowed = tol.allowed(*x);
                out.push(format!(
                    "  metric {name}: {x} vs {y} (difference {diff:.6}, {} {}){}",
                    if diff <= allowed { "within" } else { "OUTSIDE" },
                    tol.describe(),
                    if diff > allowed
                        && a.observed.as_ref().map(|o| &o.autocast)
                            != b.observed.as_ref().map(|o| &o.autocast)
                    {
                        ": the dtype policies differ, which alone moves results"
                    } else {
                        ""
                    }
                ));
            }
            (Some(x), None) => out.push(format!("  metric {name}: {x} vs not reported")),
            (None, Some(y)) => out.push(format!("  metric {name}: not reported vs {y}")),
            (None, None) => {}
        }
    }
    out
}

/// `ledger compare`: the figures at the batches both runs measured, then every recorded fact
/// that differs and could explain a difference (versions, power, thermal, threads, data, mount).
pub fn compare(ledger: &Ledger, a: i64, b: i64) -> Result<Vec<String>, CoreError> {
    compare_within(ledger, a, b, Tolerance::default())
}

/// [`compare`], with two user runs' metrics judged within `tol`.
pub fn compare_within(
    ledger: &Ledger,
    a: i64,
    b: i64,
    tol: Tolerance,
) -> Result<Vec<String>, CoreError> {
    let (ra, pa) = ledger.get_run(a)?;
    let (rb, pb) = ledger.get_run(b)?;
    let (xa, xb) = (recorded(ledger, a)?, recorded(ledger, b)?);
    let mut out = vec![format!(
        "run {} ({} of {} on {}, {}) vs run {} ({} of {} on {}, {})",
        ra.id,
        ra.kind,
        ra.workload,
        ra.device,
        ra.host,
        rb.id,
        rb.kind,
        rb.workload,
        rb.device,
        rb.host
    )];
    let mut common = 0;
    for p in &pa {
        let Some(q) = pb.iter().find(|q| q.batch == p.batch) else {
            continue;
        };
        if let (Some(x), Some(y)) = (p.samples_per_s, q.samples_per_s) {
            common += 1;
            let mem = match (p.peak_bytes, q.peak_bytes) {
                (Some(m), Some(n)) => format!(
                    ", peak {} vs {}",
                    headroom_model::budget::format_bytes(m),
                    headroom_model::budget::format_bytes(n)
                ),
                _ => String::new(),
            };
            out.push(format!(
                "  batch {}: {x:.1} vs {y:.1} samples/s ({:+.1} %){mem}",
                p.batch,
                (y / x - 1.0) * 100.0
            ));
        }
    }
    if common == 0 {
        out.push("  no batch measured in both runs".into());
    }
    let outcome = |r: &RunRecord| -> Option<WatchOutcome> {
        (r.kind == headroom_store::ledger::RunKind::Run)
            .then(|| serde_json::from_value(r.report.clone()?).ok())
            .flatten()
    };
    if let (Some(oa), Some(ob)) = (outcome(&ra), outcome(&rb)) {
        out.push("training practices and results:".into());
        out.extend(training_lines(&oa, &ob, tol));
    }
    let fa = facts(&ra, &xa);
    let fb = facts(&rb, &xb);
    let differ: Vec<String> = fa
        .iter()
        .zip(&fb)
        .filter(|((k, x), (k2, y))| k == k2 && x != y && !NOT_COMPARED.contains(k))
        .filter(|((k, _), _)| {
            *k != "budget" || !within_a_twentieth(ra.budget_bytes, rb.budget_bytes)
        })
        .map(|((k, x), (_, y))| format!("  {k}: {x} vs {y}"))
        .collect();
    if differ.is_empty() {
        out.push("facts that could explain a difference: none differ among those recorded".into());
    } else {
        out.push("facts that differ and could explain it:".into());
        out.extend(differ);
    }
    for (r, x) in [(&ra, &xa), (&rb, &xb)] {
        if x.conditions.is_none() {
            out.push(if r.host == headroom_probe::machine::hostname() {
                format!(
                    "run {} has no conditions recorded (power, battery, Low Power Mode, thermal): \
                     it predates them",
                    r.id
                )
            } else {
                format!(
                    "run {} has no conditions recorded (power, battery, Low Power Mode, thermal): \
                     it was recorded here from {}'s output, which does not carry them",
                    r.id, r.host
                )
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use headroom_model::protocol::PointStatus;

    #[test]
    fn the_arm64_proof_holds_only_for_a_native_arm64_python_with_mps() {
        let text = include_str!("../../../bench/results/doctor_h200.json");
        let mut rep: headroom_probe::readiness::Report =
            serde_json::from_str(text).expect("real report");
        let h200 = Arm64Proof::from_report(Some(3), Some(&rep), None);
        assert!(!h200.native_apple_silicon);
        assert!(
            h200.rows()[0].1.starts_with("NOT shown"),
            "{:?}",
            h200.rows()
        );
        assert!(h200.rows()[0].1.ends_with("(doctor run 3)"));
        assert!(h200.torch.contains("CUDA"), "{}", h200.torch);
        // The same report as an Apple Silicon Mac with an arm64 Python and MPS: the proof holds.
        rep.machine.apple_silicon = true;
        rep.machine.arch = "arm64".into();
        rep.machine.translated = Some(false);
        let i = rep.primary.expect("primary");
        let facts = rep.pythons[i].facts.as_mut().expect("facts");
        facts.machine = "arm64".into();
        let torch = facts.torch.as_mut().expect("torch");
        torch.mps_built = true;
        torch.mps_available = true;
        assert!(Arm64Proof::from_report(None, Some(&rep), None).native_apple_silicon);
        // What the training process saw overrides the doctor's flags: MPS not available there.
        let seen = headroom_model::observed::Observed {
            torch_version: Some("2.11.0".into()),
            mps_built: Some(true),
            mps_available: Some(false),
            ..Default::default()
        };
        let p = Arm64Proof::from_report(None, Some(&rep), Some(&seen));
        assert!(!p.native_apple_silicon);
        assert_eq!(p.mps, "built yes, available no");
        // An x86_64 Python (Rosetta), or Headroom itself translated: no proof.
        rep.machine.translated = Some(true);
        assert!(!Arm64Proof::from_report(None, Some(&rep), None).native_apple_silicon);
        rep.machine.translated = Some(false);
        rep.pythons[i].facts.as_mut().expect("facts").machine = "x86_64".into();
        assert!(!Arm64Proof::from_report(None, Some(&rep), None).native_apple_silicon);
        // No doctor run: every row says how to get one.
        let none = Arm64Proof::from_report(None, None, None);
        assert!(none.machine.contains("headroom doctor` on this machine"));
        let there = Arm64Proof::from_report_on(None, None, None, "fresh");
        assert!(there.mps.contains("headroom doctor` on fresh"), "{there:?}");
    }

    #[test]
    fn tolerances_are_absolute_or_a_share_and_bad_ones_are_refused() {
        assert_eq!(
            Tolerance::parse("0.01").ok(),
            Some(Tolerance::Absolute(0.01))
        );
        assert_eq!(
            Tolerance::parse("2 %").ok(),
            Some(Tolerance::Relative(0.02))
        );
        assert!((Tolerance::Relative(0.02).allowed(-50.0) - 1.0).abs() < 1e-12);
        for bad in ["", "x", "-1", "nan", "1e999"] {
            assert!(Tolerance::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn csv_quotes_what_needs_it() {
        let mut p = Point::failed(8, PointStatus::Oom, "MPS backend out of memory, \"8 GiB\"");
        p.peak_bytes = Some(1 << 30);
        let text = points_csv(&[p]);
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some(CSV_COLUMNS.join(",").as_str()));
        assert_eq!(
            lines.next(),
            Some("8,oom,,,,,,,1073741824,,,\"MPS backend out of memory, \"\"8 GiB\"\"\"")
        );
        assert_eq!(
            escape("<a href=\"x\">&"),
            "&lt;a href=&quot;x&quot;&gt;&amp;"
        );
    }
}
