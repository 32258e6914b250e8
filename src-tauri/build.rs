//! Tauri's build step, with Headroom's own commands as the only ones the UI may call
//! (capabilities/default.json grants exactly these): those of the IPC contract.

/// The app's commands, read from the IPC contract's list (src/contract.rs: one
/// `module::command(…) -> …;` line each); each gets an `allow-…` permission.
fn commands() -> Vec<String> {
    let text = std::fs::read_to_string("src/contract.rs").expect("src/contract.rs");
    let list = &text[text.find("\ncontract! {").expect("the contract! list")..];
    let list = &list[..list.find("\n}").expect("the end of the contract! list")];
    list.lines()
        .filter_map(|l| {
            let (path, _) = l.trim().split_once('(')?;
            let (_, name) = path.split_once("::")?;
            Some(name.to_owned())
        })
        .collect()
}

include!("../build-support/commit.rs");

fn main() {
    emit_commit();
    println!("cargo:rerun-if-changed=src/contract.rs");
    let commands = commands();
    assert!(
        commands.len() >= 20,
        "too few commands in src/contract.rs: {commands:?}"
    );
    // tauri-build keeps the names for the whole (short) build process.
    let names: Vec<&'static str> = commands
        .into_iter()
        .map(|c| &*Box::leak(c.into_boxed_str()))
        .collect();
    let attributes = tauri_build::Attributes::new().app_manifest(
        tauri_build::AppManifest::new().commands(Box::leak(names.into_boxed_slice())),
    );
    if let Err(e) = tauri_build::try_build(attributes) {
        panic!("tauri build step failed: {e:#}");
    }
}
