//! The house's boundaries, checked on the dependency graph cargo resolves for this platform
//! (`cargo tree`, normal and build dependencies, followed transitively): the core sees neither
//! libtorch nor Tauri, the app never reaches libtorch, and `tch` enters the workspace through
//! `headroom-torch` alone; the crates below the core (model, probe) depend one way. (None of
//! these edges is platform-specific in the manifests.)

use std::collections::BTreeSet;
use std::process::Command;

/// The workspace's members (`cargo metadata --no-deps` reads only the manifests).
fn members() -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.toml");
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--offline",
            "--format-version",
            "1",
        ])
        .args(["--manifest-path", root])
        .output()
        .expect("cargo metadata runs");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON");
    v["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter_map(|p| p["name"].as_str().map(str::to_owned))
        .collect()
}

/// The packages `package` reaches (itself excepted), or only its direct dependencies.
fn deps(package: &str, direct: bool) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.toml");
    let mut cmd = Command::new(cargo);
    cmd.args(["tree", "--offline", "--manifest-path", root, "-p", package])
        .args(["-e", "normal,build", "--prefix", "none"]);
    if direct {
        cmd.args(["--depth", "1"]);
    }
    let out = cmd.output().expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree -p {package} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .filter(|name| name != package)
        .collect()
}

#[test]
fn the_core_sees_neither_libtorch_nor_tauri_and_the_app_never_reaches_libtorch() {
    let core = deps("headroom-core", false);
    assert!(
        core.contains("rusqlite"),
        "the check sees the core's graph: {core:?}"
    );
    for banned in ["tch", "torch-sys", "tauri", "wry", "tao"] {
        assert!(!core.contains(banned), "headroom-core reaches {banned}");
    }
    let app = deps("headroom-app", false);
    assert!(
        app.contains("tauri") && app.contains("headroom-core"),
        "{app:?}"
    );
    for banned in ["headroom-torch", "tch", "torch-sys"] {
        assert!(!app.contains(banned), "headroom-app reaches {banned}");
    }
    let members = members();
    assert!(members.len() >= 4, "{members:?}");
    let direct: Vec<&String> = members
        .iter()
        .filter(|m| deps(m, true).contains("tch"))
        .collect();
    assert_eq!(
        direct,
        ["headroom-torch"],
        "only headroom-torch depends on tch itself"
    );
    // The worker's crate reaches libtorch, and the CLI only through it.
    assert!(deps("headroom-cli", false).contains("torch-sys"));
}

/// Issue 40's crate rules: the model is values in and values out (no SQLite, no process or
/// system crates, no plotting, no file formats); the decision stands on the model alone; the
/// probes read the machine and do not reach Headroom's stores (SQLite, TOML) or its plots; the
/// store keeps Headroom's files and reads no machine; the worker's crate links the model and the
/// probes only, never the decision rules, the ledger or the plots; reports stand on the model,
/// the probes and the store, never on the core (its jobs); and the arrows run one way: model ←
/// decide, model ← probe, model ← store, those ← report ← core.
#[test]
fn the_crates_depend_one_way_and_the_worker_links_no_ledger_or_plots() {
    // (crate, what it must reach — so the check sees its graph —, what it must not reach)
    let rules: [(&str, &[&str], &[&str]); 6] = [
        (
            "headroom-model",
            &["serde"],
            &[
                "rusqlite",
                "sysinfo",
                "libc",
                "nix",
                "plotters",
                "resvg",
                "toml",
                "toml_edit",
                "headroom-probe",
                "headroom-store",
                "headroom-core",
            ],
        ),
        (
            "headroom-probe",
            &["headroom-model", "sysinfo"],
            &[
                "rusqlite",
                "plotters",
                "resvg",
                "toml",
                "toml_edit",
                "headroom-store",
                "headroom-core",
            ],
        ),
        // The decision is a pure function of facts: it stands on the model alone.
        (
            "headroom-decide",
            &["headroom-model", "serde"],
            &[
                "rusqlite",
                "sysinfo",
                "libc",
                "plotters",
                "resvg",
                "toml_edit",
                "headroom-probe",
                "headroom-store",
                "headroom-core",
            ],
        ),
        (
            "headroom-store",
            &["headroom-model", "rusqlite"],
            &[
                "headroom-probe",
                "headroom-core",
                "sysinfo",
                "plotters",
                "resvg",
            ],
        ),
        // Reports read what was recorded; they never reach what runs things (the core's jobs).
        (
            "headroom-report",
            &["headroom-store", "plotters"],
            &["headroom-core"],
        ),
        (
            "headroom-torch",
            &["headroom-model", "tch"],
            &[
                "headroom-core",
                // A rule changed rebuilds no worker.
                "headroom-decide",
                "headroom-store",
                "headroom-report",
                "rusqlite",
                "plotters",
                "resvg",
                "toml_edit",
            ],
        ),
    ];
    for (krate, must, banned) in rules {
        let reached = deps(krate, false);
        for m in must {
            assert!(
                reached.contains(*m),
                "{krate} should reach {m}: {reached:?}"
            );
        }
        for b in banned {
            assert!(!reached.contains(*b), "{krate} reaches {b}");
        }
    }
}

