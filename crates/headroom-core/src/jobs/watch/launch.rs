//! Starting the command: its own process group, the observer on its import path, its pipes or
//! a pseudo-terminal, its gate; and ending a group (signals, the grace before a kill).

use super::*;

/// How long a stopped command may take to end (its handler saving a checkpoint) before it is
/// killed.
pub const STOP_GRACE: Duration = Duration::from_secs(10);

pub(super) fn forward(pid: u32, own_group: bool, sig: i32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    // SAFETY: kill(2) with a pid (or process group) of the child this process started.
    unsafe {
        libc::kill(if own_group { -pid } else { pid }, sig);
    }
}

/// Sends `sig` to process group `pgid` (a sweep's start, run in its own group): SIGSTOP holds
/// a start waiting at its gate while another is timed, SIGCONT lets it go on.
pub fn signal_group(pgid: u32, sig: i32) {
    forward(pgid, true, sig);
}

/// Ends what is left of process group `pgid` (a sweep's start, run in its own group: its
/// DataLoader workers, a rank) and waits up to `bound` for all of it to be gone. Returns what
/// was still there at the bound (pids and names where the system lists them).
pub fn end_group(pgid: u32, bound: Duration) -> Option<String> {
    let Ok(g) = libc::pid_t::try_from(pgid) else {
        return None;
    };
    // SAFETY: kill(2) on the process group of a child this process started in its own group.
    let alive = || unsafe { libc::kill(-g, 0) == 0 };
    if alive() {
        // SAFETY: as above.
        unsafe {
            libc::kill(-g, libc::SIGKILL);
        }
    }
    let until = Instant::now() + bound;
    while alive() {
        if Instant::now() >= until {
            let left = group_members(pgid);
            return Some(if left.is_empty() {
                format!("processes of group {pgid}")
            } else {
                left.join(", ")
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// The processes of group `pgid` as `NAME (PID)`, from /proc (Linux; elsewhere none).
pub(super) fn group_members(pgid: u32) -> Vec<String> {
    crate::sysmem::group_members(pgid)
        .unwrap_or_default()
        .into_iter()
        .map(|(pid, s)| format!("{} ({pid})", s.name))
        .collect()
}

/// A command started and not yet watched ([`drive`] watches it). Its output passes through and
/// its memory is read meanwhile; started at a gate, it waits there before its first batch until
/// [`drive`] opens it, so its start-up can overlap another command's measurement.
pub struct Launched {
    pub(super) child: std::process::Child,
    pub(super) pid: u32,
    pub(super) own_group: bool,
    pub(super) shown: String,
    pub(super) program: String,
    pub(super) readers: Vec<std::thread::JoinHandle<()>>,
    pub(super) sampler: std::thread::JoinHandle<()>,
    pub(super) stop: Arc<AtomicBool>,
    pub(super) channel: Option<crate::instrument::Channel>,
    pub(super) rx: mpsc::Receiver<Msg>,
    pub(super) started: Instant,
    pub(super) started_wall: f64,
    pub(super) gated: bool,
}

impl std::fmt::Debug for Launched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launched")
            .field("pid", &self.pid)
            .field("command", &self.shown)
            .field("gated", &self.gated)
            .finish_non_exhaustive()
    }
}

impl Launched {
    /// Where it stands before its gate.
    pub fn gate_state(&mut self) -> GateState {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return GateState::Exited;
        }
        match &self.channel {
            Some(c) if self.gated => c.gate_state(),
            _ => GateState::Starting,
        }
    }

    /// The process started.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Seconds since it was started.
    pub fn age(&self) -> Duration {
        self.started.elapsed()
    }

    /// Ends it unwatched (a start begun ahead that the sweep no longer needs): its process
    /// group is killed and nothing is recorded.
    pub fn abort(mut self) {
        forward(self.pid, self.own_group, libc::SIGKILL);
        let _ = self.child.wait();
        self.stop.store(true, Ordering::SeqCst);
        // The pipes close with the group; a reader still held open by a stray process that
        // left the group is left behind rather than waited on.
        let until = Instant::now() + Duration::from_secs(2);
        while self.readers.iter().any(|r| !r.is_finished()) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.sampler.join();
    }
}

/// Starts `command` as [`run_command`] does, without watching it yet; with `gated` (and the
/// observer on), it stops before its first batch until [`drive`] opens its gate.
pub fn launch(command: &[String], opts: &WatchOptions, gated: bool) -> Result<Launched, CoreError> {
    use std::io::IsTerminal;
    use std::os::unix::process::CommandExt;
    let (program, args) = command.split_first().ok_or_else(|| {
        CoreError::InvalidInput(
            "give the command to run after --, e.g. headroom run -- python train.py".into(),
        )
    })?;
    let shown = command.join(" ");
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::inherit())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Its own process group, so a signal or a stop reaches its DataLoader workers and ranks
    // too; not when it reads a terminal, where a background group could not read its prompts
    // (the terminal's Ctrl-C then reaches the command directly). A sweep's start always has
    // its own group: it must be stopped whole (its DataLoader workers too) before the next one.
    let own_group = gated || opts.settle || !std::io::stdin().is_terminal();
    if own_group {
        cmd.process_group(0);
    }
    if std::env::var_os("PYTORCH_ENABLE_MPS_FALLBACK").is_none() {
        cmd.env("PYTORCH_ENABLE_MPS_FALLBACK", "1");
    }
    // Python block-buffers a pipe: without this, markers and epoch lines would arrive in bursts
    // and their times would say nothing.
    if std::env::var_os("PYTHONUNBUFFERED").is_none() {
        cmd.env("PYTHONUNBUFFERED", "1");
    }
    if let Some(dir) = &opts.dir {
        cmd.current_dir(dir);
    }
    cmd.envs(opts.env.iter().map(|(k, v)| (k, v)));
    if opts.instrument
        && !opts
            .env
            .iter()
            .any(|(k, _)| k == crate::instrument::STALL_ENV)
    {
        cmd.env(
            crate::instrument::STALL_ENV,
            crate::instrument::DEFAULT_STALL_S.to_string(),
        );
    }
    // A start stopped once it settles, or after so many steps (`--steps`, `numerics`): it is
    // stopped on what the observer sent, so that must come promptly. (Headroom's own
    // environment may set it, for a benchmark of what it changes.)
    if opts.instrument
        && (opts.settle || opts.max_steps.is_some())
        && std::env::var_os(crate::instrument::FLUSH_ENV).is_none()
    {
        cmd.env(
            crate::instrument::FLUSH_ENV,
            crate::instrument::SETTLE_FLUSH_S.to_string(),
        );
    }
    if opts.profile_ops {
        cmd.env(
            "PYTORCH_MPS_LOG_PROFILE_INFO",
            MPS_PROFILE_LOG_OPTIONS.to_string(),
        );
    }
    // At a terminal (and not a sweep's start), the command gets a pseudo-terminal for its
    // output, so that its progress bars draw live; its lines are read from it as from pipes.
    let pty = if opts.settle || gated {
        None
    } else if opts.stdout_to_stderr {
        crate::child::pty_for(&std::io::stderr())
    } else {
        crate::child::pty_for(&std::io::stdout())
    };
    let master = match pty {
        Some((master, slave)) => match slave.try_clone() {
            Ok(copy) => {
                cmd.stdout(Stdio::from(slave)).stderr(Stdio::from(copy));
                Some(master)
            }
            Err(_) => None,
        },
        None => None,
    };
    // Bounded: a command that prints faster than its lines are read waits for them (as it
    // would at a slow terminal) instead of queueing them in Headroom's memory.
    let (tx, rx) = mpsc::sync_channel(QUEUE);
    let channel = if opts.instrument {
        let c = crate::instrument::Channel::open(tx.clone(), Msg::Event)?;
        cmd.envs(c.env());
        if gated {
            cmd.env(crate::instrument::GATE_ENV, c.gate_path());
        }
        Some(c)
    } else {
        None
    };
    let spawned = cmd.spawn();
    // The command holds the pseudo-terminal's slave side now; this process must not, or its
    // master would never read the end.
    drop(cmd);
    let mut child = spawned.map_err(|e| {
        CoreError::InvalidInput(format!(
            "cannot start {program}: {e}; check the command (is {program} on PATH?)"
        ))
    })?;
    let started = Instant::now();
    let started_wall = now_unix();
    let stop = Arc::new(AtomicBool::new(false));
    let pid = child.id();
    let readers: Vec<_> = [
        child
            .stdout
            .take()
            .map(|p| (opts.stdout_to_stderr, Box::new(p) as Box<dyn Read + Send>)),
        child
            .stderr
            .take()
            .map(|p| (true, Box::new(p) as Box<dyn Read + Send>)),
        master.map(|m| {
            (
                opts.stdout_to_stderr,
                Box::new(std::fs::File::from(m)) as Box<dyn Read + Send>,
            )
        }),
    ]
    .into_iter()
    .flatten()
    .map(|(to_stderr, pipe)| {
        let tx = tx.clone();
        std::thread::spawn(move || pump(pipe, to_stderr, started, &tx))
    })
    .collect();
    let sampler = {
        let (tx, stop) = (tx.clone(), Arc::clone(&stop));
        let interval = opts.interval;
        std::thread::spawn(move || sampler(pid, interval, stop, tx))
    };
    Ok(Launched {
        child,
        pid,
        own_group,
        shown,
        program: program.clone(),
        readers,
        sampler,
        stop,
        channel,
        rx,
        started,
        started_wall,
        gated: gated && opts.instrument,
    })
}
