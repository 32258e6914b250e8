//! `headroom run -- CMD` on real Python scripts written here, and `headroom watch --pid` on a
//! real process of known size.

use std::process::{Command, Stdio};

use crate::common::{after_output, python, Home};

/// Retains 40 MiB per "epoch", prints an epoch line each time and one real MPS fallback warning.
const LEAKY: &str = r#"
import sys, time
keep = []
for e in range(1, 6):
    block = bytearray(40 * 1024 * 1024)
    for i in range(0, len(block), 4096):
        block[i] = 1
    keep.append(block)
    time.sleep(0.2)
    print(f"Epoch {e}/5: loss {1.0 / e:.3f}", flush=True)
print("UserWarning: The operator 'aten::_upsample_bilinear2d_aa.out' is not currently supported on the MPS backend and will fall back to run on the CPU.", file=sys.stderr, flush=True)
sys.exit(int(sys.argv[sys.argv.index("--exit") + 1]) if "--exit" in sys.argv else 0)
"#;

#[test]
fn a_script_that_retains_memory_per_epoch_is_flagged_and_its_output_passes_through() {
    let home = Home::new();
    let script = home.path().join("train.py");
    std::fs::write(&script, LEAKY).expect("script");
    let py = python();
    let out = home.run(&[
        "run",
        "--interval-ms",
        "100",
        "--json",
        "--",
        py.to_str().expect("utf-8"),
        script.to_str().expect("utf-8"),
        "--batch-size",
        "64",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // With --json the command's stdout passes through on stderr: stdout is the document alone.
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("Epoch 3/5: loss 0.333"),
        "output passes through: {text}"
    );
    assert!(text.contains("fall back to run on the CPU"));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON alone");
    assert_eq!(s["epochs"].as_array().map(Vec::len), Some(5), "{s}");
    assert_eq!(s["verdict"]["kind"], "leak_suspected", "{}", s["verdict"]);
    assert_eq!(s["batch"], 64);
    assert_eq!(s["exit_code"], 0);
    assert_eq!(s["fallback"], true);
    assert_eq!(s["fallback_ops"][0], "aten::_upsample_bilinear2d_aa.out");
    // torch's version is what the program's own process imported: none here.
    assert_eq!(s["torch_version"], serde_json::Value::Null, "{s}");
    // 5 × 40 MiB retained: the tree's peak is at least that.
    assert!(
        s["peak_tree_bytes"]
            .as_u64()
            .is_some_and(|b| b >= 200 << 20),
        "{s}"
    );
    let id = s["run_id"].as_i64().expect("run id").to_string();
    let (_, shown) = home.json(&["ledger", "show", &id, "--json"]);
    assert_eq!(shown["run"]["kind"], "run");
    assert_eq!(shown["run"]["status"], "complete");
    assert_eq!(shown["run"]["fallback"], true);
    assert_eq!(shown["run"]["chosen_batch"], 64);
    assert_eq!(
        shown["samples"].as_array().map(Vec::len),
        Some(5),
        "epoch samples"
    );
    // Its report names the fallback operator and draws memory per epoch.
    let dir = home.path().join("report");
    let r = home.run(&[
        "ledger",
        "export",
        &id,
        "--format",
        "md",
        "--out",
        dir.to_str().expect("utf-8"),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let md = std::fs::read_to_string(dir.join(format!("run-{id}.md"))).expect("md");
    assert!(
        md.contains("| CPU fallback | yes: aten::_upsample_bilinear2d_aa.out |"),
        "{md}"
    );
    assert!(md.contains(&format!("(run-{id}-memory.png)")), "{md}");
    assert!(dir.join(format!("run-{id}-memory.png")).is_file());
}

#[test]
fn the_commands_exit_code_is_passed_through_and_the_run_kept() {
    let home = Home::new();
    let script = home.path().join("fail.py");
    std::fs::write(&script, LEAKY).expect("script");
    let out = home.run(&[
        "run",
        "--",
        python().to_str().expect("utf-8"),
        script.to_str().expect("utf-8"),
        "--exit",
        "3",
    ]);
    assert_eq!(out.status.code(), Some(3));
    let runs = home.runs();
    assert_eq!(runs[0]["kind"], "run");
    assert_eq!(runs[0]["status"], "failed");
    assert!(runs[0]["note"]
        .as_str()
        .is_some_and(|n| n.contains("exited with code 3")));
    let missing = home.run(&["run", "--", "/no/such/program"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot start /no/such/program"));
}

#[test]
fn watch_follows_a_process_of_known_size_until_it_exits() {
    let home = Home::new();
    // 150 MiB, every page touched, then 2 s of quiet.
    let mut child = Command::new(python())
        .args([
            "-c",
            "import time\nb = bytearray(150 * 1024 * 1024)\nfor i in range(0, len(b), 4096): b[i] = 1\nprint('ready', flush=True)\ntime.sleep(2)",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("python");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().expect("stdout")),
        &mut line,
    )
    .expect("ready");
    let pid = child.id().to_string();
    let (out, v) = home.json(&["watch", "--pid", &pid, "--interval-ms", "100", "--json"]);
    let _ = child.wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(v["readings"].as_u64().is_some_and(|n| n >= 5), "{v}");
    let peak = v["peak_tree_bytes"].as_u64().expect("peak");
    assert!(
        (150 << 20..400 << 20).contains(&peak),
        "peak {peak} for a 150 MiB process"
    );
    let gone = home.run(&["watch", "--pid", "999999999"]);
    assert_eq!(gone.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&gone.stderr).contains("no process 999999999"));
}

#[test]
#[cfg(target_os = "linux")]
fn killing_headroom_mid_run_loses_no_recorded_sample() {
    use std::io::BufRead;
    let home = Home::new();
    let script = "import time\nfor e in range(1, 40):\n    print(f'epoch {e}', flush=True)\n    time.sleep(0.2)\n";
    let py = python();
    let mut headroom = home
        .cmd(&[
            "run",
            "--interval-ms",
            "50",
            "--",
            py.to_str().expect("utf-8"),
            "-c",
            script,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("headroom run");
    let out = headroom.stdout.take().expect("stdout");
    // "epoch N" alone opens epoch N (its count starts): epoch 3 ends at "epoch 4", so by
    // "epoch 5" three epochs are in the ledger.
    for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
        if line == "epoch 5" {
            break;
        }
    }
    headroom.kill().expect("SIGKILL headroom");
    headroom.wait().expect("reap");
    // The next opening of the ledger closes the orphaned run; what was written stays.
    let runs = home.runs();
    assert_eq!(runs[0]["kind"], "run");
    assert_eq!(runs[0]["status"], "interrupted", "{}", runs[0]);
    let id = runs[0]["id"].to_string();
    let (_, shown) = home.json(&["ledger", "show", &id, "--json"]);
    let epochs: Vec<u64> = shown["samples"]
        .as_array()
        .map(|s| s.iter().filter_map(|e| e["epoch"].as_u64()).collect())
        .unwrap_or_default();
    assert!(epochs.len() >= 3 && epochs[..3] == [1, 2, 3], "{epochs:?}");
}

#[test]
#[cfg(unix)]
fn ctrl_c_ends_a_watch_with_its_summary_and_leaves_the_process_running() {
    let home = Home::new();
    let mut target = Command::new(python())
        .args(["-c", "import time\nb = bytearray(64 << 20)\ntime.sleep(60)"])
        .spawn()
        .expect("python");
    let pid = target.id().to_string();
    let headroom = home
        .cmd(&["watch", "--pid", &pid, "--interval-ms", "100", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("headroom watch");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let hpid = libc::pid_t::try_from(headroom.id()).expect("pid");
    // SAFETY: sends SIGINT to the child we started.
    assert_eq!(unsafe { libc::kill(hpid, libc::SIGINT) }, 0);
    let out = headroom.wait_with_output().expect("headroom watch ends");
    let still_running = target.try_wait().expect("try_wait").is_none();
    let _ = target.kill();
    let _ = target.wait();
    assert!(
        out.status.success(),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        still_running,
        "Ctrl-C on watch must not touch the watched process"
    );
    let v = after_output(&out.stdout, '{');
    assert!(v["readings"].as_u64().is_some_and(|n| n >= 5), "{v}");
    let runs = home.runs();
    assert_eq!(runs[0]["kind"], "watch");
    assert_ne!(runs[0]["status"], "running", "{}", runs[0]);
}

#[test]
fn a_sweep_over_the_users_script_runs_each_value_and_finds_its_oom() {
    let home = Home::new();
    // Holds MB megabytes; at 300 it fails the way MPS does (the message as captured in
    // tests/fixtures/macos/torch_mps_oom_runtimeerror_m2.txt).
    let script = r"import sys, time
mb = int(sys.argv[1])
b = bytearray(mb << 20)
for i in range(0, len(b), 4096): b[i] = 1
print('epoch 1', flush=True)
time.sleep(0.6)
if mb >= 300:
    print('RuntimeError: MPS backend out of memory (MPS allocated: 8.89 GB, other allocations: 172.98 MB, max allowed: 9.07 GB). Tried to allocate 6.25 MB on private pool.', file=sys.stderr, flush=True)
    sys.exit(1)
print('epoch 2', flush=True)
";
    let py = python();
    let out = home.run(&[
        "run",
        "--sweep",
        "mb=40,150,300",
        "--interval-ms",
        "100",
        "--json",
        "--",
        py.to_str().expect("utf-8"),
        "-c",
        script,
        "{mb}",
    ]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "one combination failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = after_output(&out.stdout, '[');
    let runs = v.as_array().expect("one entry per combination");
    assert_eq!(runs.len(), 3);
    let labels: Vec<&str> = runs
        .iter()
        .filter_map(|r| r["combination"].as_str())
        .collect();
    assert_eq!(labels, ["mb=40", "mb=150", "mb=300"]);
    let peak = |i: usize| runs[i]["run"]["peak_tree_bytes"].as_u64().expect("peak");
    assert!(
        peak(0) < peak(1) && peak(1) < peak(2),
        "{} {} {}",
        peak(0),
        peak(1),
        peak(2)
    );
    assert!(peak(1) >= 150 << 20);
    assert_eq!(runs[2]["run"]["oom"], true);
    assert_eq!(runs[2]["run"]["exit_code"], 1);
    assert_eq!(runs[0]["run"]["oom"], false);
    assert_eq!(runs[0]["run"]["epochs"].as_array().map(Vec::len), Some(2));
    assert_eq!(home.runs().iter().filter(|r| r["kind"] == "run").count(), 3);
    // A name the command does not use is refused before anything runs.
    let bad = home.run(&[
        "run",
        "--sweep",
        "bs=1,2",
        "--",
        py.to_str().expect("utf-8"),
        "-c",
        "pass",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("the command has no {bs}"));
    assert_eq!(home.runs().iter().filter(|r| r["kind"] == "run").count(), 3);
}

#[test]
fn max_seconds_stops_a_command_that_runs_on() {
    let home = Home::new();
    let py = python();
    let t = std::time::Instant::now();
    let out = home.run(&[
        "run",
        "--max-seconds",
        "1",
        "--interval-ms",
        "100",
        "--json",
        "--",
        py.to_str().expect("utf-8"),
        "-c",
        "import time\nprint('epoch 1', flush=True)\ntime.sleep(60)",
    ]);
    assert!(
        t.elapsed() < std::time::Duration::from_secs(15),
        "{:?}",
        t.elapsed()
    );
    let v = after_output(&out.stdout, '{');
    assert_eq!(v["stopped_at_limit"], true, "{v}");
    // Stopped at its own bound is a finished run, not a failure.
    assert!(out.status.success(), "{:?}", out.status);
    let newest = home.runs().into_iter().next().expect("the run");
    assert_eq!(newest["status"], "complete", "{newest}");
}

#[test]
fn step_markers_give_step_time_and_throughput_and_steps_bound_the_run() {
    let home = Home::new();
    // A "training loop" whose step takes bs/16 × 30 ms, printing the documented marker per step.
    let script = r"import sys, time
bs = int(sys.argv[2])
for step in range(1000):
    time.sleep(0.030 * bs / 16)
    print(f'headroom-step {step}', flush=True)
";
    let py = python();
    let chart = home.path().join("bs.svg");
    let out = home.run(&[
        "run",
        "--sweep",
        "bs=16,64",
        "--steps",
        "12",
        "--json",
        "--chart",
        chart.to_str().expect("utf-8"),
        "--",
        py.to_str().expect("utf-8"),
        "-c",
        script,
        "--batch-size",
        "{bs}",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = after_output(&out.stdout, '[');
    let runs = v.as_array().expect("runs");
    let p50 = |i: usize| runs[i]["run"]["step_ms_p50"].as_f64().expect("p50");
    for r in runs {
        assert_eq!(r["run"]["stopped_at_limit"], true, "{r}");
        let steps = r["run"]["steps"].as_u64().expect("steps");
        assert!(
            (12..=14).contains(&steps),
            "stopped at 12 steps (give or take the lines in flight): {steps}"
        );
    }
    // 30 ms and 120 ms steps; sleep only overshoots.
    assert!((28.0..60.0).contains(&p50(0)), "{}", p50(0));
    assert!((120.0..170.0).contains(&p50(1)), "{}", p50(1));
    // Throughput: the batch (read from --batch-size) times the steps over the time they took;
    // with steps this even, near the batch over the median step, and never above it by more
    // than timing jitter.
    let sps = runs[1]["run"]["samples_per_s"].as_f64().expect("samples/s");
    let by_median = 64.0 * 1000.0 / p50(1);
    assert!(
        (0.7 * by_median..1.05 * by_median).contains(&sps),
        "{sps} vs {by_median}"
    );
    assert_eq!(runs[1]["run"]["batch"], 64);
    // The same chart as a built-in sweep's: throughput and peak memory over the batch.
    let svg = std::fs::read_to_string(&chart).expect("the chart");
    assert!(svg.starts_with("<svg"), "{}", &svg[..80.min(svg.len())]);
    for want in ["throughput", "peak memory", "batch size"] {
        assert!(svg.contains(want), "{want:?} missing from the chart");
    }
    // The two batches run at the same samples/s give or take timing: the larger one more than
    // 5 % ahead is a curve still rising at its top, marked so instead of as the recommendation.
    assert!(
        svg.contains("recommended ") || svg.contains("still rising at "),
        "the answer is marked on the chart"
    );
    assert!(
        svg.matches("<circle").count() >= 4,
        "two points on two panels"
    );
}

#[test]
fn a_slow_data_stage_is_called_data_bound_and_a_heavy_model_compute_bound() {
    let home = Home::new();
    // A real torch training loop with both markers. Its data stage "decodes" each sample in
    // pure Python for `decode` × 1000 iterations (0: tensors straight from torch); its model
    // is an MLP of width `width`. One torch thread: both stages then run on one core each, so
    // tests running beside it slow them alike (torch's thread pool suffers far more than
    // Python when the cores are oversubscribed).
    let script = r"import sys, time, torch
decode, width = int(sys.argv[1]), int(sys.argv[2])
torch.set_num_threads(1)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, width), torch.nn.ReLU(), torch.nn.Linear(width, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
def batch():
    if decode:
        rows = []
        for _ in range(32):
            acc = 0
            for i in range(decode * 1000):
                acc += i % 7
            rows.append([float(acc % 5)] * 256)
        return torch.tensor(rows), torch.randint(0, 10, (32,))
    return torch.randn(32, 256), torch.randint(0, 10, (32,))
for step in range(1000):
    x, y = batch()
    print('headroom-data', flush=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f'headroom-step {step} loss={loss.item():.3f}', flush=True)
";
    let py = python();
    let run = |decode: &str, width: &str| {
        let out = home.run(&[
            "run",
            "--steps",
            "15",
            "--json",
            "--",
            py.to_str().expect("utf-8"),
            "-c",
            script,
            decode,
            width,
        ]);
        let v = after_output(&out.stdout, '{');
        assert_eq!(v["stopped_at_limit"], true, "{v}");
        let said = v["pipeline"].as_str().unwrap_or_default().to_owned();
        (v, said)
    };
    let (data, said) = run("40", "64");
    let share = data["data_share"].as_f64().expect("data share");
    assert!(share >= 0.5, "{data}");
    assert!(
        said.starts_with("data-bound: the data stage takes"),
        "{said}"
    );
    let (compute, said) = run("0", "4096");
    let share = compute["data_share"].as_f64().expect("data share");
    assert!(share < 0.5, "{compute}");
    assert!(said.starts_with("compute-bound:"), "{said}");
    assert!(
        compute["compute_ms_p50"].as_f64() > compute["data_ms_p50"].as_f64(),
        "{compute}"
    );
}

#[test]
fn a_num_workers_sweep_records_rising_memory_and_the_supervisor_stops_a_combination_over_budget() {
    let home = Home::new();
    let py = python();
    // A real DataLoader: each worker is a process of the tree, so its memory rises with them.
    let loader = r"import sys, time, torch
from torch.utils.data import DataLoader, TensorDataset
ds = TensorDataset(torch.randn(4096, 64), torch.randint(0, 10, (4096,)))
dl = DataLoader(ds, batch_size=32, num_workers=int(sys.argv[1]))
model = torch.nn.Linear(64, 10)
while True:
    for x, y in dl:
        print('headroom-data', flush=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        time.sleep(0.02)
        print('headroom-step', flush=True)
";
    let out = home.run(&[
        "run",
        "--sweep",
        "w=0,1,3",
        "--steps",
        "40",
        "--interval-ms",
        "50",
        "--json",
        "--",
        py.to_str().expect("utf-8"),
        "-c",
        loader,
        "{w}",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = after_output(&out.stdout, '[');
    let runs = v.as_array().expect("runs");
    let peak = |i: usize| runs[i]["run"]["peak_tree_bytes"].as_u64().expect("peak");
    assert!(
        peak(0) < peak(1) && peak(1) < peak(2),
        "0, 1, 3 workers: {} < {} < {}",
        peak(0),
        peak(1),
        peak(2)
    );
    // The sweep ran under the default budget (90 % of what was available).
    assert!(runs[0]["run"]["budget_bytes"].as_u64().is_some(), "{v}");

    // A script that takes {mb} MB in 10 MB steps: under a 300 MiB budget the 60 MB combination
    // finishes and the 1000 MB one is stopped by the supervisor, recorded as over budget.
    let grower = r"import sys, time
held = []
for i in range(int(sys.argv[1]) // 10):
    b = bytearray(10 << 20)
    for j in range(0, len(b), 4096):
        b[j] = 1
    held.append(b)
    time.sleep(0.02)
print('done', flush=True)
";
    let out = home.run(&[
        "run",
        "--sweep",
        "mb=60,1000",
        "--budget",
        "300MiB",
        "--interval-ms",
        "50",
        "--",
        py.to_str().expect("utf-8"),
        "-c",
        grower,
        "{mb}",
    ]);
    assert_eq!(out.status.code(), Some(3), "a combination failed");
    let table = String::from_utf8_lossy(&out.stderr);
    assert!(table.contains("over the 300 MiB memory budget"), "{table}");
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("mb=")).collect();
    assert_eq!(rows.len(), 2, "{table}");
    assert!(rows[0].contains(" no "), "{}", rows[0]);
    assert!(rows[1].contains(" budget "), "{}", rows[1]);
    let last = home
        .runs()
        .into_iter()
        .find(|r| r["kind"] == "run")
        .expect("the newest run");
    assert_eq!(last["status"], "failed", "{last}");
    assert!(
        last["note"]
            .as_str()
            .is_some_and(|n| n.starts_with("over budget: stopped at ")),
        "{last}"
    );
}

/// Issue 38: at a terminal the command's output is a terminal too, so a Rich progress bar
/// draws live under `headroom run` (read from a real tmux pane while it runs).
#[test]
#[cfg(target_os = "linux")]
fn a_progress_bar_draws_live_under_run_in_a_terminal() {
    let home = Home::new();
    let script = home.path().join("bar.py");
    std::fs::write(
        &script,
        "import sys, time\nfrom rich.progress import track\nprint('stdout is a terminal:', sys.stdout.isatty(), flush=True)\nfor i in track(range(60), description='Training'):\n    time.sleep(0.1)\n",
    )
    .expect("write");
    let socket = format!("headroom-test-{}", std::process::id());
    let tmux = |args: &[&str]| {
        Command::new("tmux")
            .args(["-L", &socket])
            .args(args)
            .output()
            .expect("tmux (scripts/bootstrap.sh installs it)")
    };
    let line = format!(
        "env HEADROOM_HOME={} {} run -- {} {}; sleep 30",
        home.path().display(),
        env!("CARGO_BIN_EXE_headroom"),
        python().display(),
        script.display()
    );
    let started = tmux(&["new-session", "-d", "-x", "100", "-y", "20", &line]);
    assert!(started.status.success(), "{started:?}");
    let mut seen = String::new();
    let mut live = None;
    for _ in 0..300 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        seen = String::from_utf8_lossy(&tmux(&["capture-pane", "-p"]).stdout).into_owned();
        // A bar between its start and its end, while the command runs.
        live = seen
            .lines()
            .find(|l| {
                l.contains("Training")
                    && l.contains('%')
                    && !l.contains("100%")
                    && !l.contains(" 0%")
            })
            .map(str::to_owned);
        if live.is_some() {
            break;
        }
    }
    let _ = tmux(&["kill-server"]);
    assert!(seen.contains("stdout is a terminal: True"), "{seen}");
    assert!(live.is_some(), "no bar drawn while it ran: {seen}");
}

/// Issue 39: a command that prints many short lines faster than they are read waits for them
/// (a bounded queue) instead of Headroom holding them all: 50 MB of `y` lines passed through
/// whole, with Headroom's own peak (VmHWM) far below what queueing them took (3.5 GB before).
#[test]
#[cfg(target_os = "linux")]
fn many_short_lines_pass_through_whole_without_headroom_growing() {
    use std::io::Read;
    let home = Home::new();
    let mut child = home
        .cmd(&[
            "run",
            "--no-instrument",
            "--",
            "sh",
            "-c",
            "yes | head -c 50000000; sleep 0.5",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("headroom run");
    let pid = child.id();
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let (mut n, mut buf) = (0usize, vec![0u8; 1 << 16]);
        while let Ok(k) = stdout.read(&mut buf) {
            if k == 0 {
                break;
            }
            n += k;
        }
        n
    });
    let hwm = |text: &str| -> Option<u64> {
        text.lines()
            .find(|l| l.starts_with("VmHWM:"))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    let mut peak_kib = 0;
    while child.try_wait().expect("wait").is_none() {
        if let Some(k) = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .as_deref()
            .and_then(hwm)
        {
            peak_kib = peak_kib.max(k);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(
        reader.join().expect("reader"),
        50_000_000,
        "every byte passed through"
    );
    assert!(peak_kib > 0, "Headroom's memory was read while it ran");
    assert!(peak_kib < 256 * 1024, "Headroom peaked at {peak_kib} KiB");
}
