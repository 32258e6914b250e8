use super::*;
use headroom_model::protocol::PointStatus;

#[test]
fn the_arm64_proof_holds_only_for_a_native_arm64_python_with_mps() {
    let text = include_str!("../../../../bench/results/doctor_h200.json");
    let mut rep: headroom_probe::readiness::Report =
        serde_json::from_str(text).expect("real report");
    let h200 = Arm64Proof::from_report(Some(3), Some(&rep), None);
    assert!(!h200.native_apple_silicon);
    assert!(
        h200.rows()[0].1.starts_with("NOT shown"),
        "{:?}",
        h200.rows()
    );
    assert!(h200.rows()[0].1.ends_with("(doctor run 3)"));
    assert!(h200.torch.contains("CUDA"), "{}", h200.torch);
    // The same report as an Apple Silicon Mac with an arm64 Python and MPS: the proof holds.
    rep.machine.apple_silicon = true;
    rep.machine.arch = "arm64".into();
    rep.machine.translated = Some(false);
    let i = rep.primary.expect("primary");
    let facts = rep.pythons[i].facts.as_mut().expect("facts");
    facts.machine = "arm64".into();
    let torch = facts.torch.as_mut().expect("torch");
    torch.mps_built = true;
    torch.mps_available = true;
    assert!(Arm64Proof::from_report(None, Some(&rep), None).native_apple_silicon);
    // What the training process saw overrides the doctor's flags: MPS not available there.
    let seen = headroom_model::observed::Observed {
        torch_version: Some("2.11.0".into()),
        mps_built: Some(true),
        mps_available: Some(false),
        ..Default::default()
    };
    let p = Arm64Proof::from_report(None, Some(&rep), Some(&seen));
    assert!(!p.native_apple_silicon);
    assert_eq!(p.mps, "built yes, available no");
    // An x86_64 Python (Rosetta), or Headroom itself translated: no proof.
    rep.machine.translated = Some(true);
    assert!(!Arm64Proof::from_report(None, Some(&rep), None).native_apple_silicon);
    rep.machine.translated = Some(false);
    rep.pythons[i].facts.as_mut().expect("facts").machine = "x86_64".into();
    assert!(!Arm64Proof::from_report(None, Some(&rep), None).native_apple_silicon);
    // No doctor run: every row says how to get one.
    let none = Arm64Proof::from_report(None, None, None);
    assert!(none.machine.contains("headroom doctor` on this machine"));
    let there = Arm64Proof::from_report_on(None, None, None, "fresh");
    assert!(there.mps.contains("headroom doctor` on fresh"), "{there:?}");
}

#[test]
fn tolerances_are_absolute_or_a_share_and_bad_ones_are_refused() {
    assert_eq!(
        Tolerance::parse("0.01").ok(),
        Some(Tolerance::Absolute(0.01))
    );
    assert_eq!(
        Tolerance::parse("2 %").ok(),
        Some(Tolerance::Relative(0.02))
    );
    assert!((Tolerance::Relative(0.02).allowed(-50.0) - 1.0).abs() < 1e-12);
    for bad in ["", "x", "-1", "nan", "1e999"] {
        assert!(Tolerance::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn csv_quotes_what_needs_it() {
    let mut p = Point::failed(8, PointStatus::Oom, "MPS backend out of memory, \"8 GiB\"");
    p.peak_bytes = Some(1 << 30);
    let text = points_csv(&[p]);
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(CSV_COLUMNS.join(",").as_str()));
    assert_eq!(
        lines.next(),
        Some("8,oom,,,,,,,1073741824,,,,\"MPS backend out of memory, \"\"8 GiB\"\"\"")
    );
    assert_eq!(
        escape("<a href=\"x\">&"),
        "&lt;a href=&quot;x&quot;&gt;&amp;"
    );
}