/// The top-level modules of the crate whose sources are under `src` (a folder module counts as
/// one), each with the top-level modules its code names: `use crate::…` lines (groups included)
/// and inline `crate::…` paths, tests included, comments not.
fn module_graph(src: &std::path::Path) -> std::collections::BTreeMap<String, BTreeSet<String>> {
    fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).expect("read src").flatten() {
            let p = e.path();
            if p.is_dir() {
                files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut all = Vec::new();
    files(src, &mut all);
    let top = |p: &std::path::Path| -> Option<String> {
        let rel = p.strip_prefix(src).ok()?;
        let first = rel
            .components()
            .next()?
            .as_os_str()
            .to_string_lossy()
            .into_owned();
        let name = first.trim_end_matches(".rs").to_owned();
        (name != "lib" && name != "main").then_some(name)
    };
    let modules: BTreeSet<String> = all.iter().filter_map(|p| top(p)).collect();
    let mut graph = std::collections::BTreeMap::new();
    for p in &all {
        let Some(from) = top(p) else { continue };
        // Comments (doc links among them) name modules without depending on them.
        let text: String = std::fs::read_to_string(p)
            .expect("read a source file")
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let edges: &mut BTreeSet<String> = graph.entry(from.clone()).or_default();
        for (at, _) in text.match_indices("crate::") {
            // Not a longer name ending in `crate` (`headroom_crate::`).
            if text[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
            {
                continue;
            }
            let rest = &text[at + "crate::".len()..];
            let names: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
                // `crate::{a::B, c}`: each item's first name, at the group's top level.
                let mut depth = 0;
                let mut items = Vec::new();
                let mut start = 0;
                for (i, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => {
                            items.push(&group[start..i]);
                            break;
                        }
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            items.push(&group[start..i]);
                            start = i + 1;
                        }
                        _ => {}
                    }
                }
                items
            } else {
                vec![rest]
            };
            for n in names {
                let n: String = n
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if n != from && modules.contains(&n) {
                    edges.insert(n);
                }
            }
        }
    }
    graph
}

/// The strongly connected groups of more than one module (Tarjan's algorithm), largest first.
fn circles(graph: &std::collections::BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a std::collections::BTreeMap<String, BTreeSet<String>>,
        index: std::collections::HashMap<&'a str, usize>,
        low: std::collections::HashMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    impl<'a> T<'a> {
        fn visit(&mut self, v: &'a str) {
            self.index.insert(v, self.next);
            self.low.insert(v, self.next);
            self.next += 1;
            self.stack.push(v);
            self.on.insert(v);
            let g = self.g;
            for w in g.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low[v];
                    self.low.insert(v, lv.min(lw));
                } else if self.on.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low[v];
                    self.low.insert(v, lv.min(iw));
                }
            }
            if self.low[v] == self.index[v] {
                let mut group = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on.remove(w);
                    group.push(w.to_owned());
                    if w == v {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    self.out.push(group);
                }
            }
        }
    }
    let mut t = T {
        g: graph,
        index: Default::default(),
        low: Default::default(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.out.sort_by_key(|g| std::cmp::Reverse(g.len()));
    t.out
}

#[test]
fn the_circle_finder_finds_a_circle_and_a_line_has_none() {
    let g = |edges: &[(&str, &str)]| {
        let mut m: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
        for (a, b) in edges {
            m.entry((*a).into()).or_default().insert((*b).into());
            m.entry((*b).into()).or_default();
        }
        m
    };
    assert!(circles(&g(&[("a", "b"), ("b", "c")])).is_empty());
    assert_eq!(
        circles(&g(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])),
        [["a", "b", "c"]]
    );
}

/// Issue 40's rule: no import circle between the top-level modules of a crate (a folder module
/// counts as one) — the app's included: each panel owns its slot and tells the tray through one
/// event, so no panel reads another's state. Every circle found is printed.
#[test]
fn no_import_circles_between_a_crates_modules() {
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    for krate in [
        "crates/headroom-model/src",
        "crates/headroom-decide/src",
        "crates/headroom-probe/src",
        "crates/headroom-store/src",
        "crates/headroom-report/src",
        "crates/headroom-core/src",
        "crates/headroom-cli/src",
        "crates/headroom-torch/src",
        "src-tauri/src",
    ] {
        let graph = module_graph(&root.join(krate));
        assert!(
            graph.len() > 1,
            "{krate}: the modules were found: {graph:?}"
        );
        let found = circles(&graph);
        for c in &found {
            eprintln!("{krate}: a circle of {}: {}", c.len(), c.join(" "));
        }
        assert!(found.is_empty(), "{krate}: import circles {found:?}");
    }
}
