//! The event loop: the command's output pumped through, memory sampled, observer events taken,
//! signals forwarded, until the command ends (or, for `watch --pid`, the process goes).

use super::*;

/// Samples `pid` every `interval` until it is gone or `stop` is set, sending readings.
pub(super) fn sampler(
    pid: u32,
    interval: Duration,
    stop: Arc<AtomicBool>,
    tx: mpsc::SyncSender<Msg>,
) {
    let start = Instant::now();
    while !stop.load(Ordering::SeqCst) {
        match read_memory(pid, start.elapsed().as_secs_f64()) {
            // A reading that finds the queue full is skipped (the next comes within an
            // interval): the sampler never waits on the loop, so stopping it never hangs.
            Some(r) => match tx.try_send(Msg::Reading(r)) {
                Ok(()) | Err(mpsc::TrySendError::Full(_)) => {}
                Err(mpsc::TrySendError::Disconnected(_)) => return,
            },
            None => return,
        }
        std::thread::sleep(interval);
    }
}

/// The most lines, events and readings queued for the watching loop; at about 200 bytes each,
/// at most a few MiB.
pub(super) const QUEUE: usize = 16 * 1024;

/// The longest line kept for reading (output passes through whole, as it comes).
pub(super) const MAX_LINE: usize = 64 * 1024;

/// Passes a pipe of the command's output through as its bytes come (progress bars, prompts),
/// and sends its lines (ended by `\n` or `\r`, each cut at [`MAX_LINE`]) to be read.
pub(super) fn pump(
    mut pipe: impl Read,
    to_stderr: bool,
    started: Instant,
    tx: &mpsc::SyncSender<Msg>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut line: Vec<u8> = Vec::new();
    let send = |line: &mut Vec<u8>| {
        let text = String::from_utf8_lossy(line).into_owned();
        line.clear();
        let at = started.elapsed().as_secs_f64();
        tx.send(Msg::Line { line: text, at }).is_ok()
    };
    loop {
        let n = match pipe.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let chunk = &buf[..n];
        let wrote = if to_stderr {
            let mut e = std::io::stderr().lock();
            e.write_all(chunk).and_then(|()| e.flush())
        } else {
            let mut o = std::io::stdout().lock();
            o.write_all(chunk).and_then(|()| o.flush())
        };
        if matches!(&wrote, Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe) {
            // Nobody reads Headroom's output any more (`headroom run … | head -1`), so nobody
            // reads the command's: closing this end tells it at its next write (SIGPIPE or
            // EPIPE), as the shell's pipe would have without Headroom between, and Headroom then
            // exits with the status that gives, never a silent 0.
            return;
        }
        for &b in chunk {
            if b == b'\n' || b == b'\r' {
                if !line.is_empty() && !send(&mut line) {
                    return;
                }
            } else if line.len() < MAX_LINE {
                line.push(b);
            }
        }
    }
    if !line.is_empty() {
        send(&mut line);
    }
}

/// Sends `sig` to the command: to its process group when it has its own.
/// How long a sweep's start may go without an iteration once its loop began (its first batch,
/// module call or backward) before it is stopped as one that cannot be timed.
pub const NO_ITERATION_S: f64 = 60.0;

/// [`NO_ITERATION_S`], or `HEADROOM_NO_ITERATION_S` where a test sets it shorter.
pub(super) fn no_iteration_s() -> f64 {
    std::env::var("HEADROOM_NO_ITERATION_S")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|s: &f64| *s > 0.0)
        .unwrap_or(NO_ITERATION_S)
}

