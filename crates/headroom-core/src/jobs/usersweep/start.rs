//! One start of the user's command as a sweep point: begun (ahead of its turn where that pays,
//! waiting at the observer's gate), measured until its step time settles, released, and turned
//! into a point — or a failure said in words.

use std::time::Duration;

use super::*;

/// One start of the command at `batch` (on `device`): begun, at its gate when `gated` (see
/// [`Ahead`]), not yet watched.
pub(super) struct Begun {
    pub(super) batch: u32,
    pub(super) opts: WatchOptions,
    pub(super) launched: Launched,
}

pub(super) fn begin_start(
    s: &ScriptSweep,
    batch: u32,
    device: Option<&DeviceChoice>,
    host_kill: u64,
    sweep_id: i64,
    gated: bool,
) -> Result<Begun, CoreError> {
    let command = crate::project::fill(&s.command, Some(batch), device.map(|d| d.device.as_str()));
    let mut env = s.watch.env.clone();
    env.extend(device.map(DeviceChoice::env).unwrap_or_default());
    let opts = WatchOptions {
        batch: Some(batch),
        settle: true,
        max_time: Some(s.point_limit),
        budget_bytes: Some(host_kill),
        env,
        tag: Some(serde_json::json!({ "project": s.project, "sweep": sweep_id })),
        ..s.watch.clone()
    };
    let launched = launch(&command, &opts, gated)?;
    Ok(Begun {
        batch,
        opts,
        launched,
    })
}

/// A start watched until its steps settle, with what the rest of the machine did from its first
/// timed step on.
/// How long a start's processes may take to be gone, and its device memory to be free again,
/// once it has been stopped.
pub(super) const RELEASE_BOUND: Duration = Duration::from_secs(20);

/// How a stopped start went: whether it was released in time, and how long it took.
pub(super) struct Released {
    /// What still held on at [`RELEASE_BOUND`]; `None`: all released.
    pub(super) late: Option<String>,
    /// From the stop until its processes (its DataLoader workers too) were gone.
    pub(super) processes_s: f64,
    /// From the stop until the device listed it no more (CUDA only).
    pub(super) device_s: Option<f64>,
}

