//! What was recorded beside a run (its hello, readings, epochs, context, data) and the proof
//! that it ran natively on arm64 (not under Rosetta), with where each fact came from.

use super::*;

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
pub(super) fn proof_for(ledger: &Ledger, r: &RunRecord) -> Result<Arm64Proof, CoreError> {
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

pub(super) fn first<T: serde::de::DeserializeOwned>(
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
