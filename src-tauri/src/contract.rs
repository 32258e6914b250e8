//! The IPC contract, written once: every command the UI may call, with the arguments it sends
//! and the result it gets, in the one list below. From it come the handler Tauri registers
//! ([`handler`]) and the generated TypeScript command table `ui/src/backend/commands.ts` (typed
//! wrappers over `invoke`, so no command name is typed by hand in the UI); the types themselves
//! are ts-rs's, in `ui/src/backend/ipc.ts` (from `src/ipc.rs`). Tests check the list against each
//! command's signature in the source, build.rs's permission list and the capability, and fail
//! when the committed TypeScript is stale.
//!
//! Why not tauri-specta: its 2.0 is still a release candidate (over specta's), and it would
//! replace ts-rs for the 60-odd types the core already exports; a command table generated here
//! beside ts-rs's types gives the same guarantees with the generator the house already keeps.

use crate::{about, commands, desktop, ledger, memory, overview, projects, remote, settings};

/// The list: `module::command(argument: arg Type, on_update: channel Snapshot) -> Result;`.
/// `arg` arguments travel as JSON; a `channel` argument is a `Channel<Snapshot>` the UI passes
/// for progress. A command's `State` and `AppHandle` parameters are Tauri's, not the UI's.
macro_rules! contract {
    ($( $module:ident :: $name:ident ( $( $arg:ident : $kind:ident $ty:ty ),* ) -> $ret:ty ; )*) => {
        /// Registers every command of the contract with Tauri.
        pub fn handler() -> impl Fn(tauri::ipc::Invoke<tauri::Wry>) -> bool + Send + Sync + 'static {
            tauri::generate_handler![$( $module::$name ),*]
        }

        /// Every command as data, for the generator and the tests.
        #[cfg(test)]
        pub fn specs() -> Vec<Spec> {
            vec![$(Spec {
                module: stringify!($module),
                name: stringify!($name),
                args: vec![$(Arg {
                    name: stringify!($arg),
                    channel: contract!(@channel $kind),
                    rust: stringify!($ty),
                    ts: <$ty as ts_rs::TS>::name(),
                }),*],
                ret_rust: stringify!($ret),
                ret_ts: <$ret as ts_rs::TS>::name(),
            }),*]
        }
    };
    (@channel arg) => { false };
    (@channel channel) => { true };
}

contract! {
    commands::readiness() -> Report;
    commands::last_readiness() -> Option<Report>;
    commands::start_sweep(form: arg SweepForm, on_update: channel SweepSnapshot) -> SweepSnapshot;
    commands::cancel_sweep() -> bool;
    commands::sweep_snapshot() -> Option<SweepSnapshot>;
    commands::list_runs(limit: arg Option<u32>) -> Vec<RunRecord>;
    commands::chart_for_run(run_id: arg i64) -> String;
    ledger::run_report(run_id: arg i64) -> RunReport;
    ledger::export_runs(run_ids: arg Vec<i64>, format: arg String) -> Vec<String>;
    ledger::compare_runs(a: arg i64, b: arg i64) -> Comparison;
    memory::start_epochs(form: arg EpochsForm, on_update: channel MemorySnapshot) -> MemorySnapshot;
    memory::list_processes() -> Vec<ProcessInfo>;
    memory::start_watch(pid: arg u32, on_update: channel MemorySnapshot) -> MemorySnapshot;
    memory::stop_memory() -> bool;
    memory::memory_snapshot() -> Option<MemorySnapshot>;
    memory::last_wrapped_run() -> Option<MemorySnapshot>;
    memory::watch_project(name: arg String, batch: arg Option<u32>, device: arg Option<String>, release: arg Option<String>, profile_window: arg Option<u32>, numerics: arg Option<String>, on_update: channel MemorySnapshot) -> MemorySnapshot;
    overview::overview() -> OverviewSnapshot;
    remote::list_hosts() -> Vec<HostProfile>;
    remote::add_host(profile: arg HostProfile, replace: arg bool) -> HostProfile;
    remote::remove_host(name: arg String) -> bool;
    remote::list_keys() -> Vec<KeyInfo>;
    remote::make_key() -> KeyInfo;
    remote::check_host(name: arg String) -> CheckReport;
    remote::migration_state(name: arg String, project: arg String) -> Migration;
    remote::run_migration_step(name: arg String, project: arg String, step: arg Step, password: arg Option<String>, remote_dir: arg Option<String>, also_copy: arg Option<Vec<String>>, on_update: channel String) -> Migration;
    remote::open_vnc(name: arg String) -> String;
    remote::close_vnc() -> bool;
    remote::remote_runs(name: arg String) -> Vec<RemoteRun>;
    remote::start_remote_run(name: arg String, project: arg String, batch: arg Option<u32>) -> RemoteRun;
    remote::stop_remote_run(name: arg String, id: arg String) -> RemoteRun;
    about::about() -> About;
    projects::list_projects() -> Vec<Project>;
    projects::add_project(project: arg Project, replace: arg bool) -> Project;
    projects::select_project(name: arg Option<String>) -> bool;
    projects::selected_project() -> Option<String>;
    projects::sweep_project(name: arg String, devices: arg Option<String>, on_update: channel SweepSnapshot) -> SweepSnapshot;
    settings::settings() -> Vec<Setting>;
    settings::set_setting(key: arg String, value: arg String) -> Vec<Setting>;
    desktop::pick_folder(start: arg Option<String>) -> Option<String>;
}

