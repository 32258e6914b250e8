//! The Remote panel's commands: host profiles, keys, checks, the migration wizard's steps, and
//! the VNC tunnel. Thin adapters over `headroom_core::remote`; blocking work runs off the main
//! thread.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use headroom_core::jobs::migrate::{run_step, Context, Migration, Step};
use headroom_core::menubar::ToTray;
use headroom_core::remote::check::{check, record, CheckOptions, CheckReport};
use headroom_core::remote::vnc::Tunnel;
use headroom_core::remote::{ssh_dir, HostProfile, Hosts};
use serde::{Deserialize, Serialize};
use tauri::ipc::Channel;
use tauri::{AppHandle, Manager};

use crate::error::{AppError, ErrorCode};
use crate::util::blocking;
use crate::util::lock;

/// Changes the profiles with `f` and writes them and the managed ssh config under Headroom's
/// edit lock, both or neither (a `remote add` from the CLI at the same moment waits).
fn edit_hosts<T>(
    f: impl FnOnce(&mut Hosts) -> Result<T, headroom_store::CoreError>,
) -> Result<T, AppError> {
    Ok(Hosts::edit(&ssh_dir()?, f)?.0)
}

/// A detached run on a host, as the Remote panel lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct RemoteRun {
    pub id: String,
    pub state: headroom_core::jobs::detached::DetachedState,
    /// Its epoch, steps, samples/s, memory and start, in one line.
    pub summary: String,
    pub last_line: Option<String>,
    pub command: String,
    /// Its row in this ledger (mirrored under the host's name).
    pub ledger_run_id: Option<i64>,
}

impl RemoteRun {
    fn of(r: &headroom_core::jobs::detached::DetachedRun, row: Option<i64>) -> Self {
        Self {
            id: r.meta.id.clone(),
            state: r.state,
            summary: r.summary(),
            last_line: r.note.clone().or_else(|| r.last_line.clone()),
            command: r.meta.command.join(" "),
            ledger_run_id: row,
        }
    }
}

/// How long a call about runs there may wait for the connection.
pub(crate) const RUNS_TIMEOUT: Duration = headroom_core::jobs::remote_runs::RUNS_TIMEOUT;

/// Mirrors `found` into the ledger (each run once, each epoch once) and returns the panel's
/// rows. With `app`, a run that ended since the ledger last saw it running is said in a
/// notification here (the panel's look may see the end before the background follow-up does);
/// without, nothing is said (the user's own Stop, a start).
pub(crate) fn mirrored<R: tauri::Runtime>(
    app: Option<&tauri::AppHandle<R>>,
    name: &str,
    found: &[headroom_core::jobs::detached::DetachedRun],
) -> Vec<RemoteRun> {
    let m = headroom_core::jobs::open_ledger()
        .ok()
        .and_then(|l| headroom_core::jobs::remote_runs::mirror_noting_ends(&l, name, found).ok());
    if let Some(app) = app {
        for &i in m.iter().flat_map(|m| &m.ended) {
            tell_ended(app, name, &found[i]);
        }
    }
    found
        .iter()
        .enumerate()
        .map(|(i, r)| RemoteRun::of(r, m.as_ref().and_then(|m| m.rows.get(i).copied())))
        .collect()
}

/// The notification of a run there that ended: how, its command, where it stood, its last line.
fn tell_ended<R: tauri::Runtime>(
    app: &tauri::AppHandle<R>,
    host: &str,
    r: &headroom_core::jobs::detached::DetachedRun,
) {
    let (title, body) = headroom_core::jobs::remote_runs::ended_notice(host, r);
    crate::notify::send(app, crate::notify::Kind::Verdict, &title, &body);
}

/// The detached runs on host `name` (state, progress, last line), mirrored into the ledger.
#[tauri::command]
pub async fn remote_runs(app: AppHandle, name: String) -> Result<Vec<RemoteRun>, AppError> {
    blocking(move || {
        let p = edit_hosts(|hosts| Ok(hosts.get(&name)?.clone()))?;
        let found = headroom_core::jobs::remote_runs::list(&p, RUNS_TIMEOUT)?;
        Ok(mirrored(Some(&app), &name, &found))
    })
    .await
}