/// Watches a [`launch`]ed command to its end (opening its gate first), recording it in
/// `ledger` as a run; `opts.max_time` counts from here.
pub fn drive(
    launched: Launched,
    matcher: &EpochMatcher,
    opts: &WatchOptions,
    ledger: &Ledger,
    on: &mut dyn FnMut(&RunProgress<'_>),
) -> Result<WatchOutcome, CoreError> {
    let Launched {
        mut child,
        pid,
        own_group,
        shown,
        program,
        readers,
        sampler: sampler_thread,
        stop,
        channel,
        rx,
        started,
        started_wall,
        gated,
    } = launched;
    let released = Instant::now();
    let waited_s = gated.then(|| released.duration_since(started).as_secs_f64());
    if let (true, Some(c)) = (gated, &channel) {
        c.open_gate()?;
    }
    let run_id = begin(ledger, RunKind::Run, &shown, opts)?;
    let mut t = Tally::new(run_id);
    let cx = LineContext {
        matcher,
        pid,
        started,
        started_wall,
        run_id,
        hold_epoch_lines: opts.instrument,
        metrics: &opts.metrics,
    };
    let stop_command = |why: String| {
        let _ = writeln!(std::io::stderr(), "headroom: {why}");
        forward(pid, own_group, libc::SIGKILL);
    };
    let mut child_done = None;
    let (mut asked_at, mut killed_after_grace) = (None::<Instant>, false);
    let (mut told_at, mut told_epochs, mut told_steps) = (Instant::now(), 0usize, 0usize);
    // What else used the machine while the run was timed, as a sweep's points record it: read
    // from its start, then again from the end of its warm-up steps once it has them. A sweep's
    // start (`settle`) is read by its sweep, which also leaves out the starts at their gates.
    let mut load = (!opts.settle).then(|| {
        let mut l = crate::load::OtherLoad::new();
        if own_group {
            l.exclude_group(pid);
        }
        l.start();
        l
    });
    let mut load_from_steps = false;
    // The machine's state through the run (thermal, power, energy), from the end of its
    // warm-up as the load is.
    let mut conditions = (!opts.settle)
        .then(|| crate::conditions::ConditionLog::start(None, crate::conditions::INTERVAL));
    let mut conditions_from = 0.0;
    // When the last step came, in the conditions' time: the run's span ends there, not with the
    // process's exit (its shutdown at idle power is no part of the joules per sample).
    let (mut last_step_at, mut steps_seen) = (None, 0usize);
    // When each epoch ended, in the conditions' time: each epoch's span.
    let mut epoch_ends: Vec<f64> = Vec::new();
    // Lines, events and readings until both pipes close (the child and anything holding them
    // is done).
    while readers.iter().any(|h| !h.is_finished()) {
        // A sweep's start is told of each step as it comes (its sweep times the start's
        // conditions to its last step, not to the process's exit).
        if t.epochs.len() != told_epochs
            || told_at.elapsed() >= opts.interval
            || (opts.settle && t.steps() != told_steps)
        {
            (told_at, told_epochs, told_steps) = (Instant::now(), t.epochs.len(), t.steps());
            on(&t.progress(started, pid));
        }
        let sig = opts.interrupt.swap(0, Ordering::SeqCst);
        if sig != 0 {
            t.interrupted = true;
            // At a terminal the command has the terminal's Ctrl-C already.
            if own_group || sig != libc::SIGINT {
                forward(pid, own_group, sig);
                asked_at.get_or_insert_with(Instant::now);
            }
        }
        // A command that catches the signal to save a checkpoint (Lightning does) has its
        // grace; one that does not end within it is killed, so that Stop always stops.
        if asked_at.is_some_and(|a| a.elapsed() >= STOP_GRACE)
            && child_done.is_none()
            && !killed_after_grace
        {
            killed_after_grace = true;
            stop_command(format!(
                "the command did not stop within {} s of being asked to; killing it",
                STOP_GRACE.as_secs()
            ));
        }
        let over_time = opts
            .max_time
            .filter(|l| released.elapsed() >= *l)
            .map(|l| format!("{:.0} s", l.as_secs_f64()));
        let over_steps = opts
            .max_steps
            .filter(|n| t.steps() >= *n as usize)
            .map(|n| format!("{n} steps"));
        if let Some(limit) = over_time.or(over_steps) {
            if !t.stopped_at_limit {
                t.stopped_at_limit = true;
                stop_command(format!("stopping the command at its limit of {limit}"));
            }
        }
        if opts.settle && t.window.is_none() && !t.stopped_at_limit {
            if let Some(from) = settled_from(&t.step_times()) {
                t.window = Some(from);
                t.stopped_at_limit = true;
                stop_command(format!(
                    "step time settled after {} steps; stopping the command",
                    t.steps()
                ));
            }
        }
        // A sweep's start whose loop began but gives no iteration Headroom can see is stopped
        // within a bound, not run to its end: its point says why.
        if opts.settle && !t.stopped_at_limit && t.steps() == 0 {
            let began = t.obs.observed.began_s;
            let bound = no_iteration_s();
            if began.is_some_and(|b| started.elapsed().as_secs_f64() - b > bound) {
                t.stopped_at_limit = true;
                stop_command(format!(
                    "{}, {bound:.0} s after the loop began; stopping the command",
                    crate::instrument::Observed::default().loop_shape()
                ));
            }
        }
        if let Some(budget) = opts.budget_bytes.filter(|b| t.peak > *b) {
            if !t.over_budget {
                t.over_budget = true;
                stop_command(format!(
                    "stopping the command: its processes hold {}, over the {} memory budget",
                    crate::budget::format_bytes(t.peak),
                    crate::budget::format_bytes(budget)
                ));
            }
        }
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(msg) => t.take(msg, ledger, &cx)?,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if let Some(c) = &conditions {
            while epoch_ends.len() < t.epochs.len() {
                epoch_ends.push(c.now());
            }
            if t.steps() != steps_seen {
                steps_seen = t.steps();
                last_step_at = Some(c.now());
            }
        }
        if !load_from_steps && t.steps() > super::SETTLE_WARMUP {
            load_from_steps = true;
            if let Some(l) = load.as_mut() {
                l.start();
            }
            conditions_from = conditions.as_ref().map_or(0.0, |c| c.mark());
        }
        // A command that exited while something it started holds its pipes open: the run ends
        // with the command (its group is told to stop).
        if child_done.is_none() {
            if let Ok(Some(status)) = child.try_wait() {
                child_done = Some((status, Instant::now()));
            }
        }
        if let Some((_, at)) = child_done {
            if at.elapsed() > Duration::from_secs(5) {
                if own_group {
                    forward(pid, own_group, libc::SIGKILL);
                }
                break;
            }
        }
    }
    let status = match child_done {
        Some((s, _)) => s,
        None => child
            .wait()
            .map_err(|e| CoreError::Worker(format!("wait for {program}: {e}")))?,
    };
    t.load = load.as_mut().and_then(|l| l.read(&[]));
    // The run's conditions to its end; its epochs' once the last of them are in.
    let conditions_end = conditions
        .as_ref()
        .map(crate::conditions::ConditionLog::mark);
    if let (Some(c), Some(end)) = (&conditions, conditions_end) {
        let to = last_step_at
            .filter(|at| {
                load_from_steps
                    && *at > conditions_from
                    && c.span(conditions_from, *at).samples >= 2
            })
            .unwrap_or(end);
        t.conditions = Some(c.span(conditions_from, to));
    }
    stop.store(true, Ordering::SeqCst);
    let _ = sampler_thread.join();
    if let Some(c) = channel {
        c.close(Duration::from_secs(2));
    }
    // Whatever arrived after the pipes closed: the last lines and events may still be queued.
    for msg in rx.try_iter() {
        t.take(msg, ledger, &cx)?;
    }
    // The epoch still counting in the output ends with a command that ran to its end.
    if status.success() && !t.stopped_at_limit && !t.interrupted {
        let at = started.elapsed().as_secs_f64();
        if let Some((n, since)) = t.line_state.finish() {
            let hold = cx.hold_epoch_lines
                && !matcher.is_given()
                && !t.line_epochs
                && t.obs.observed.torch_version.is_some();
            if !hold || t.epochs.is_empty() {
                t.line_epoch(n, since, at, hold, ledger, &cx)?;
            }
        }
    }
    // Epoch lines count when the observer saw no epochs (a loop without a DataLoader); the
    // first is timed from the loop's first batch.
    if t.epochs.is_empty() {
        let began = t.obs.observed.began_s;
        for (mut s, reading, since, at) in std::mem::take(&mut t.held_epochs) {
            s.seconds = at - since.or(began).unwrap_or(0.0).min(at);
            ledger.add_sample(run_id, 100_000 + s.epoch, "epoch", &s)?;
            t.epochs.push(s);
            if let Some(r) = reading {
                t.reading(ledger, r, pid)?;
            }
        }
    }
    if let (Some(c), Some(end)) = (conditions.take(), conditions_end) {
        // Each epoch from the end of the one before (the first from the start); epochs only
        // known at the end (held for the observer, or ended with the command) end there.
        let mut from = 0.0;
        for i in 0..t.epochs.len() {
            let to = epoch_ends.get(i).copied().unwrap_or(end);
            let mut e = c.span(from, to);
            e.unavailable.clear();
            t.epoch_conditions.push(e);
            from = to;
        }
        drop(c.finish());
    }
    let signal = {
        use std::os::unix::process::ExitStatusExt;
        status.signal()
    };
    // Stopped at its own step or time bound is a finished run; over the budget, or stopped by
    // the user, is not.
    let success = status.success() || (t.stopped_at_limit && !t.over_budget && !t.interrupted);
    let end = Ending {
        command: shown,
        exit_code: status.code(),
        signal,
        success,
        waited_s,
    };
    finish(ledger, t, end, started, opts)
}

/// Samples process `pid` until it exits or `stop` is set.
pub fn watch_pid(
    pid: u32,
    opts: &WatchOptions,
    ledger: &Ledger,
    stop: &Arc<AtomicBool>,
    on: &mut dyn FnMut(&MemoryReading),
) -> Result<WatchOutcome, CoreError> {
    let started = Instant::now();
    let first = read_memory(pid, 0.0).ok_or_else(|| {
        CoreError::InvalidInput(format!(
            "no process {pid} to watch (or no permission to read its memory); `ps` lists the running ones"
        ))
    })?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            String::from_utf8_lossy(&b)
                .replace('\0', " ")
                .trim()
                .to_owned()
        })
        .unwrap_or_else(|_| format!("pid {pid}"));
    let run_id = begin(ledger, RunKind::Watch, &cmdline, opts)?;
    let mut t = Tally::new(run_id);
    on(&first);
    t.reading(ledger, first, pid)?;
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(opts.interval);
        match read_memory(pid, started.elapsed().as_secs_f64()) {
            Some(r) => {
                on(&r);
                t.reading(ledger, r, pid)?;
            }
            None => break,
        }
    }
    let end = Ending {
        command: cmdline,
        exit_code: None,
        signal: None,
        success: true,
        waited_s: None,
    };
    finish(ledger, t, end, started, opts)
}
