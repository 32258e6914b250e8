use super::*;

fn passed(step: Step) -> StepResult {
    StepResult {
        step,
        passed: true,
        detail: String::new(),
        fix: None,
        at: String::new(),
        seconds: 0.0,
        runs: Vec::new(),
    }
}

#[test]
fn what_the_user_asks_to_copy_is_no_longer_left_out_and_runs_the_steps_after_again() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::create_dir_all(dir.path().join(".venv")).expect("venv");
    std::fs::create_dir_all(dir.path().join("ckpt")).expect("ckpt");
    let all = excludes(dir.path());
    assert!(all.contains(&"/.venv/".to_owned()) && all.contains(&".venv/".to_owned()));
    // Named as the user sees them: those that exist, at the top.
    assert_eq!(left_out(dir.path(), &all), [".venv"]);
    let kept = excludes_but(dir.path(), &[".venv/".into()]);
    assert!(!kept.iter().any(|e| e.contains(".venv")), "{kept:?}");
    assert!(left_out(dir.path(), &kept).is_empty());
    assert!(kept.contains(&"/node_modules/".to_owned()));

    let mut m = Migration::new("box", "train", None);
    for s in [
        Step::Host,
        Step::Key,
        Step::Check,
        Step::Headroom,
        Step::Project,
        Step::Training,
    ] {
        m.steps.insert(s, passed(s));
    }
    m.set_also_copy(&[" data/ ".into(), String::new(), "data".into()]);
    assert_eq!(m.also_copy, ["data"]);
    assert_eq!(m.next_step(), Some(Step::Project));
    // The same ask again changes nothing.
    m.steps.insert(Step::Project, passed(Step::Project));
    m.set_also_copy(&["data".into()]);
    assert_eq!(m.next_step(), Some(Step::Training));
    m.set_also_copy(&[String::new()]);
    assert!(m.also_copy.is_empty());
    assert_eq!(m.next_step(), Some(Step::Project));
}

#[test]
fn a_remote_sweeps_doubt_is_said_as_that_machines() {
    use crate::protocol::{Point, PointStatus};
    let ok = |batch: u32, sps: f64| {
        let mut p = Point::failed(batch, PointStatus::Ok, "");
        p.message = None;
        p.samples_per_s = Some(sps);
        p.peak_bytes = Some(1 << 20);
        p
    };
    let mut s = crate::jobs::sweep::SweepOutcome {
        status: crate::jobs::JobStatus::Complete,
        run_id: Some(3),
        ledger: String::new(),
        hello: None,
        points: vec![ok(16, 900.0), ok(32, 1700.0), ok(64, 1800.0)],
        summary: None,
        warnings: Vec::new(),
        error: None,
        worker_exit: None,
        stderr_tail: Vec::new(),
    };
    let summary = |s: &crate::jobs::sweep::SweepOutcome| {
        crate::summary::summarize(&s.points, crate::planner::Limit::MaxBatch, 1 << 30)
    };
    s.summary = Some(summary(&s));
    assert_eq!(there_cautions("box", &s), "");
    s.points[1].load = Some(crate::load::PointLoad {
        other_cores: 1.3,
        busiest: Some("zoom.us".into()),
        busiest_cores: 1.2,
        seconds: 2.0,
        pressure: None,
        pressure_detail: None,
        swap_growth_bytes: None,
        accel_others: Vec::new(),
    });
    s.summary = Some(summary(&s));
    let said = there_cautions("box", &s);
    assert!(
        said.starts_with(". On box, the answer rests on batch ")
            && said.contains("(there, batch 32 was timed while zoom.us used 1.2 cores"),
        "{said}"
    );
}

#[test]
fn rsync_running_totals_are_read_and_asked_for_only_where_rsync_has_them() {
    // Captured here: `rsync -a --info=progress2 --no-inc-recursive --bwlimit=20000 src/ dst/`
    // over a 30 MB and a 5 kB file, and `rsync --version`, rsync 3.5.0 on Debian 12.
    let raw = include_str!("../../../tests/fixtures/linux/rsync_progress2_debian12_3.5.0.txt");
    let updates: Vec<Copied> = raw
        .split(['\r', '\n'])
        .filter_map(parse_progress2)
        .collect();
    assert_eq!(updates.len(), 7, "{updates:?}");
    assert_eq!(
        updates[1],
        Copied {
            bytes: 21_430_272,
            percent: 71,
            rate: "19.55MB/s".into(),
            eta: "0:00:00".into()
        }
    );
    let last = updates.last().expect("last");
    assert_eq!((last.bytes, last.percent), (30_005_000, 100));
    assert!(
        last.to_string()
            .starts_with("copied 100 % (28.6 MiB) at 19.5"),
        "{last}"
    );
    assert_eq!(parse_progress2("Number of files: 3 (reg: 2, dir: 1)"), None);
    assert_eq!(
        parse_progress2("sent 30,012,345 bytes  received 57 bytes"),
        None
    );
    let version = include_str!("../../../tests/fixtures/linux/rsync_version_debian12_3.5.0.txt");
    assert_eq!(
        flags_for(version),
        ["--info=progress2", "--no-inc-recursive"]
    );
    // macOS's own: rsync 2.6.9 and openrsync (which names 2.6.9 as what it is compatible with).
    assert!(flags_for("rsync  version 2.6.9  protocol version 29").is_empty());
    assert!(flags_for("openrsync: protocol version 29\nrsync version 2.6.9 compatible").is_empty());
    assert!(flags_for("").is_empty());
}

