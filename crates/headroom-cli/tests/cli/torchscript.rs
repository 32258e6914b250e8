//! A user's own model: exported with `torch.jit.script` by the venv's Python, then swept.

use crate::common::{export_torchscript, f, points, Home};

const EXPORT: &str = r#"
import sys, torch
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(16, 64)
        self.b = torch.nn.Linear(64, 4)
    def forward(self, x):
        return self.b(torch.relu(self.a(x)))
torch.jit.script(Net()).save(sys.argv[1])
"#;

#[test]
fn a_torchscript_model_exported_by_python_can_be_swept() {
    let home = Home::new();
    let model = export_torchscript(&home, "net.pt", EXPORT);
    let m = model.to_string_lossy().into_owned();
    let v = home.cpu_sweep(&[
        "--workload",
        &m,
        "--input-shape",
        "16",
        "--batches",
        "1,32",
        "--steps",
        "3",
    ]);
    assert_eq!(v["hello"]["workload"], "net.pt");
    assert_eq!(v["hello"]["parameters"], 16 * 64 + 64 + 64 * 4 + 4);
    for p in points(&v) {
        assert_eq!(p["status"], "ok", "{p}");
        assert!(f(&p, "samples_per_s") > 0.0);
    }

    // The same model with an input it cannot take: a clear error, nothing recorded.
    let before = home.runs().len();
    let out = home.run(&[
        "sweep",
        "--device",
        "cpu",
        "--workload",
        &m,
        "--input-shape",
        "7",
        "--batches",
        "1",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("check --input-shape"), "{err}");
    assert_eq!(home.runs().len(), before);

    // And without --input-shape at all.
    let out = home.run(&["sweep", "--device", "cpu", "--workload", &m]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs --input-shape"));
}
