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
    let (out, run) = home.json(&[
        "epochs",
        "--device",
        "cpu",
        "--workload",
        "mlp",
        "--batch",
        "16",
        "--epochs",
        "6",
        "--steps-per-epoch",
        "3",
        "--threads",
        "1",
        "--leak-demo",
        "48",
        "--release",
        "both",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