/// Starts project `project`'s training on host `name`, detached: it goes on when this Mac
/// sleeps or the app quits. Needs the migration's steps up to the project to have passed.
#[tauri::command]
pub async fn start_remote_run(
    name: String,
    project: String,
    batch: Option<u32>,
) -> Result<RemoteRun, AppError> {
    blocking(move || {
        let p = edit_hosts(|hosts| Ok(hosts.get(&name)?.clone()))?;
        // No batch typed: the one the sweep there chose, else the sweep here (as `headroom
        // remote run` and "Continue on HOST" take it).
        let ledger = headroom_core::jobs::open_ledger().ok();
        let (batch, _) =
            headroom_core::jobs::remote_runs::batch_for(&name, &project, batch, ledger.as_ref())?;
        let started = headroom_core::jobs::remote_runs::start_project(
            &p,
            &project,
            batch,
            None,
            RUNS_TIMEOUT,
        )?;
        let run = headroom_core::jobs::remote_runs::just_started(&started.meta);
        Ok(mirrored(None::<&AppHandle>, &name, std::slice::from_ref(&run)).remove(0))
    })
    .await
}

/// Ends run `id` on host `name` and its whole process group there.
#[tauri::command]
pub async fn stop_remote_run(name: String, id: String) -> Result<RemoteRun, AppError> {
    blocking(move || {
        headroom_core::jobs::detached::check_id(&id)?;
        let p = edit_hosts(|hosts| Ok(hosts.get(&name)?.clone()))?;
        let r = headroom_core::jobs::remote_runs::stop(&p, &id, RUNS_TIMEOUT)?;
        Ok(mirrored(None::<&AppHandle>, &name, std::slice::from_ref(&r)).remove(0))
    })
    .await
}

/// How often the runs in flight on remote hosts are asked how they stand.
const FOLLOW_EVERY: Duration = Duration::from_secs(60);

/// Follows the runs training on remote hosts in the background, without a webview: every
/// minute each host with runs in flight (as the ledger last saw them) is asked over ssh, what
/// they did is mirrored into the ledger, the tray counts those still running, and a run that
/// ended since the last look is said in a notification. (Under `headroom-tray` the tray does
/// this itself: the popover's process is gone while closed; this is the app run alone.)
pub fn follow_remote_runs<R: tauri::Runtime>(app: &tauri::AppHandle<R>) {
    let app = app.clone();
    std::thread::spawn(move || loop {
        let looked = headroom_core::jobs::remote_runs::follow_up_now();
        match looked {
            Ok(f) => {
                for (host, r) in &f.ended {
                    tell_ended(&app, host, r);
                }
                let line = crate::tray::RemoteLine {
                    running: f.running.into_iter().collect(),
                };
                crate::tray::tell(&app, crate::tray::TrayPart::Remote(Some(line)));
                for (host, why) in &f.unreachable {
                    eprintln!("headroom-app: the runs on {host} could not be asked: {why}");
                }
            }
            Err(e) => eprintln!("headroom-app: the runs on remote hosts were not followed: {e}"),
        }
        std::thread::sleep(crate::util::seconds_env(
            "HEADROOM_APP_REMOTE_FOLLOW_S",
            FOLLOW_EVERY,
        ));
    });
}

/// The profiles.
#[tauri::command]
pub async fn list_hosts() -> Result<Vec<HostProfile>, AppError> {
    blocking(|| Ok(Hosts::load()?.list().cloned().collect())).await
}

/// Adds (or replaces) a profile and its Host block.
#[tauri::command]
pub async fn add_host(profile: HostProfile, replace: bool) -> Result<HostProfile, AppError> {
    blocking(move || {
        edit_hosts(|hosts| hosts.add(profile.clone(), replace))?;
        Ok(profile)
    })
    .await
}

/// Removes a profile.
#[tauri::command]
pub async fn remove_host(name: String) -> Result<bool, AppError> {
    blocking(move || {
        edit_hosts(|hosts| {
            // An unknown name is refused as the CLI refuses it, and nothing is rewritten.
            hosts.get(&name)?;
            Ok(hosts.remove(&name))
        })
    })
    .await
}

/// A key pair the user may install on the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct KeyInfo {
    /// The private key's path (what `--identity` takes).
    pub path: String,
    pub public_key: String,
}

