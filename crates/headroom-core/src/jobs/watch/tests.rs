use super::*;

#[test]
fn step_markers() {
    assert_eq!(
        metric_line("headroom-metric val_loss 0.412"),
        Some(("val_loss".into(), 0.412))
    );
    assert_eq!(
        metric_line("  HEADROOM-METRIC: acc/top1=0.91 (epoch 3)"),
        Some(("acc/top1".into(), 0.91))
    );
    assert_eq!(metric_line("headroom-metric loss nan"), None);
    assert_eq!(metric_line("headroom-metrics loss 1"), None);
    assert_eq!(metric_line("headroom-metric loss"), None);
    assert_eq!(metric_line("headroom-metric lo$s 1"), None);
    assert!(parse_metric_spec("acc=val acc ([0-9.]+)").is_ok());
    for bad in ["acc", "=x(1)", "acc=no group", "acc=([", "a b=(x)"] {
        let e = parse_metric_spec(bad).expect_err(bad).to_string();
        assert!(e.contains("NAME=REGEX"), "{e}");
    }
    assert!(is_step_marker("headroom-step"));
    assert!(is_step_marker("  HEADROOM-STEP loss=0.31"));
    assert!(is_step_marker("headroom-step: 12"));
    assert!(!is_step_marker("headroom-steps"));
    assert!(!is_step_marker("step 12"));
    assert!(!is_step_marker("headroom"));
    assert!(is_data_marker("headroom-data"));
    assert!(!is_data_marker("headroom-dataset"));
    assert!(!is_step_marker("headroom-data"));
}

#[test]
fn steps_split_into_data_and_compute_parts() {
    // Steps end at 1.0, 1.1, 1.3, 1.4; data ready at 1.08 and 1.25; the last step has no
    // data marker and is left out, a data marker before the first step counts for nothing.
    let parts = split_steps(&[1.0, 1.1, 1.3, 1.4], &[0.5, 1.08, 1.25]);
    assert_eq!(parts.len(), 2);
    assert!((parts[0].0 - 80.0).abs() < 1e-6 && (parts[0].1 - 20.0).abs() < 1e-6);
    assert!((parts[1].0 - 150.0).abs() < 1e-6 && (parts[1].1 - 50.0).abs() < 1e-6);
    // Two data markers in one step: the last one before the step marker counts.
    let parts = split_steps(&[0.0, 1.0], &[0.2, 0.9]);
    assert!((parts[0].0 - 900.0).abs() < 1e-6, "{parts:?}");
    assert!(split_steps(&[0.0, 1.0], &[]).is_empty());
}

#[test]
fn step_time_settles_on_whole_windows_after_warm_up() {
    // A slow first steps, then 100 ms steps: settled once two windows of 5 agree.
    let mut at = vec![0.0, 2.0, 2.5, 2.8];
    let mut t = 2.8;
    for _ in 0..20 {
        t += 0.1;
        at.push(t);
        if let Some(from) = settled_from(&at) {
            assert_eq!(
                at.len() - 1 - from,
                10,
                "two windows of 5 steps (0.5 s each)"
            );
            assert!(from >= SETTLE_WARMUP);
            return;
        }
    }
    panic!("never settled");
}

#[test]
fn a_loader_that_stalls_every_few_steps_settles_and_a_slowing_one_does_not() {
    // Every fourth step waits 300 ms for data: windows of whole periods agree.
    let mut at = vec![0.0];
    for i in 1..80 {
        let last = at[at.len() - 1];
        at.push(last + if i % 4 == 0 { 0.3 } else { 0.05 });
    }
    assert!(settled_from(&at).is_some());
    // Steps getting 3 % slower each: never settled within 5 %.
    let mut at = vec![0.0];
    let mut step = 0.1;
    for _ in 0..60 {
        step *= 1.03;
        let last = at[at.len() - 1];
        at.push(last + step);
    }
    assert!(settled_from(&at).is_none());
    assert!(settled_from(&[0.0, 1.0]).is_none());
    assert!(settled_from(&[]).is_none());
}
