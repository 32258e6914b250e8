//! `headroom decide` over a real ledger: what it holds moves the verdict. A leak that survives
//! `--release both` (a real leak-demo run in libtorch) sends the work to a remote host;
//! contention raised by the config's thresholds does too; a fresh home on Linux says CPU.

use serde_json::Value;

use crate::common::Home;

fn decide(home: &Home) -> Value {
    let (out, v) = home.json(&["decide", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    v
}

fn rules(v: &Value) -> Vec<String> {
    v["decision"]["reasons"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(|r| r["rule"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
#[cfg(target_os = "linux")]
fn the_ledger_and_the_config_move_the_verdict() {
    let home = Home::new();
    let v = decide(&home);
    assert_eq!(v["decision"]["verdict"], "cpu", "{v}");
    assert!(v["facts"]["epochs"].is_null());

    // A real leak, released at every epoch end and still growing.
    let run = crate::epochs::epochs(&home, &["--leak-demo", "48", "--release", "both"]);
    assert_eq!(run["verdict"]["kind"], "leak_suspected", "{run}");
    let v = decide(&home);
    let facts = &v["facts"]["leak_with_release"];
    assert_eq!(facts["release"], "both", "{facts}");
    assert_eq!(facts["leak"], true);
    assert_eq!(facts["epochs"], 6);
    assert!(
        rules(&v).contains(&"leak_persists".to_owned()),
        "{:?}",
        rules(&v)
    );
    assert_eq!(v["decision"]["verdict"], "remote");
    let head = v["decision"]["headline"].as_str().unwrap_or_default();
    assert!(
        head.contains("leak persists") && head.contains("headroom remote add"),
        "{head}"
    );
    let text = home.run(&["decide"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("symptom → hypothesis → action"), "{text}");
    assert!(text.contains("dedicated remote host"), "{text}");
}

#[test]
fn contention_raised_by_the_config_sends_the_work_remote() {
    let home = Home::new();
    std::fs::write(
        home.path().join("config.toml"),
        "[contention]\napps_share = 0.0\nreserve_share = 1.0\n",
    )
    .expect("config");
    let v = decide(&home);
    assert_eq!(v["contention"]["raised"], true, "{}", v["contention"]);
    assert!(
        rules(&v).contains(&"contention".to_owned()),
        "{:?}",
        rules(&v)
    );
    assert_eq!(v["decision"]["verdict"], "remote");
    // LLM inference as the main job, told by the config.
    std::fs::write(
        home.path().join("config.toml"),
        "[decide]\nmain_job = \"llm-inference\"\n",
    )
    .expect("config");
    let v = decide(&home);
    assert!(
        rules(&v).contains(&"llm_inference".to_owned()),
        "{:?}",
        rules(&v)
    );
}

#[test]
fn profiled_op_times_of_a_run_feed_the_slow_layer_rule() {
    let home = Home::new();
    // Stands in for a training script on MPS run with PYTORCH_MPS_LOG_PROFILE_INFO: it checks
    // that Headroom asked for the log, then prints op lines in the profiler's format (as captured
    // in tests/fixtures/macos/torch_mps_log_profile_info_op_line_example.txt).
    let script = r"import os, sys
assert os.environ.get('PYTORCH_MPS_LOG_PROFILE_INFO') == '129', os.environ.get('PYTORCH_MPS_LOG_PROFILE_INFO')
for e in range(1, 4):
    for i in range(5):
        print(f'aten::_upsample_bilinear2d_aa_out_mps:f32[8,3,224,224] (id=G{i}, run={e}, gpu=6.000 ms, cpu=0.5 ms, mem=1.0 MB)', file=sys.stderr)
        print(f'aten::mm_out_mps:f32[64,64]:f32[64,64] (id=G{i+10}, run={e}, gpu=1.000 ms, cpu=0.1 ms, mem=0.1 MB)', file=sys.stderr)
    print(f'epoch {e}', flush=True)
";
    let py = crate::common::python();
    let out = home.run(&[
        "run",
        "--profile-ops",
        "--interval-ms",
        "100",
        "--json",
        "--",
        py.to_str().expect("utf-8"),
        "-c",
        script,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The command's own lines pass through first; the summary document follows them.
    let run = crate::common::after_output(&out.stdout, '{');
    assert_eq!(run["epochs"].as_array().map(Vec::len), Some(3), "{run}");
    let ops = run["op_times"].as_array().expect("op_times");
    assert_eq!(ops[0]["name"], "aten::_upsample_bilinear2d_aa_out_mps");
    assert_eq!(ops[0]["calls"], 15);
    assert!((ops[0]["gpu_ms"].as_f64().unwrap_or(0.0) - 90.0).abs() < 1e-9);
    let v = decide(&home);
    let slow = &v["facts"]["slow_layer"];
    assert_eq!(
        slow["name"], "aten::_upsample_bilinear2d_aa_out_mps",
        "{slow}"
    );
    // 90 of 105 ms of GPU time.
    assert!((slow["share"].as_f64().unwrap_or(0.0) - 90.0 / 105.0).abs() < 1e-9);
    assert!(
        rules(&v).contains(&"slow_layer".to_owned()),
        "{:?}",
        rules(&v)
    );
}

/// `config set` writes the key the decision reads: CUDA parity required sends the work where
/// CUDA is; a value out of range is refused and leaves the file as it was.
#[test]
fn config_set_moves_the_verdict_and_refuses_a_value_out_of_range() {
    let home = Home::new();
    let set = home.run(&["config", "set", "decide.cuda_parity_required", "true"]);
    assert!(
        set.status.success(),
        "{}",
        String::from_utf8_lossy(&set.stderr)
    );
    assert!(
        String::from_utf8_lossy(&set.stdout).starts_with("decide.cuda_parity_required = true in ")
    );
    assert!(rules(&decide(&home)).contains(&"cuda_parity".to_owned()));
    let before = std::fs::read_to_string(home.path().join("config.toml")).expect("config");
    let bad = home.run(&["config", "set", "decide.amp_gain", "2"]);
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("decide.amp_gain = 2 must be a share between 0 and 1"),
        "{err}"
    );
    assert!(err.contains("nothing was written"), "{err}");
    let after = std::fs::read_to_string(home.path().join("config.toml")).expect("config");
    assert_eq!(before, after);
}

/// Stands in for a training script on CUDA run with `--profile-window` (no GPU here): it
/// speaks the observer's protocol on Headroom's socket, as the observer does after its window,
/// with a window whose convolution launched most of the kernel time.
#[test]
fn a_profiler_window_with_device_time_feeds_the_slow_layer_fact() {
    let home = Home::new();
    let script = r#"import json, os, socket, time
op = lambda name, calls, cpu, dev, on: {"name": name, "calls": calls, "self_cpu_us": cpu, "cpu_us": cpu, "self_device_us": dev, "device_us": dev, "on_device": on}
window = {"iterations": 20, "asked": 20, "warmup": 10, "window_s": 2.0, "write_s": 0.2, "before_ms": 95.0,
          "device": "cuda", "trace": None, "cut": False,
          "ops": [op("aten::convolution", 1060, 30000.0, 700000.0, False),
                  op("aten::add_", 400, 1000.0, 300000.0, False),
                  op("void conv_kernel", 1060, 0.0, 700000.0, True),
                  op("void add_kernel", 400, 0.0, 300000.0, True)]}
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(os.environ["HEADROOM_EVENTS"])
for ev in ({"ev": "hello", "torch": "2.11.0", "mps_built": False, "mps_available": False, "start_method": None, "argv": []},
           {"ev": "flag", "name": "profile", "value": window}):
    ev.update(pid=os.getpid(), t=time.time())
    s.sendall((json.dumps(ev) + "\n").encode())
s.close()
"#;
    let py = crate::common::python();
    let (out, run) = home.json(&[
        "run",
        "--json",
        "--",
        py.to_str().expect("utf-8"),
        "-c",
        script,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(run["observed"]["profile"]["device"], "cuda", "{run}");
    let v = decide(&home);
    let slow = &v["facts"]["slow_layer"];
    assert_eq!(slow["name"], "aten::convolution", "{slow}");
    // 700 of 1000 ms of kernel time.
    assert!(
        (slow["share"].as_f64().unwrap_or(0.0) - 0.7).abs() < 1e-9,
        "{slow}"
    );
    assert_eq!(slow["run_id"], run["run_id"]);
    assert!(
        rules(&v).contains(&"slow_layer".to_owned()),
        "{:?}",
        rules(&v)
    );
}
