//! A start begun at a gate (a sweep's next start, begun while the current one is measured): the
//! real observer in a real Python stops the program before its first batch-sized work, lets it
//! through when the gate opens, and ends it when the sweep is gone.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use headroom_core::jobs::watch::{drive, launch, GateState, Launched, WatchOptions};
use headroom_core::readings::EpochMatcher;
use headroom_model::epochs::EpochThresholds;
use headroom_store::ledger::Ledger;

fn python() -> PathBuf {
    std::env::var_os("HEADROOM_TEST_PYTHON").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python"),
        PathBuf::from,
    )
}

/// A loop with no DataLoader: its first module call is where it waits.
const MODULE_LOOP: &str = r#"
import sys, torch, torch.nn as nn
model = nn.Linear(8, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
open(sys.argv[1], "w").write("before")
for i in range(30):
    loss = model(torch.randn(4, 8)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    open(sys.argv[1], "w").write(f"step {i}")
"#;

/// No DataLoader and no module: it waits after its first optimizer step, inside that step.
const BARE_LOOP: &str = r#"
import sys, torch
w = torch.zeros(3, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
open(sys.argv[1], "w").write("before")
for i in range(30):
    loss = (w * torch.randn(3)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    open(sys.argv[1], "w").write(f"step {i}")
"#;

struct Case {
    dir: tempfile::TempDir,
    marker: PathBuf,
    command: Vec<String>,
    opts: WatchOptions,
}

fn case(script: &str) -> Case {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("t.py"), script).expect("script");
    let marker = dir.path().join("marker");
    let command = vec![
        python().display().to_string(),
        dir.path().join("t.py").display().to_string(),
        marker.display().to_string(),
    ];
    let mut opts = WatchOptions::for_pid(Duration::from_millis(100), EpochThresholds::default());
    opts.instrument = true;
    opts.stdout_to_stderr = true;
    Case {
        dir,
        marker,
        command,
        opts,
    }
}

fn wait_for(l: &mut Launched, want: GateState) {
    let until = Instant::now() + Duration::from_secs(120);
    loop {
        let s = l.gate_state();
        if s == want {
            return;
        }
        assert!(
            s != GateState::Exited && Instant::now() < until,
            "waited for {want:?}, found {s:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn marker(c: &Case) -> String {
    std::fs::read_to_string(&c.marker).unwrap_or_default()
}

/// Held at the gate: the program got as far as its loop and no further, until the gate opened.
fn held_then_let_through(script: &str) {
    let c = case(script);
    let mut l = launch(&c.command, &c.opts, true).expect("launch");
    wait_for(&mut l, GateState::Waiting);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(marker(&c), "before", "no step while at the gate");
    let ledger = Ledger::open(&c.dir.path().join("ledger.sqlite")).expect("ledger");
    let matcher = EpochMatcher::new(headroom_core::readings::DEFAULT_EPOCH_PATTERN).expect("re");
    let w = drive(l, &matcher, &c.opts, &ledger, &mut |_| {}).expect("drive");
    assert_eq!(w.exit_code, Some(0), "{w:?}");
    assert_eq!(marker(&c), "step 29");
    let waited = w.waited_s.expect("waited at its gate");
    assert!(waited >= 0.5, "{waited}");
    assert!(
        w.first_step_s.is_some_and(|f| f > waited),
        "its first step came after the gate opened: {:?} vs {waited}",
        w.first_step_s
    );
    assert!(w.steps >= 29, "{w:?}");
}

#[test]
fn a_loop_without_a_dataloader_waits_at_its_first_module_call() {
    held_then_let_through(MODULE_LOOP);
}

#[test]
fn a_loop_without_modules_waits_inside_its_first_step() {
    held_then_let_through(BARE_LOOP);
}

fn alive(pid: u32) -> bool {
    // A zombie (ended, not yet reaped) is not alive.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

#[test]
fn a_start_not_needed_is_killed_and_one_whose_sweep_is_gone_ends_itself() {
    let c = case(MODULE_LOOP);
    let mut l = launch(&c.command, &c.opts, true).expect("launch");
    wait_for(&mut l, GateState::Waiting);
    let pid = l.pid();
    l.abort();
    assert!(!alive(pid), "aborted");
    assert_eq!(marker(&c), "before");

    // The sweep gone without a word (its folder removed with it): the program does not run on.
    let c = case(MODULE_LOOP);
    let mut l = launch(&c.command, &c.opts, true).expect("launch");
    wait_for(&mut l, GateState::Waiting);
    let pid = l.pid();
    drop(l);
    let until = Instant::now() + Duration::from_secs(10);
    while alive(pid) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!alive(pid), "ended itself");
    assert_eq!(marker(&c), "before", "and never stepped");
}
