//! The run's running sum: each line, memory reading and observer event taken in as it arrives
//! (epochs, fallbacks, markers, the observed iterations), and the memory samples written as they go.

use super::*;

pub(super) struct Tally {
    pub(super) run_id: i64,
    pub(super) seq: u32,
    pub(super) peak: u64,
    pub(super) last: Option<MemoryReading>,
    pub(super) readings: usize,
    pub(super) epochs: Vec<EpochSample>,
    pub(super) last_epoch_at: f64,
    pub(super) fallback_ops: Vec<String>,
    pub(super) ops: std::collections::HashMap<String, (f64, u32)>,
    pub(super) busy: Option<crate::gpu_busy::BusySampler>,
    pub(super) oom: bool,
    pub(super) stopped_at_limit: bool,
    pub(super) over_budget: bool,
    pub(super) step_at: Vec<f64>,
    pub(super) data_at: Vec<f64>,
    /// What the observer inside the command reported.
    pub(super) obs: crate::instrument::Observation,
    /// Epoch lines matched by the default regex while the observer runs: they count only if
    /// the observer reports no epochs of its own (a training loop without a DataLoader).
    pub(super) held_epochs: Vec<(EpochSample, Option<MemoryReading>, Option<f64>, f64)>,
    /// Where the epochs named in output lines stand.
    pub(super) line_state: crate::readings::LineEpochs,
    /// Epochs were recorded from output lines (the observer's are then not used).
    pub(super) line_epochs: bool,
    /// Samples trained when the last epoch ended (for each epoch's throughput).
    pub(super) samples_at_epoch: f64,
    pub(super) interrupted: bool,
    /// The step from which step time settled (see [`settled_from`]).
    pub(super) window: Option<usize>,
    /// The metrics reported so far, the last value of each.
    pub(super) metrics: std::collections::BTreeMap<String, f64>,
    /// Other processes' load while the run was timed (not for a sweep's start, whose sweep
    /// reads its own).
    pub(super) load: Option<crate::load::PointLoad>,
    /// The machine's state while the run was timed.
    pub(super) conditions: Option<crate::conditions::TimedConditions>,
    /// Each epoch's, in the order of `epochs`.
    pub(super) epoch_conditions: Vec<crate::conditions::TimedConditions>,
    /// The most one child process (a DataLoader worker, mostly) held in any reading.
    pub(super) worker_bytes: Option<u64>,
    /// The trainer [`Tally::worker_bytes`] was measured under.
    pub(super) workers_of: Option<u32>,
}

/// What reading the command's lines needs.
pub(super) struct LineContext<'a> {
    pub(super) matcher: &'a EpochMatcher,
    pub(super) pid: u32,
    pub(super) started: Instant,
    /// The start in seconds since the Unix epoch (the observer's clock).
    pub(super) started_wall: f64,
    pub(super) run_id: i64,
    /// Epoch lines wait for the observer's epochs (see [`Tally::held_epochs`]).
    pub(super) hold_epoch_lines: bool,
    /// `--metric` regexes.
    pub(super) metrics: &'a [(String, regex::Regex)],
}

impl Tally {
    /// One message from the readers or the sampler.
    pub(super) fn take(
        &mut self,
        msg: Msg,
        ledger: &Ledger,
        cx: &LineContext<'_>,
    ) -> Result<(), CoreError> {
        match msg {
            Msg::Reading(r) => self.reading(ledger, r, cx.pid),
            Msg::Line { line, at } => self.line(&line, at, ledger, cx),
            Msg::Event(ev) => self.event(ev, ledger, cx),
        }
    }