#[test]
fn the_remote_runs_the_project_with_its_own_environment() {
    let p = Project {
        name: "train".into(),
        dir: PathBuf::from("/home/ada/train"),
        python: Some(PathBuf::from("/home/ada/train/.venv/bin/python")),
        command: [
            "python",
            "train.py",
            "--batch-size",
            "{batch}",
            "--device",
            "{device}",
        ]
        .map(String::from)
        .to_vec(),
    };
    assert_eq!(
        remote_argv(&p, Some(64), "mps"),
        [
            ".venv/bin/python",
            "train.py",
            "--batch-size",
            "64",
            "--device",
            "mps"
        ]
    );
    let on = |os, arch| {
        let (o, a) = rust_platform(os, arch);
        remote_device(&o, &a)
    };
    assert_eq!(on("Darwin", "arm64"), "mps");
    assert_eq!(on("Darwin", "x86_64"), "cpu");
    assert_eq!(on("Linux", "x86_64"), "cpu");
}

#[test]
fn uname_in_rust_s_names() {
    assert_eq!(
        rust_platform("Darwin\n", "arm64"),
        ("macos".into(), "aarch64".into())
    );
    assert_eq!(
        rust_platform("Linux", "x86_64"),
        ("linux".into(), "x86_64".into())
    );
    assert_eq!(
        rust_platform("Linux", "aarch64"),
        ("linux".into(), "aarch64".into())
    );
}

#[test]
fn df_gives_the_available_bytes() {
    let linux = "Filesystem     1024-blocks    Used Available Capacity Mounted on\ntmpfs                 1024       4      1020       1% /tmp/x\n";
    assert_eq!(parse_df_available(linux), Some(1020 * 1024));
    let macos = "Filesystem   1024-blocks      Used Available Capacity  Mounted on\n/dev/disk3s5  482797652 301471328 148893612    67%    /System/Volumes/Data\n";
    assert_eq!(parse_df_available(macos), Some(148_893_612 * 1024));
    assert_eq!(parse_df_available(""), None);
    assert_eq!(
        parse_df_available("df: /nope: No such file or directory"),
        None
    );
}

#[test]
fn steps_run_in_order_and_each_waits_for_the_ones_before() {
    let mut m = Migration::new("box", "train", None);
    assert_eq!(m.remote_dir, "headroom-projects/train");
    assert_eq!(m.next_step(), Some(Step::Host));
    assert!(m.gate(Step::Host).is_ok());
    let e = m.gate(Step::Project).expect_err("gated").to_string();
    assert!(e.contains("needs step host"), "{e}");
    for s in [Step::Host, Step::Key] {
        m.steps.insert(s, passed(s));
    }
    assert_eq!(m.next_step(), Some(Step::Check));
    assert!(m.gate(Step::Check).is_ok());
    assert!(m.gate(Step::Headroom).is_err());
    assert_eq!(Step::parse("project").ok(), Some(Step::Project));
    assert!(Step::parse("nope")
        .expect_err("bad")
        .to_string()
        .contains("host, key, check"));
}

#[test]
fn training_continues_at_the_batch_the_sweep_there_recommended() {
    use crate::ledger::{Ledger, NewRun, RunKind, RunStatus};
    let dir = tempfile::tempdir().expect("tmp");
    let ledger = Ledger::open(&dir.path().join("l.sqlite3")).expect("ledger");
    // The training step's sweep there, recorded here under the host's name.
    let id = ledger
        .begin_run(&NewRun {
            kind: RunKind::Sweep,
            host: "box".into(),
            device: "mps".into(),
            device_name: "Apple M2".into(),
            workload: "python3 train.py --batch-size {batch}".into(),
            dtype: None,
            mode: None,
            libtorch: "2.11.0".into(),
            git_commit: None,
            git_dirty: None,
            budget_bytes: Some(8 << 30),
            fallback: None,
            request_json: r#"{"project":"train"}"#.into(),
            owner_pid: None,
        })
        .expect("run");
    let mut point = crate::protocol::Point::failed(96, crate::protocol::PointStatus::Ok, "");
    point.message = None;
    point.samples_per_s = Some(800.0);
    point.peak_bytes = Some(2 << 30);
    let summary = headroom_model::summary::summarize(
        &[point],
        headroom_model::planner::Limit::MaxBatch,
        8 << 30,
    );
    assert_eq!(summary.recommended_batch, Some(96));
    ledger
        .finish_run(id, RunStatus::Complete, Some(&summary), None)
        .expect("finish");
    let mut m = Migration::new("box", "train", None);
    // No training step yet, and no sweep of the project here: nothing to continue at.
    assert_eq!(m.continue_batch(&ledger), None);
    let mut training = passed(Step::Training);
    training.runs = vec![id];
    m.steps.insert(Step::Training, training.clone());
    let (batch, why) = m.continue_batch(&ledger).expect("a batch");
    assert_eq!(batch, 96);
    assert_eq!(why, format!("recommended by the sweep on box (run {id})"));
    // A training step that failed does not choose.
    training.passed = false;
    m.steps.insert(Step::Training, training);
    assert_eq!(m.continue_batch(&ledger), None);
}