// The types named in the list, for `specs` (only the tests build it).
#[cfg(test)]
use {
    crate::sweep::SweepSnapshot,
    about::About,
    headroom_core::jobs::live::SweepForm,
    headroom_core::jobs::migrate::{Migration, Step},
    headroom_core::project::Project,
    headroom_core::remote::{check::CheckReport, HostProfile},
    headroom_probe::readiness::Report,
    headroom_store::ledger::RunRecord,
    ledger::{Comparison, RunReport},
    memory::{EpochsForm, MemorySnapshot, ProcessInfo},
    overview::OverviewSnapshot,
    remote::{KeyInfo, RemoteRun},
    settings::Setting,
};

/// One command of the contract.
#[cfg(test)]
#[derive(Debug)]
pub struct Spec {
    pub module: &'static str,
    pub name: &'static str,
    pub args: Vec<Arg>,
    pub ret_rust: &'static str,
    pub ret_ts: String,
}

/// One argument the UI sends.
#[cfg(test)]
#[derive(Debug)]
pub struct Arg {
    pub name: &'static str,
    /// A `Channel<rust>` for progress.
    pub channel: bool,
    pub rust: &'static str,
    pub ts: String,
}

/// `start_sweep` → `startSweep`: Tauri's own renaming of command arguments, used for names too.
#[cfg(test)]
fn camel(snake: &str) -> String {
    let mut out = String::new();
    let mut up = false;
    for c in snake.chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.extend(c.to_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The generated `ui/src/backend/commands.ts`.
#[cfg(test)]
pub fn typescript() -> String {
    let ts = |t: &str| t.replace("bigint", "number");
    let specs = specs();
    let mut types: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    let mut body = String::new();
    for s in &specs {
        let mut params = Vec::new();
        let mut keys = Vec::new();
        for a in &s.args {
            let t = ts(&a.ts);
            types.extend(named_types(&t));
            params.push(if a.channel {
                format!("{}: Channel<{t}>", camel(a.name))
            } else {
                format!("{}: {t}", camel(a.name))
            });
            keys.push(camel(a.name));
        }
        let ret = ts(&s.ret_ts);
        types.extend(named_types(&ret));
        let args = if keys.is_empty() {
            String::new()
        } else {
            format!(", {{ {} }}", keys.join(", "))
        };
        body.push_str(&format!(
            "  /** `{}::{}` */\n  {}: ({}): Promise<{ret}> => invoke<{ret}>(\"{}\"{args}),\n",
            s.module,
            s.name,
            camel(s.name),
            params.join(", "),
            s.name,
        ));
    }
    let mut out = String::from(
        "// Generated from the IPC contract by src-tauri/src/contract.rs. Do not edit:\n\
         // run `HEADROOM_BLESS=1 cargo test -p headroom-app` after changing the contract.\n\
         import { Channel, invoke } from \"@tauri-apps/api/core\";\n\n",
    );
    out.push_str(&format!(
        "import type {{ {} }} from \"./ipc\";\n\n",
        types.into_iter().collect::<Vec<_>>().join(", ")
    ));
    out.push_str(&format!(
        "/** The events the app emits. */\nexport const EVENTS = {{ overview: \"{}\", navigate: \"{}\" }} as const;\n\n",
        crate::overview::OVERVIEW_EVENT,
        crate::NAVIGATE_EVENT
    ));
    out.push_str("/** Every command the UI may call, by its Rust name in camelCase. */\nexport const commands = {\n");
    out.push_str(&body);
    out.push_str("};\n");
    out
}

/// The type names (capitalised identifiers) in a TypeScript type.
#[cfg(test)]
fn named_types(t: &str) -> Vec<String> {
    t.split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .filter(|w| w.starts_with(|c: char| c.is_ascii_uppercase()) && *w != "Array")
        .map(ToOwned::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// Whitespace dropped, so `Vec < i64 >` and `Vec<i64>` compare equal.
    fn squash(s: &str) -> String {
        s.chars().filter(|c| !c.is_whitespace()).collect()
    }

    /// The parameters of `pub async fn name(...)` in `text`, split at top-level commas, and the
    /// `T` of its `-> Result<T, AppError>`.
    fn signature(text: &str, name: &str) -> (Vec<String>, String) {
        let head = format!("pub async fn {name}(");
        let from = text.find(&head).unwrap_or_else(|| panic!("no `{head}`")) + head.len();
        let (mut depth, mut params, mut cur, mut end) = (0i32, Vec::new(), String::new(), from);
        for (i, c) in text[from..].char_indices() {
            match c {
                '(' | '<' => depth += 1,
                ')' if depth == 0 => {
                    end = from + i + 1;
                    break;
                }
                ')' | '>' => depth -= 1,
                ',' if depth == 0 => {
                    params.push(std::mem::take(&mut cur));
                    continue;
                }
                _ => {}
            }
            cur.push(c);
        }
        params.push(cur);
        let rest = &text[end..];
        let ret = rest[..rest.find('{').expect("a body")].trim();
        let ret = ret
            .strip_prefix("-> Result<")
            .and_then(|r| r.strip_suffix(", AppError>"))
            .unwrap_or_else(|| panic!("{name} does not return Result<_, AppError>: {ret}"));
        let params = params
            .into_iter()
            .map(|p| squash(&p))
            .filter(|p| !p.is_empty())
            .collect();
        (params, squash(ret))
    }

    #[test]
    fn every_command_in_the_contract_has_the_signature_it_states() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        for s in specs() {
            let text = std::fs::read_to_string(dir.join(format!("{}.rs", s.module)))
                .unwrap_or_else(|e| panic!("{}.rs: {e}", s.module));
            let (params, ret) = signature(&text, s.name);
            let ui: Vec<String> = params
                .into_iter()
                .filter(|p| !p.contains(":State<") && !p.ends_with(":AppHandle"))
                .collect();
            let stated: Vec<String> = s
                .args
                .iter()
                .map(|a| {
                    if a.channel {
                        format!("{}:Channel<{}>", a.name, squash(a.rust))
                    } else {
                        format!("{}:{}", a.name, squash(a.rust))
                    }
                })
                .collect();
            assert_eq!(ui, stated, "the arguments of {}::{}", s.module, s.name);
            assert_eq!(
                ret,
                squash(s.ret_rust),
                "the result of {}::{}",
                s.module,
                s.name
            );
        }
    }

    #[test]
    fn the_committed_command_table_matches_the_contract() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui/src/backend/commands.ts");
        let want = typescript();
        if std::env::var_os("HEADROOM_BLESS").is_some() {
            std::fs::write(&path, &want).expect("write commands.ts");
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "ui/src/backend/commands.ts is stale: run `HEADROOM_BLESS=1 cargo test -p headroom-app` and commit it"
        );
        for s in specs() {
            assert!(
                have.contains(&format!("(\"{}\"", s.name)),
                "{} is registered but not generated",
                s.name
            );
        }
    }

    #[test]
    fn names_are_camel_cased_as_tauri_does() {
        assert_eq!(camel("start_sweep"), "startSweep");
        assert_eq!(camel("on_update"), "onUpdate");
        assert_eq!(camel("about"), "about");
        assert_eq!(named_types("Array<RunRecord> | null"), ["RunRecord"]);
    }
}