    /// An event from the observer.
    pub(super) fn event(
        &mut self,
        ev: crate::instrument::Event,
        ledger: &Ledger,
        cx: &LineContext<'_>,
    ) -> Result<(), CoreError> {
        if let crate::instrument::Event::Stall {
            waited_s,
            workers,
            alive,
            step,
            ..
        } = &ev
        {
            let stall = crate::instrument::LoaderStall {
                after_step: *step,
                waited_s: *waited_s,
                workers: *workers,
                alive: *alive,
                ended: false,
            };
            let _ = writeln!(
                std::io::stderr(),
                "headroom: the DataLoader may hang: {}. {}",
                stall.describe(),
                crate::instrument::stall_triage(
                    &stall,
                    self.obs
                        .observed
                        .loader
                        .as_ref()
                        .and_then(|l| l.start_method.as_deref())
                        .or(self.obs.observed.start_method.as_deref())
                )
            );
        }
        let Some(e) = self.obs.take(ev, cx.started_wall) else {
            return Ok(());
        };
        // Epochs already taken from the output (before any optimizer step) stay the run's.
        if cx.matcher.is_given() || self.line_epochs {
            return Ok(());
        }
        let now = cx.started.elapsed().as_secs_f64();
        let reading = read_memory(cx.pid, now).or_else(|| self.last.clone());
        let device = e.mem.as_ref().filter(|m| m.device != "cpu");
        let samples = self.obs.samples_so_far();
        // Each pass is timed from its start (the first from its first batch, not the
        // interpreter's start); its samples/s over that time less its evaluations (a
        // validation every so many steps trains nothing).
        let start = e.start.unwrap_or(self.last_epoch_at).min(e.at);
        let seconds = e.at - start;
        let training = seconds - self.obs.evaluated_between(start, e.at);
        let s = EpochSample {
            epoch: self.epochs.len() as u32 + 1,
            live_bytes: device.and_then(|m| m.allocated),
            cache_bytes: device.and_then(crate::instrument::DeviceMemory::cached),
            footprint_bytes: reading.as_ref().map(|r| self.epoch_footprint(r, cx.pid)),
            seconds,
            samples_per_s: (training > 0.0 && samples > self.samples_at_epoch)
                .then(|| (samples - self.samples_at_epoch) / training),
            cache_before_bytes: e.cache_before,
        };
        self.samples_at_epoch = samples;
        self.last_epoch_at = e.at;
        ledger.add_sample(cx.run_id, 100_000 + s.epoch, "epoch", &s)?;
        self.epochs.push(s);
        if let Some(r) = reading {
            self.reading(ledger, r, cx.pid)?;
        }
        Ok(())
    }

    /// A line of the command's output (already passed through), read for fallback warnings,
    /// OOMs, markers, MPS operation times and epoch boundaries.
    pub(super) fn line(
        &mut self,
        line: &str,
        at: f64,
        ledger: &Ledger,
        cx: &LineContext<'_>,
    ) -> Result<(), CoreError> {
        let (t, matcher) = (self, cx.matcher);
        if let Some(op) = fallback_op(line) {
            if !t.fallback_ops.contains(&op) {
                t.fallback_ops.push(op);
            }
        }
        t.oom |= crate::failure::classify(line) == crate::protocol::PointStatus::Oom;
        if let Some((name, value)) = metric_line(line) {
            t.metrics.insert(name, value);
        }
        for (name, re) in cx.metrics {
            if let Some(v) = re
                .captures(line)
                .and_then(|c| c.get(1))
                .and_then(|m| m.as_str().parse::<f64>().ok())
                .filter(|v| v.is_finite())
            {
                t.metrics.insert(name.clone(), v);
            }
        }
        if is_step_marker(line) {
            t.step_at.push(at);
        } else if is_data_marker(line) {
            t.data_at.push(at);
        }
        if let Some((op, ms)) = mps_op_gpu_ms(line) {
            let e = t.ops.entry(op).or_default();
            e.0 += ms;
            e.1 += 1;
        }
        // Once the observer has reported epochs, the lines are not needed; once torch is loaded
        // in the program (the observer's hello) they wait, since its DataLoader passes are the
        // better boundary (its events arrive on another channel, so an epoch's line can come
        // before the steps that led to it); without an observer they are recorded as they come,
        // so a Headroom killed mid-run keeps them.
        let hold = cx.hold_epoch_lines
            && !matcher.is_given()
            && !t.line_epochs
            && t.obs.observed.torch_version.is_some();
        if hold && !t.epochs.is_empty() {
            return Ok(());
        }
        // An epoch ends at the line that says so or at the one that starts the next count.
        let Some((n, since)) = t.line_state.line(matcher, line, at) else {
            return Ok(());
        };
        t.line_epoch(n, since, at, hold, ledger, cx)
    }

    /// Epoch `n`, read from the output, ended `at` seconds into the run; it began at `since`
    /// (none: the first, which begins at the loop's first batch where the observer saw it).
    pub(super) fn line_epoch(
        &mut self,
        n: u32,
        since: Option<f64>,
        at: f64,
        hold: bool,
        ledger: &Ledger,
        cx: &LineContext<'_>,
    ) -> Result<(), CoreError> {
        // The epoch line marks a boundary: memory now is that epoch's end. The boundary counts
        // even when no memory could be read (a command that printed it and exited before its
        // first reading): its memory is then unknown, not zero.
        let now = cx.started.elapsed().as_secs_f64();
        let reading = read_memory(cx.pid, now).or_else(|| self.last.clone());
        let s = EpochSample {
            epoch: n,
            live_bytes: None,
            cache_bytes: None,
            footprint_bytes: reading.as_ref().map(|r| self.epoch_footprint(r, cx.pid)),
            seconds: at - since.or(self.obs.observed.began_s).unwrap_or(0.0).min(at),
            samples_per_s: None,
            cache_before_bytes: None,
        };
        // Held lines wait for the observer's epochs, which time the run's epochs when it has
        // any (they arrive on another channel, a moment before or after the line).
        if hold {
            self.held_epochs.push((s, reading, since, at));
            return Ok(());
        }
        self.last_epoch_at = at;
        ledger.add_sample(cx.run_id, 100_000 + n, "epoch", &s)?;
        self.line_epochs = true;
        self.epochs.push(s);
        if let Some(r) = reading {
            self.reading(ledger, r, cx.pid)?;
        }
        Ok(())
    }

