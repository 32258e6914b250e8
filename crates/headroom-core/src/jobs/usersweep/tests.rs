//! The script sweep's pure parts.

use super::*;

#[test]
fn devices_parse_with_threads_and_refuse_nonsense() {
    let d = parse_devices("cpu@1, cpu@2").expect("pair");
    assert_eq!(d[0].label(), "cpu@1");
    assert_eq!(d[1].env(), vec![("OMP_NUM_THREADS".into(), "2".into())]);
    assert_eq!(parse_devices("cpu,mps").expect("pair")[1].device, "mps");
    for bad in ["cpu", "cpu,mps,cuda", "cpu@0,mps", "cpu,m ps", "cpu@x,mps"] {
        assert!(parse_devices(bad).is_err(), "{bad}");
    }
    let cmd: Vec<String> = ["python", "t.py", "--bs={batch}", "--device", "{device}"]
        .map(String::from)
        .to_vec();
    assert_eq!(
        crate::project::fill(&cmd, Some(64), Some(&d[1].device))[2..],
        ["--bs=64".to_owned(), "--device".into(), "cpu".into()]
    );
}
