//! The app's attack surface, asserted from the files that define it: the window may call only
//! Headroom's own commands (every one registered, permitted, and nothing else), under a CSP that
//! allows no remote content and no inline script or style, with no shell, file-system, HTTP or
//! opener plugin.

use std::collections::BTreeSet;

#[test]
fn the_window_may_call_only_headrooms_commands_under_a_strict_csp() {
    // The commands build.rs had tauri-build make permissions for (it reads the contract's list;
    // the generated manifest is committed and rewritten by every build).
    let manifests: serde_json::Value =
        serde_json::from_str(include_str!("../gen/schemas/acl-manifests.json"))
            .expect("acl-manifests.json");
    let commands: Vec<String> = manifests["__app-acl__"]["permissions"]
        .as_object()
        .expect("the app's permissions")
        .values()
        .flat_map(|p| {
            p["commands"]["allow"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|c| c.as_str().map(str::to_owned))
        .collect();
    assert!(commands.len() >= 20, "{commands:?}");

    // Every command the UI may call is registered with the handler (the contract's list, which
    // also generates the UI's command table), and nothing else is.
    let registered: BTreeSet<String> = crate::contract::specs()
        .iter()
        .map(|s| s.name.to_owned())
        .collect();
    let listed: BTreeSet<String> = commands.iter().cloned().collect();
    assert_eq!(
        registered, listed,
        "the permissions tauri-build made and the contract (the handler) differ"
    );

    // The capability: the popover window only, our commands and the event listener, nothing else.
    let cap: serde_json::Value =
        serde_json::from_str(include_str!("../capabilities/default.json")).expect("capability");
    assert_eq!(cap["windows"], serde_json::json!(["popover"]));
    let granted: BTreeSet<String> = cap["permissions"]
        .as_array()
        .expect("permissions")
        .iter()
        .map(|p| p.as_str().expect("a permission name").to_owned())
        .collect();
    let mut expected: BTreeSet<String> = commands
        .iter()
        .map(|c| format!("allow-{}", c.replace('_', "-")))
        .collect();
    expected.insert("core:event:allow-listen".into());
    expected.insert("core:event:allow-unlisten".into());
    assert_eq!(granted, expected);
    let others: Vec<_> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/capabilities"))
        .expect("capabilities dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "default.json")
        .collect();
    assert!(others.is_empty(), "other capability files: {others:?}");

    // The CSP: our own origin only; data: images (the charts); IPC; no inline code, no eval.
    let conf: serde_json::Value =
        serde_json::from_str(include_str!("../tauri.conf.json")).expect("tauri.conf.json");
    assert_eq!(conf["app"]["withGlobalTauri"], false);
    let csp = conf["app"]["security"]["csp"].as_str().expect("a CSP");
    let directives: Vec<(&str, Vec<&str>)> = csp
        .split(';')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| {
            let mut parts = d.split_whitespace();
            (parts.next().unwrap_or(""), parts.collect())
        })
        .collect();
    let get = |name: &str| {
        directives
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no {name} in {csp}"))
    };
    assert_eq!(get("default-src"), ["'self'"]);
    assert_eq!(get("script-src"), ["'self'"]);
    assert_eq!(get("style-src"), ["'self'"]);
    assert_eq!(get("img-src"), ["'self'", "data:"]);
    for (name, sources) in &directives {
        for s in sources {
            assert!(
                !s.contains("unsafe") && *s != "*" && !s.starts_with("https:"),
                "{name} allows {s}"
            );
            if s.starts_with("http") {
                assert_eq!(
                    (*name, *s),
                    ("connect-src", "http://ipc.localhost"),
                    "only the IPC origin"
                );
            }
        }
    }

    // No plugin that reaches the shell, the file system, the network or the OS opener. The
    // dialog plugin is there for the folder chooser, opened by Headroom's own `pick_folder`
    // command: the window is granted none of the plugins' commands (checked above: only
    // Headroom's `allow-…` and the event listeners), so it cannot open a file dialog itself.
    let manifest = include_str!("../Cargo.toml");
    for plugin in [
        "tauri-plugin-shell",
        "tauri-plugin-fs",
        "tauri-plugin-http",
        "tauri-plugin-opener",
        "tauri-plugin-process",
    ] {
        assert!(
            !manifest.contains(plugin),
            "{plugin} in src-tauri/Cargo.toml"
        );
    }
}