    pub(super) fn new(run_id: i64) -> Self {
        Self {
            run_id,
            seq: 0,
            peak: 0,
            last: None,
            readings: 0,
            epochs: Vec::new(),
            last_epoch_at: 0.0,
            fallback_ops: Vec::new(),
            ops: std::collections::HashMap::new(),
            busy: crate::gpu_busy::BusySampler::system(),
            oom: false,
            stopped_at_limit: false,
            over_budget: false,
            step_at: Vec::new(),
            data_at: Vec::new(),
            obs: crate::instrument::Observation::default(),
            held_epochs: Vec::new(),
            line_state: crate::readings::LineEpochs::default(),
            line_epochs: false,
            samples_at_epoch: 0.0,
            interrupted: false,
            window: None,
            metrics: std::collections::BTreeMap::new(),
            load: None,
            conditions: None,
            epoch_conditions: Vec::new(),
            worker_bytes: None,
            workers_of: None,
        }
    }

    pub(super) fn progress(&self, started: Instant, pid: u32) -> RunProgress<'_> {
        RunProgress {
            run_id: self.run_id,
            pid,
            seconds: started.elapsed().as_secs_f64(),
            steps: u32::try_from(self.steps()).unwrap_or(u32::MAX),
            epochs: &self.epochs,
            reading: self.last.as_ref(),
            device_peak_bytes: self
                .obs
                .observed
                .peak_device_held_bytes
                .or(self.obs.observed.peak_device_bytes),
        }
    }

    /// Steps seen: the observer's, or the script's `headroom-step` lines.
    pub(super) fn steps(&self) -> usize {
        self.step_at.len().max(self.obs.steps.len())
    }

    /// The observer's steps are the run's steps unless the script marks its own data stage
    /// (the markers then say what the user means by a step).
    pub(super) fn observer_steps(&self) -> bool {
        !self.obs.steps.is_empty() && self.data_at.is_empty()
    }

    /// When each step ended, seconds since the start.
    pub(super) fn step_times(&self) -> Vec<f64> {
        if self.observer_steps() {
            self.obs.steps.iter().map(|s| s.at).collect()
        } else {
            self.step_at.clone()
        }
    }

    /// A memory reading of the tree under `root`. Its workers are the trainer's children:
    /// those of the process Headroom started, or — when the observer's trainer is another
    /// (a notebook's kernel under Jupyter) — that one's.
    /// The footprint an epoch's end is judged by: the tree read now, less the trainer's
    /// DataLoader workers when its loader starts them again each pass (present or not by a few
    /// milliseconds; persistent workers stay in, since what they keep grows across epochs).
    fn epoch_footprint(&self, r: &MemoryReading, root: u32) -> u64 {
        let transient = self
            .obs
            .observed
            .loader
            .as_ref()
            .is_some_and(|l| l.num_workers > 0 && !l.persistent_workers);
        let trainer = self.obs.main_pid.or(self.obs.first_pid).unwrap_or(root);
        transient
            .then(|| crate::readings::tree_bytes_without_workers(root, trainer))
            .flatten()
            .unwrap_or(r.tree_bytes)
    }

    pub(super) fn reading(
        &mut self,
        ledger: &Ledger,
        r: MemoryReading,
        root: u32,
    ) -> Result<(), CoreError> {
        // The kernel's high-water mark too: a CPU step's activations, freed between two
        // readings, are the point's peak (sampled alone, a short start read low and the sweep's
        // memory line with it).
        self.peak = self.peak.max(r.tree_peak_bytes());
        // Until the observer hears from the trainer, it is taken to be the root; an estimate
        // made for another process than the trainer (Jupyter's kernel, before it imported
        // torch) is dropped.
        let trainer = self.obs.main_pid.or(self.obs.first_pid).unwrap_or(root);
        if self.workers_of != Some(trainer) {
            self.workers_of = Some(trainer);
            self.worker_bytes = None;
        }
        let each = if trainer == root {
            r.children_bytes
                .filter(|_| r.processes > 1)
                .map(|c| c / u64::from(r.processes - 1))
        } else {
            crate::readings::children_memory(trainer).map(|(b, n)| b / u64::from(n.max(1)))
        };

        if let Some(each) = each {
            self.worker_bytes = Some(self.worker_bytes.map_or(each, |w| w.max(each)));
        }
        self.seq += 1;
        self.readings += 1;
        ledger.add_sample(self.run_id, self.seq, "memory", &r)?;
        self.last = Some(r);
        Ok(())
    }
}