/// Ends what is left of the start `pid` (its own process group) and waits until it is gone
/// and, on CUDA, until the device lists it no more; says what still held on at the bound.
/// `device`: the one the sweep put into the command, else the one the start was seen to use
/// (a script that picks its own GPU).
pub(super) fn release(pid: u32, run_id: i64, device: Option<&str>) -> Released {
    let stopped = std::time::Instant::now();
    let late = crate::jobs::watch::end_group(pid, RELEASE_BOUND).map(|left| {
        format!(
            "run {run_id}'s processes were still there {} s after it ended: {left}",
            RELEASE_BOUND.as_secs()
        )
    });
    let processes_s = stopped.elapsed().as_secs_f64();
    let mut out = Released {
        late,
        processes_s,
        device_s: None,
    };
    if out.late.is_some() {
        return out;
    }
    let Some(index) = device.and_then(|d| {
        let visible = std::env::var("CUDA_VISIBLE_DEVICES").ok();
        crate::gpu_busy::nvidia_index(d, visible.as_deref())
    }) else {
        return out;
    };
    let until = stopped + RELEASE_BOUND;
    loop {
        let Some(text) = crate::child::tool_stdout(
            "nvidia-smi",
            &[
                "-i",
                &index.to_string(),
                "--query-compute-apps=pid,process_name,used_gpu_memory",
                "--format=csv,noheader,nounits",
            ],
        ) else {
            return out;
        };
        let held = crate::load::parse_nvidia_compute_apps(&text)
            .into_iter()
            .find(|a| a.0 == pid);
        let Some((_, _, bytes)) = held else {
            out.device_s = Some(stopped.elapsed().as_secs_f64());
            return out;
        };
        if std::time::Instant::now() >= until {
            out.late = Some(format!(
                "run {run_id}'s process {pid} still held {} on cuda:{index} {} s after it ended",
                bytes.map_or_else(|| "memory".to_owned(), format_bytes),
                RELEASE_BOUND.as_secs()
            ));
            return out;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub(super) fn measure(
    b: Begun,
    device: Option<&DeviceChoice>,
    ledger: &Ledger,
    on: &mut dyn FnMut(&Update),
    waiting: &[u32],
) -> Result<(WatchOutcome, Option<crate::load::PointLoad>), CoreError> {
    let matcher = EpochMatcher::new(crate::readings::DEFAULT_EPOCH_PATTERN)?;
    let mut load = crate::load::OtherLoad::new();
    // The start's own processes (its DataLoader workers) and the starts waiting at their gates
    // are the work, not other load.
    load.exclude_group(b.launched.pid());
    for g in waiting {
        load.exclude_group(*g);
    }
    if let Some(d) = device {
        load.watch_device(&d.device);
    }
    // The machine's state while the start is timed (a start is `settle`d: its own run reads
    // none).
    let conditions = crate::conditions::ConditionLog::start(
        device.map(|d| d.device.as_str()),
        crate::conditions::INTERVAL,
    );
    let mut timed_from = None;
    // When each step after the warm-up came, and the last reading asked for, in the
    // conditions' time.
    let (mut stamps, mut asked): (Vec<(u32, f64)>, f64) = (Vec::new(), 0.0);
    let mut timing = false;
    let batch = b.batch;
    // Each step as it comes: warming up, then timed until the step time settles.
    let (mut told, mut shown, mut shown_at) = (0, None, 0.0);
    let outcome = drive(b.launched, &matcher, &b.opts, ledger, &mut |p| {
        if p.steps == told {
            return;
        }
        told = p.steps;
        let phase = if (p.steps as usize) <= SETTLE_WARMUP {
            Phase::Warmup
        } else {
            Phase::Timed
        };
        if phase == Phase::Timed && !timing {
            timing = true;
            // The starts waiting at their gates (their DataLoader workers prefetching) are
            // stopped whole while this one is timed: they cost it nothing.
            for g in waiting {
                crate::jobs::watch::signal_group(*g, libc::SIGSTOP);
            }
            load.start();
            // Its span begins here, with a reading asked for and not waited for (on a Mac a
            // reading takes 0.1 s, which this thread would not read the steps through).
            let from = conditions.fine(true);
            timed_from = Some(from);
            asked = from;
        }
        let now = conditions.now();
        if timing {
            stamps.push((p.steps, now));
            // A reading every few steps: a point timed for a second has its power through it.
            if now - asked >= ASK_EVERY_S {
                conditions.ask();
                asked = now;
            }
        }
        // The sweep's progress at most every tenth of a second (steps come faster).
        if shown != Some(phase) || now - shown_at >= 0.1 {
            (shown, shown_at) = (Some(phase), now);
            on(&Update::Progress {
                batch,
                phase,
                step: p.steps,
                of: 0,
            });
        }
    })
    .map(|mut w| {
        let l = timing.then(|| load.read(&[])).flatten();
        conditions.fine(false);
        let end = conditions.mark();
        let (from, to) = timed_span(&stamps, w.steps, timed_from, end, |a, b| {
            conditions.span(a, b).samples
        });
        w.conditions = Some(conditions.span(from, to));
        (w, l)
    });
    for g in waiting {
        crate::jobs::watch::signal_group(*g, libc::SIGCONT);
    }
    outcome
}

/// The span a start's conditions are read over, in the conditions' time: the steps its
/// samples/s comes from (the last `timed` of those `stamps` record: step count, time), so that
/// its joules per sample are the power over the same steps — not the steps before its timing
/// settled, nor the stop and the process's exit (idle power) after them. Where that span holds
/// fewer than two readings (`readings(from, to)`), from the first step after the warm-up
/// (`timed_from`, or when the start was let through), then to `end` (its exit).
fn timed_span(
    stamps: &[(u32, f64)],
    timed: u32,
    timed_from: Option<f64>,
    end: f64,
    readings: impl Fn(f64, f64) -> u32,
) -> (f64, f64) {
    let begun = timed_from.unwrap_or(0.0);
    let Some(&(total, last)) = stamps.last() else {
        return (begun, end);
    };
    let first = total.saturating_sub(timed.max(1)) + 1;
    let window = stamps
        .iter()
        .find(|(n, _)| *n >= first)
        .map(|(_, t)| t.max(begun))
        .filter(|t| *t < last && readings(*t, last) >= 2);
    match window {
        Some(from) => (from, last),
        None if last > begun && readings(begun, last) >= 2 => (begun, last),
        None => (begun, end),
    }
}

/// Seconds between the readings asked for while a start is timed.
const ASK_EVERY_S: f64 = 0.2;

/// How long a start begun at a gate may take to import torch (the observer's sign of life)
/// before the sweep stops beginning starts ahead: a program without torch never reaches a gate.
pub(super) const ARM_WAIT: Duration = Duration::from_secs(30);

/// The least a start begun ahead is waited for once the one to measure is at its gate (and at
/// least as long again as that one took to get there).
pub(super) const AHEAD_GRACE: Duration = Duration::from_secs(10);

/// Starts begun ahead of their turn. Each start of the user's program spends seconds (on the
/// H200's resnet50 script 8–13 s) on its interpreter, imports, device and data workers before its
/// first step, and the planner's next batch is often known before the current one is measured
/// ([`Planner::speculate`]). So both are begun together, each stops at a gate before its first
/// batch (the observer's, [`crate::instrument::GATE_ENV`]), and once both are there the current
/// one is let through and measured alone while the other waits, idle; its start-up cost no wall
/// time of its own. A start begun ahead that the planner does not ask for is killed unrecorded.
pub(super) struct Ahead {
    pub(super) on: bool,
    pub(super) waiting: Vec<Begun>,
}

impl Ahead {
    /// The start begun ahead whose batch `serves` (the planner's [`Planner::accepts`]).
    pub(super) fn take_if(&mut self, serves: impl Fn(u32) -> bool) -> Option<Begun> {
        let i = self.waiting.iter().position(|b| serves(b.batch))?;
        Some(self.waiting.swap_remove(i))
    }

    pub(super) fn abort_all(&mut self) {
        for b in self.waiting.drain(..) {
            b.launched.abort();
        }
    }

    /// Begins no more starts ahead (and ends those begun).
    pub(super) fn stop(&mut self) {
        self.on = false;
        self.abort_all();
    }

    /// Waits until `main` and every start begun ahead are at their gates (or ended), so that
    /// `main` is measured with the others idle. Gives up on one that takes much longer than
    /// `main` did (killed), and on starting ahead altogether when `main` shows no observer.
    pub(super) fn wait_at_gates(
        &mut self,
        main: &mut Begun,
        interrupt: &std::sync::atomic::AtomicI32,
    ) {
        let ready = |s: GateState| matches!(s, GateState::Waiting | GateState::Exited);
        let mut main_ready_at = None;
        loop {
            if interrupt.load(std::sync::atomic::Ordering::SeqCst) != 0 {
                return;
            }
            let m = main.launched.gate_state();
            let others: Vec<bool> = self
                .waiting
                .iter_mut()
                .map(|b| ready(b.launched.gate_state()))
                .collect();
            if ready(m) && others.iter().all(|r| *r) {
                return;
            }
            let age = main.launched.age();
            let no_gate = match m {
                GateState::Starting => age > ARM_WAIT,
                GateState::Armed => age > main.opts.max_time.unwrap_or(ARM_WAIT),
                _ => false,
            };
            if no_gate {
                self.stop();
                return;
            }
            if ready(m) {
                let at = *main_ready_at.get_or_insert(age);
                if age > at + at.max(AHEAD_GRACE) {
                    let late: Vec<Begun> = {
                        let (ok, late): (Vec<_>, Vec<_>) = std::mem::take(&mut self.waiting)
                            .into_iter()
                            .zip(others)
                            .partition(|(_, r)| *r);
                        self.waiting = ok.into_iter().map(|(b, _)| b).collect();
                        late.into_iter().map(|(b, _)| b).collect()
                    };
                    for b in late {
                        b.launched.abort();
                    }
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Ahead {
    fn drop(&mut self) {
        self.abort_all();
    }
}

impl ScriptSweep {
    /// Whether to begin starts ahead ([`Prestart`]); the observer is what stops them at a gate.
    pub(super) fn prestarts(&self) -> bool {
        self.watch.instrument
            && match self.prestart {
                Prestart::On => true,
                Prestart::Off => false,
                Prestart::Auto => self
                    .devices
                    .last()
                    .map_or_else(default_device, |d| d.device.clone())
                    .starts_with("cuda"),
            }
    }
}

/// A start as a sweep point: over the planner's budget when its measured peak is.
pub(super) fn as_point(w: &WatchOutcome, batch: u32, budget: u64) -> Point {
    let mut p = w
        .as_point()
        .unwrap_or_else(|| Point::failed(batch, PointStatus::Error, format!("run {}", w.run_id)));
    p.batch = batch;
    if p.status == PointStatus::Ok && p.peak_bytes.is_some_and(|b| b > budget) {
        p.status = PointStatus::OverBudget;
        p.message = Some(format!(
            "peak {} is above the {} budget (run {})",
            format_bytes(p.peak_bytes.unwrap_or(0)),
            format_bytes(budget),
            w.run_id
        ));
    }
    if p.status == PointStatus::Ok && p.samples_per_s.is_none() {
        p.status = PointStatus::Error;
        p.message = Some(no_iterations(w));
    }
    if p.status != PointStatus::Ok
        && p.message
            .as_deref()
            .is_none_or(|m| m == format!("run {}", w.run_id))
    {
        p.message = Some(describe_failure(w));
    }
    p
}

/// A start that ran to its end but gave nothing to time is a failed start in the ledger, with
/// the reason, not a complete one.
pub(super) fn failed_start(ledger: &Ledger, w: &WatchOutcome, p: &Point) -> Result<(), CoreError> {
    if p.status == PointStatus::Error && !w.interrupted {
        ledger.set_status(
            w.run_id,
            RunStatus::Failed,
            p.message.as_deref().unwrap_or("no point"),
        )?;
    }
    Ok(())
}

/// Why a start gave no iteration to time, said plainly.
pub(super) fn no_iterations(w: &WatchOutcome) -> String {
    match &w.observed {
        Some(o) if o.steps == 0 => format!(
            "no iteration seen in run {}: this loop drew no DataLoader batch and called no \
             module, backward or optimizer step that Headroom could see (or print \
             `headroom-step` after each step)",
            w.run_id
        ),
        Some(_) => format!(
            "run {} ended after {} iteration(s), too few to time",
            w.run_id, w.steps
        ),
        None => format!(
            "run {} finished without steps to time: it was not observed from inside (not a \
             Python program that imports torch); print `headroom-step` after each step",
            w.run_id
        ),
    }
}

/// Why a start did not give a point, for the table.
pub(super) fn describe_failure(w: &WatchOutcome) -> String {
    if w.interrupted {
        return format!("stopped by you (run {})", w.run_id);
    }
    if w.oom {
        return format!("out of memory (run {})", w.run_id);
    }
    if w.over_budget {
        return format!(
            "its processes passed {} (run {})",
            format_bytes(w.budget_bytes.unwrap_or(0)),
            w.run_id
        );
    }
    match (w.exit_code, w.signal) {
        (_, Some(sig)) if !w.stopped_at_limit => format!(
            "the command was {} (run {})",
            crate::jobs::watch::describe_signal(sig),
            w.run_id
        ),
        (Some(c), _) if c != 0 => format!("the command exited with code {c} (run {})", w.run_id),
        _ => format!("run {} ended before its steps settled", w.run_id),
    }
}

pub(super) fn add_point(
    ledger: &Ledger,
    run_id: i64,
    out: &mut SweepOutcome,
    p: Point,
    on: &mut dyn FnMut(&Update),
) -> Result<(), CoreError> {
    let seq = u32::try_from(out.points.len()).unwrap_or(u32::MAX);
    ledger.add_point(run_id, seq, &p)?;
    let cautions = p.cautions();
    on(&Update::Point { point: p.clone() });
    out.points.push(p);
    for w in cautions {
        if !out.warnings.contains(&w) {
            on(&Update::Warning { message: w.clone() });
            out.warnings.push(w);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::timed_span;

    #[test]
    fn a_starts_span_is_its_timed_steps_where_they_have_readings() {
        // Steps 6..=20 after the warm-up, one every 0.1 s from 1.0 s; its timing settled over
        // the last 8; readings every 0.2 s from 1.0 s; the exit read at 5.0 s.
        let stamps: Vec<(u32, f64)> = (6..=20)
            .map(|n| (n, 1.0 + f64::from(n - 6) * 0.1))
            .collect();
        let readings = |a: f64, b: f64| {
            (0..40)
                .map(|i| 1.0 + f64::from(i) * 0.2)
                .filter(|t| *t >= a && *t <= b)
                .count() as u32
        };
        let last = stamps[stamps.len() - 1].1;
        let (from, to) = timed_span(&stamps, 8, Some(1.0), 5.0, readings);
        // Its window: steps 13..=20 (the last 8), 1.7 s to 2.4 s.
        assert!((from - 1.7).abs() < 1e-9 && to == last, "{from} {to}");
        // Too few readings in the window: from the end of the warm-up, still to the last step.
        let sparse = |a: f64, b: f64| u32::from(a <= 1.0 && b >= 1.0) + u32::from(b >= 2.0);
        assert_eq!(timed_span(&stamps, 8, Some(1.0), 5.0, sparse), (1.0, last));
        // None at all between the steps: to the exit, as a start too short to read.
        assert_eq!(timed_span(&stamps, 8, Some(1.0), 5.0, |_, _| 1), (1.0, 5.0));
        assert_eq!(timed_span(&[], 8, None, 5.0, readings), (0.0, 5.0));
    }
}