/// The public keys in the SSH folder, each with its private key present.
pub fn keys_in(dir: &Path) -> Vec<KeyInfo> {
    let mut keys: Vec<KeyInfo> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter_map(|e| {
                    let p = e.path();
                    let private = p.to_str()?.strip_suffix(".pub").map(PathBuf::from)?;
                    if !private.exists() {
                        return None;
                    }
                    let public_key = std::fs::read_to_string(&p).ok()?.trim().to_owned();
                    public_key.starts_with("ssh-").then(|| KeyInfo {
                        path: private.display().to_string(),
                        public_key,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    keys.sort_by(|a, b| a.path.cmp(&b.path));
    keys
}

#[tauri::command]
pub async fn list_keys() -> Result<Vec<KeyInfo>, AppError> {
    blocking(|| Ok(keys_in(&ssh_dir()?))).await
}

/// Makes `headroom_ed25519` in the SSH folder (never overwriting a key) with `ssh-keygen`.
#[tauri::command]
pub async fn make_key() -> Result<KeyInfo, AppError> {
    blocking(|| make_key_in(&ssh_dir()?)).await
}

/// Makes `headroom_ed25519` in `dir` unless it exists; returns it with its public half.
pub fn make_key_in(dir: &Path) -> Result<KeyInfo, AppError> {
    let path = dir.join("headroom_ed25519");
    if !path.exists() {
        std::fs::create_dir_all(dir).map_err(|e| {
            AppError::new(
                ErrorCode::Io,
                format!("cannot create {}: {e}", dir.display()),
            )
        })?;
        let out = std::process::Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C", "headroom", "-f"])
            .arg(&path)
            .output()
            .map_err(|e| {
                AppError::new(
                    ErrorCode::NoSsh,
                    format!("cannot run ssh-keygen: {e}; install OpenSSH"),
                )
            })?;
        if !out.status.success() {
            return Err(AppError::new(
                ErrorCode::Keygen,
                format!(
                    "ssh-keygen could not make {}: {}",
                    path.display(),
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            ));
        }
    }
    keys_in(dir)
        .into_iter()
        .find(|k| Path::new(&k.path) == path)
        .ok_or_else(|| {
            AppError::new(
                ErrorCode::Keygen,
                format!(
                    "{} exists but its public half {}.pub cannot be read; remove both or \
                     restore the .pub file",
                    path.display(),
                    path.display()
                ),
            )
        })
}

/// Checks a host (as `headroom remote check`) and records it.
#[tauri::command]
pub async fn check_host(name: String) -> Result<CheckReport, AppError> {
    blocking(move || {
        // Under the edit lock: ssh must know the name before it is used.
        let p = edit_hosts(|hosts| Ok(hosts.get(&name)?.clone()))?;
        let r = check(&p, &CheckOptions::default())?;
        let ledger = headroom_core::jobs::open_ledger()?;
        record(&ledger, &r)?;
        Ok(r)
    })
    .await
}

/// The migration of `project` to host `name` as saved, or a new one (every step pending): the
/// wizard's state lives in Headroom's folder, so it resumes where the CLI or the app stopped.
#[tauri::command]
pub async fn migration_state(name: String, project: String) -> Result<Migration, AppError> {
    blocking(move || {
        Hosts::load()?.get(&name)?;
        headroom_core::project::get(&project)?;
        Ok(Migration::load_or_new(&name, &project, None)?)
    })
    .await
}

/// Runs one step of the migration (only once the steps before it passed), saves how it went
/// and returns the whole state. `password` (the key step's) is used once and never kept;
/// `remote_dir` moves the project's folder there (the steps from the check on run again).
/// `also_copy`, when given, is what the project step copies beyond the default (see
/// [`Migration::set_also_copy`]). `on_update` gets the step's progress lines as they come (what it is doing, rsync's running
/// total, pip's lines).
#[tauri::command]
pub async fn run_migration_step(
    name: String,
    project: String,
    step: Step,
    password: Option<String>,
    remote_dir: Option<String>,
    also_copy: Option<Vec<String>>,
    on_update: Channel<String>,
) -> Result<Migration, AppError> {
    blocking(move || {
        // Under the edit lock: ssh must know the name before it is used.
        let p = edit_hosts(|hosts| Ok(hosts.get(&name)?.clone()))?;
        let proj = headroom_core::project::get(&project)?;
        let mut m = Migration::load_or_new(
            &name,
            &project,
            remote_dir.as_deref().filter(|d| !d.trim().is_empty()),
        )?;
        if let Some(also) = &also_copy {
            // Kept even when the gate below refuses the step.
            m.set_also_copy(also);
            m.save()?;
        }
        m.gate(step)?;
        let dir = m.remote_dir.clone();
        let also = m.also_copy.clone();
        let mut say = |line: &str| {
            let _ = on_update.send(line.to_owned());
        };
        let mut ctx = Context {
            profile: &p,
            project: &proj,
            remote_dir: &dir,
            also_copy: &also,
            password: password.as_deref().filter(|p| !p.is_empty()),
            timeout: Duration::from_secs(10),
            on: &mut say,
        };
        run_step(&mut m, step, &mut ctx);
        m.save()?;
        Ok(m)
    })
    .await
}

/// The Remote panel's slot: the open VNC tunnel, if any (closed when the app quits).
#[derive(Debug, Default)]
pub struct VncSlot(Mutex<Option<(String, Tunnel)>>);

impl VncSlot {
    /// Whether a tunnel to a host's screen is open.
    pub fn open(&self) -> bool {
        lock(&self.0).is_some()
    }
}

/// The tunnel to a host's screen the tray holds, as this popover's process heard of it (its
/// URL).
pub type TrayScreen = crate::mirror::Mirror<String>;

/// Opens the tunnel to the host's screen and hands the URL to the OS viewer; returns the URL.
/// Under `headroom-tray` the tray holds the tunnel (it stays with the popover closed and its
/// process gone); run alone, the app does.
#[tauri::command]
pub async fn open_vnc(app: AppHandle, name: String) -> Result<String, AppError> {
    if crate::relay::external() {
        return crate::mirror::start(app, ToTray::OpenScreen(name), None, |_: &String| None).await;
    }
    let (url, tunnel) = blocking(move || {
        let (url, t) = headroom_core::jobs::screen::open_screen(&name)?;
        Ok((url, (name, t)))
    })
    .await?;
    *lock(&app.state::<VncSlot>().0) = Some(tunnel);
    Ok(url)
}

/// Closes the VNC tunnel.
#[tauri::command]
pub async fn close_vnc(app: AppHandle) -> Result<bool, AppError> {
    if crate::relay::external() {
        crate::relay::to_tray(&ToTray::CloseScreen);
        return Ok(app.state::<TrayScreen>().forget().is_some());
    }
    Ok(lock(&app.state::<VncSlot>().0).take().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_made_once_and_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let ssh = dir.path().join("ssh");
        let k = make_key_in(&ssh).expect("ssh-keygen makes the key");
        assert_eq!(Path::new(&k.path), ssh.join("headroom_ed25519"));
        assert!(k.public_key.starts_with("ssh-ed25519 "), "{}", k.public_key);
        assert!(
            k.public_key.trim_end().ends_with(" headroom"),
            "{}",
            k.public_key
        );
        let again = make_key_in(&ssh).expect("the same key again");
        assert_eq!(again.public_key, k.public_key, "not regenerated");
        std::fs::remove_file(ssh.join("headroom_ed25519.pub")).unwrap();
        let err = make_key_in(&ssh).expect_err("private half without its public half");
        assert!(err.message.contains("cannot be read"), "{}", err.message);
        assert!(
            ssh.join("headroom_ed25519").exists(),
            "the private key is left alone"
        );
    }

    #[test]
    fn keys_need_their_private_half() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join("id_ed25519.pub"), "ssh-ed25519 AAAA ada\n").expect("pub");
        std::fs::write(dir.path().join("id_ed25519"), "private").expect("key");
        std::fs::write(dir.path().join("orphan.pub"), "ssh-rsa BBBB x\n").expect("orphan");
        let keys = keys_in(dir.path());
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].public_key, "ssh-ed25519 AAAA ada");
        assert!(keys[0].path.ends_with("id_ed25519"));
    }
}
