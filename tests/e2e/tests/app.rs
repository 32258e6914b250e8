//! The app in its real window: tauri-driver starts `headroom-app --open` through WebKitWebDriver
//! under Xvfb; the test reads a real readiness verdict, runs a real CPU sweep of `mlp`, watches
//! its points arrive and the recommendation appear, finds the run in the ledger, and saves
//! screenshots of both panels. Run by `scripts/e2e.sh`, which provides Xvfb, D-Bus and the paths.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

#[path = "../../support/sshd.rs"]
mod sshd;
#[path = "../../support/tmpfs.rs"]
mod tmpfs;
use sshd::{whoami, FreshUser, Sshd};

fn env_path(key: &str) -> PathBuf {
    PathBuf::from(
        std::env::var_os(key)
            .unwrap_or_else(|| panic!("{key} is not set; run this test through scripts/e2e.sh")),
    )
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// tauri-driver, killed with the test.
struct Driver {
    child: Child,
    base: String,
    /// The app's own HOME, removed with the driver.
    _user_home: tempfile::TempDir,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A WebDriver session; requests are retried on dropped connections (tauri-driver's proxy drops
/// about one in twenty).
struct Session {
    base: String,
}

fn request(method: &str, url: &str, body: Option<&Value>) -> Value {
    // A lookup that races a re-render is answered "stale element reference": ask again.
    for _ in 0..10 {
        match try_request(method, url, body) {
            Ok(v) => return v,
            Err((404, text)) if text.contains("stale element") => {
                std::thread::sleep(Duration::from_millis(100));
            }
            Err((code, text)) => panic!("{method} {url} → {code}: {text}"),
        }
    }
    panic!("{method} {url}: still a stale element after 10 tries");
}

fn try_request(method: &str, url: &str, body: Option<&Value>) -> Result<Value, (u16, String)> {
    let mut last = String::new();
    for _ in 0..6 {
        let req = ureq::request(method, url).timeout(Duration::from_secs(120));
        let res = match body {
            Some(b) => req.send_json(b.clone()),
            None => req.call(),
        };
        match res {
            Ok(r) => return Ok(r.into_json().expect("WebDriver JSON")),
            Err(ureq::Error::Status(code, r)) => {
                return Err((code, r.into_string().unwrap_or_default()));
            }
            Err(e) => {
                last = e.to_string();
                std::thread::sleep(Duration::from_millis(300));
            }
        }
    }
    panic!("{method} {url} failed 6 times: {last}");
}

/// WebKitWebDriver itself, attached to a browser that is already running (`--target`): the
/// popover's process a tray started anew, which inherited the first session's inspector server
/// (`WEBKIT_INSPECTOR_SERVER`) and its leave to be automated.
struct Attached {
    child: Child,
    session: Session,
}

impl Drop for Attached {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Attached {
    /// A session on the process `pid`, through its inspector server.
    fn to(pid: u32) -> Self {
        let environ =
            std::fs::read(format!("/proc/{pid}/environ")).expect("the process's environment");
        let target = environ
            .split(|b| *b == 0)
            .find_map(|kv| kv.strip_prefix(b"WEBKIT_INSPECTOR_SERVER="))
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .expect("no WEBKIT_INSPECTOR_SERVER in the popover's environment");
        let port = free_port();
        let mut child = Command::new("WebKitWebDriver")
            .args([format!("--port={port}"), format!("--target={target}")])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start WebKitWebDriver");
        let base = serving(&mut child, "WebKitWebDriver", port);
        let session = Session::create(&base, &json!({"capabilities": {"alwaysMatch": {}}}));
        Self { child, session }
    }
}

impl Session {
    fn new(driver: &Driver, app: &Path) -> Self {
        Self::started(driver, app, &["--open"])
    }

    /// A session on `bin` started with `args` (WebKitWebDriver connects to whichever process
    /// under it opens the inspector server it names in the environment).
    fn started(driver: &Driver, bin: &Path, args: &[&str]) -> Self {
        let caps = json!({"capabilities": {"alwaysMatch": {
            "tauri:options": {"application": bin.display().to_string(), "args": args}
        }}});
        Self::create(&driver.base, &caps)
    }

    /// A new session of the WebDriver server at `base`, with `caps`.
    fn create(base: &str, caps: &Value) -> Self {
        let v = request("POST", &format!("{base}/session"), Some(caps));
        let id = v["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session id in {v}"))
            .to_owned();
        Self {
            base: format!("{base}/session/{id}"),
        }
    }

    fn find_all(&self, css: &str) -> Vec<String> {
        let v = request(
            "POST",
            &format!("{}/elements", self.base),
            Some(&json!({"using": "css selector", "value": css})),
        );
        v["value"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|e| e[ELEMENT].as_str().map(ToOwned::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// After the app made its window again: the session is moved to the window's new browsing
    /// context, then waits until `css` matches there, up to `secs`.
    fn reattach(&self, css: &str, secs: u64) -> String {
        let until = Instant::now() + Duration::from_secs(secs);
        loop {
            let handles = try_request("GET", &format!("{}/window/handles", self.base), None);
            if let Ok(v) = handles {
                for h in v["value"].as_array().cloned().unwrap_or_default() {
                    let _ = try_request(
                        "POST",
                        &format!("{}/window", self.base),
                        Some(&json!({"handle": h})),
                    );
                    let found = try_request(
                        "POST",
                        &format!("{}/elements", self.base),
                        Some(&json!({"using": "css selector", "value": css})),
                    );
                    if let Some(e) = found.ok().and_then(|v| {
                        v["value"]
                            .as_array()
                            .and_then(|a| a.first())
                            .and_then(|e| e[ELEMENT].as_str().map(ToOwned::to_owned))
                    }) {
                        return e;
                    }
                }
            }
            assert!(
                Instant::now() < until,
                "{css} did not appear in the new window within {secs} s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until `css` matches, up to `secs`.
    fn wait(&self, css: &str, secs: u64) -> String {
        let until = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(e) = self.find_all(css).into_iter().next() {
                return e;
            }
            assert!(
                Instant::now() < until,
                "{css} did not appear within {secs} s"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// Waits for the element `testid` to reach `state` (its `data-state`); on a timeout says
    /// which state and text it was left in, the first thing to know about a job that did not end.
    fn wait_state(&self, testid: &str, state: &str, secs: u64) -> String {
        let css = format!(r#"[data-testid="{testid}"][data-state="{state}"]"#);
        let until = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(e) = self.find_all(&css).into_iter().next() {
                return e;
            }
            if Instant::now() >= until {
                let (text, now) = self.read(&format!(r#"[data-testid="{testid}"]"#), "data-state");
                panic!("{testid} did not reach {state} within {secs} s: it is {now:?}: {text}");
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    fn text(&self, e: &str) -> String {
        request("GET", &format!("{}/element/{e}/text", self.base), None)["value"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// The text and one attribute of the element `css` matches now, found afresh (a status line
    /// rewritten at every step can go stale between a lookup and a read).
    fn read(&self, css: &str, name: &str) -> (String, Option<String>) {
        for _ in 0..20 {
            if let Some(e) = self.find_all(css).into_iter().next() {
                let text = try_request("GET", &format!("{}/element/{e}/text", self.base), None);
                let attr = try_request(
                    "GET",
                    &format!("{}/element/{e}/attribute/{name}", self.base),
                    None,
                );
                if let (Ok(t), Ok(a)) = (text, attr) {
                    return (
                        t["value"].as_str().unwrap_or_default().to_owned(),
                        a["value"].as_str().map(ToOwned::to_owned),
                    );
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("{css}: could not be read");
    }

    fn attr(&self, e: &str, name: &str) -> Option<String> {
        request(
            "GET",
            &format!("{}/element/{e}/attribute/{name}", self.base),
            None,
        )["value"]
            .as_str()
            .map(ToOwned::to_owned)
    }

    /// What `script` (a function body) returns in the page.
    fn script(&self, script: &str) -> Value {
        request(
            "POST",
            &format!("{}/execute/sync", self.base),
            Some(&json!({"script": script, "args": []})),
        )["value"]
            .clone()
    }

    /// A property of the element now (an input's `value`).
    fn prop(&self, e: &str, name: &str) -> String {
        request(
            "GET",
            &format!("{}/element/{e}/property/{name}", self.base),
            None,
        )["value"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    fn click(&self, e: &str) {
        request(
            "POST",
            &format!("{}/element/{e}/click", self.base),
            Some(&json!({})),
        );
    }

    fn type_into(&self, e: &str, text: &str) {
        request(
            "POST",
            &format!("{}/element/{e}/clear", self.base),
            Some(&json!({})),
        );
        request(
            "POST",
            &format!("{}/element/{e}/value", self.base),
            Some(&json!({"text": text})),
        );
    }

    fn screenshot(&self, path: &Path) {
        // WebKitGTK's snapshot waits for the page's next frame: a still page without its DMA-BUF
        // renderer (the app's default on Linux) gave none for two minutes. Frames for a second
        // or two, each a change nobody sees, give it one.
        self.script(
            "let n = 0; const b = document.body.style; \
             (function frame() { \
               b.backgroundColor = n % 2 ? '' : 'rgb(255, 255, 254)'; \
               if (++n < 120) requestAnimationFrame(frame); else b.backgroundColor = ''; \
             })();",
        );
        let v = request("GET", &format!("{}/screenshot", self.base), None);
        let png = base64::engine::general_purpose::STANDARD
            .decode(v["value"].as_str().expect("base64 screenshot"))
            .expect("decode screenshot");
        std::fs::write(path, png).expect("write screenshot");
    }

    fn close(self) {
        let _ = ureq::delete(&self.base).call();
    }

    /// Presses and releases each key in turn, as the keyboard would (WebDriver key actions:
    /// `\u{E004}` Tab, `\u{E007}` Enter, `\u{E00C}` Escape).
    fn keys(&self, keys: &[&str]) {
        let actions: Vec<Value> = keys
            .iter()
            .flat_map(|k| {
                [
                    json!({"type": "keyDown", "value": k}),
                    json!({"type": "keyUp", "value": k}),
                ]
            })
            .collect();
        request(
            "POST",
            &format!("{}/actions", self.base),
            Some(&json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]})),
        );
    }

    /// The `data-testid` of the element that has the focus.
    fn focused(&self) -> Option<String> {
        let v = request("GET", &format!("{}/element/active", self.base), None);
        let e = v["value"][ELEMENT].as_str()?.to_owned();
        self.attr(&e, "data-testid")
    }
}

const TAB: &str = "\u{E004}";
const ENTER: &str = "\u{E007}";
const ESCAPE: &str = "\u{E00C}";

/// A child process killed when the test ends, passing or not.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A tray (or an app become one) killed when the test ends, with every process under it (the
/// popover's process, its WebKit, a sweep's worker).
struct TrayProcess(Child);

impl Drop for TrayProcess {
    fn drop(&mut self) {
        for (p, _) in descendants(self.0.id()) {
            let _ = Command::new("kill").arg(p.to_string()).status();
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `dbus-monitor` on the session bus, keeping every `Notify` call the app makes: the desktop
/// notifications as the notification centre receives them.
struct BusMonitor {
    child: Child,
    lines: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl BusMonitor {
    fn start() -> Self {
        let mut child = Command::new("dbus-monitor")
            .args([
                "--session",
                "type='method_call',interface='org.freedesktop.Notifications',member='Notify'",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start dbus-monitor (package dbus-bin)");
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = std::sync::Arc::clone(&lines);
        let out = child.stdout.take().expect("dbus-monitor stdout");
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                sink.lock().expect("monitor lines").push(l);
            }
        });
        Self { child, lines }
    }

    /// Waits until a notification whose text contains `needle` went over the bus; returns
    /// the string arguments of the calls seen so far.
    fn wait_for(&self, needle: &str, secs: u64) -> Vec<String> {
        let until = Instant::now() + Duration::from_secs(secs);
        loop {
            let strings: Vec<String> = self
                .lines
                .lock()
                .expect("monitor lines")
                .iter()
                .filter_map(|l| l.trim().strip_prefix("string ").map(str::to_owned))
                .collect();
            if strings.iter().any(|l| l.contains(needle)) {
                return strings;
            }
            assert!(
                Instant::now() < until,
                "no notification containing {needle:?} in {secs} s; seen: {strings:?}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for BusMonitor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The pid owning the session bus's notification name, if any. The bus daemon's own
/// GetConnectionUnixProcessID starts nothing (asking the name itself, as `dunstctl` does, would
/// have the bus start the packaged dunst).
fn notification_server() -> Option<u32> {
    Command::new("dbus-send")
        .args([
            "--session",
            "--print-reply=literal",
            "--dest=org.freedesktop.DBus",
            "/org/freedesktop/DBus",
            "org.freedesktop.DBus.GetConnectionUnixProcessID",
            "string:org.freedesktop.Notifications",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .last()?
                .parse::<u32>()
                .ok()
        })
}

/// dunst, a real notification server, on the session bus: it shows the app's notifications
/// with their buttons. Its context menu (`dunstctl context`) lists every action of the shown
/// notifications through its `dmenu` program; here that program is a script that keeps the menu
/// in `menu.txt` and picks the line naming the Remote panel, as a user clicking that button.
struct Dunst {
    dir: tempfile::TempDir,
    child: Child,
}

impl Dunst {
    fn start() -> Self {
        Self::picking("Remote panel")
    }

    /// dunst whose context menu picks the first action whose line contains `button`.
    fn picking(button: &str) -> Self {
        let dir = tempfile::tempdir().expect("dunst dir");
        let d = dir.path();
        let pick = d.join("pick.sh");
        std::fs::write(
            &pick,
            format!(
                "#!/bin/sh\ncat > {menu}\ngrep -m1 '{button}' {menu}\n",
                menu = d.join("menu.txt").display()
            ),
        )
        .expect("pick script");
        std::fs::set_permissions(&pick, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("chmod pick script");
        // Shown notifications stay until acted on, so the menu still lists them.
        std::fs::write(
            d.join("dunstrc"),
            format!(
                "[global]\n    dmenu = {}\n[urgency_low]\n    timeout = 0\n\
                 [urgency_normal]\n    timeout = 0\n[urgency_critical]\n    timeout = 0\n",
                pick.display()
            ),
        )
        .expect("dunstrc");
        // A notification server the bus started for an earlier test's notification (this suite
        // runs in a D-Bus session of its own) would keep the name from this one.
        if let Some(left) = notification_server() {
            let _ = Command::new("kill").arg(left.to_string()).status();
            let until = Instant::now() + Duration::from_secs(5);
            while notification_server() == Some(left) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        let child = Command::new("dunst")
            .arg("-config")
            .arg(d.join("dunstrc"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start dunst (scripts/bootstrap.sh installs it)");
        // Wait until *this* dunst owns the notification name. Asking the name itself (as
        // `dunstctl` does) would have the bus start the packaged dunst, with its default
        // config, when ours is not there yet; the bus daemon's own GetConnectionUnixProcessID
        // starts nothing.
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            let owner = notification_server();
            if owner == Some(child.id()) {
                break;
            }
            assert!(
                Instant::now() < until,
                "dunst (pid {}) did not take the notification bus in 10 s; its owner is {owner:?} \
                 (is another notification server running?)",
                child.id()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Self { dir, child }
    }

    /// Opens the context menu and picks the button it was started to pick ("Open the Remote
    /// panel"); returns the menu it offered.
    fn click_remote_button(&self) -> String {
        let st = Command::new("dunstctl")
            .arg("context")
            .status()
            .expect("dunstctl context");
        assert!(st.success(), "dunstctl context failed");
        let menu = self.dir.path().join("menu.txt");
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(m) = std::fs::read_to_string(&menu) {
                if !m.is_empty() {
                    return m;
                }
            }
            assert!(Instant::now() < until, "dunst offered no context menu");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Dunst {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A plain training loop a researcher might write: a DataLoader, an MLP, SGD, six epochs, and
/// a list that keeps one 96 MiB tensor per epoch (the classic leak). No markers, no Headroom.
const LEAKING_TRAIN: &str = r"
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
loader = DataLoader(TensorDataset(torch.randn(640, 64), torch.randint(0, 10, (640,))), batch_size=32)
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
kept = []
for epoch in range(6):
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    kept.append(torch.ones(96 * 262144))
    print(f'epoch {epoch + 1} loss {loss.item():.4f}', flush=True)
";

fn start_driver(home: &Path) -> Driver {
    start_driver_with(home, &[])
}

/// The WebDriver server `child` (named `name` in its log lines) once it answers on `port`: its
/// log kept flowing (a full pipe would stall it) and visible on failure; its base URL.
fn serving(child: &mut Child, name: &'static str, port: u16) -> String {
    if let Some(err) = child.stderr.take() {
        std::thread::spawn(move || {
            for l in BufReader::new(err).lines().map_while(Result::ok) {
                eprintln!("{name}: {l}");
            }
        });
    }
    let base = format!("http://127.0.0.1:{port}");
    let until = Instant::now() + Duration::from_secs(30);
    while ureq::get(&format!("{base}/status")).call().is_err() {
        assert!(Instant::now() < until, "{name} did not answer on {base}");
        std::thread::sleep(Duration::from_millis(200));
    }
    base
}

/// tauri-driver (and so the app) with more of its environment set: `HOME` for a test that
/// reads what the app writes there. Otherwise `HOME` is a fresh temporary folder (not in
/// `home`, which a test may make read-only), so that no test touches the real one (the app's
/// start writes or removes ~/.config/autostart's entry).
fn start_driver_with(home: &Path, env: &[(&str, &Path)]) -> Driver {
    let port = free_port();
    let native = free_port();
    let venv = env_path("HEADROOM_E2E_VENV");
    let user_home = tempfile::tempdir().expect("a HOME for the app");
    let own_home = user_home.path();
    let mut child = Command::new(env_path("HEADROOM_E2E_TAURI_DRIVER"))
        .args([
            "--port",
            &port.to_string(),
            "--native-port",
            &native.to_string(),
        ])
        .env("HEADROOM_HOME", home)
        .env("HEADROOM_SSH_DIR", home.join("ssh"))
        .env("HEADROOM_BIN", env_path("HEADROOM_E2E_WORKER"))
        .env("VIRTUAL_ENV", &venv)
        .env("HEADROOM_APP_OPEN", "1")
        .env("HOME", own_home)
        .env_remove("XDG_CONFIG_HOME")
        .envs(env.iter().map(|(k, v)| (*k, *v)))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tauri-driver");
    let base = serving(&mut child, "tauri-driver", port);
    Driver {
        child,
        base,
        _user_home: user_home,
    }
}

#[test]
#[ignore = "needs Xvfb, tauri-driver and WebKitWebDriver: run scripts/e2e.sh"]
fn readiness_and_a_cpu_sweep_in_the_real_window() {
    let app = env_path("HEADROOM_E2E_APP");
    let out = env_path("HEADROOM_E2E_OUT");
    std::fs::create_dir_all(&out).expect("output dir");
    let home = tempfile::tempdir().expect("temp HEADROOM_HOME");
    let bus = BusMonitor::start();
    let dunst = Dunst::start();
    let driver = start_driver(home.path());
    let s = Session::new(&driver, &app);

    // Overview first: the decision table from the background loop. On this Linux machine the
    // CPU is recommended and MPS/MLX are blocked.
    let head = s.wait(
        r#"[data-testid="verdict-headline"][data-verdict="cpu"]"#,
        60,
    );
    assert!(s.text(&head).starts_with("CPU"), "{}", s.text(&head));
    let mps = s.wait(r#"[data-testid="column-mps"]"#, 5);
    assert_eq!(s.attr(&mps, "data-status").as_deref(), Some("blocked"));
    s.screenshot(&out.join("overview.png"));

    // Settings, from the header: a threshold typed and saved with Enter lands in the config
    // file the CLI reads; a value out of range is refused with the reason.
    s.click(&s.wait(r#"[data-testid="tab-settings"]"#, 5));
    let gain = s.wait(r#"[data-testid="setting-decide.amp_gain"]"#, 20);
    s.type_into(&gain, "0.15\u{E007}");
    let saved = s.wait(r#"[data-testid="settings-status"][data-state="ok"]"#, 20);
    assert_eq!(s.text(&saved), "decide.amp_gain saved");
    let config = std::fs::read_to_string(home.path().join("config.toml")).expect("config");
    assert!(config.contains("amp_gain = 0.15"), "{config}");
    let gain = s.wait(r#"[data-testid="setting-decide.amp_gain"]"#, 5);
    s.type_into(&gain, "2\u{E007}");
    let refused = s.wait(r#"[data-testid="settings-status"][data-state="error"]"#, 20);
    assert!(
        s.text(&refused).contains("must be a share between 0 and 1"),
        "{}",
        s.text(&refused)
    );
    s.screenshot(&out.join("settings.png"));

    // Readiness: a real verdict from doctor, in the window.
    s.click(&s.wait(r#"[data-testid="tab-readiness"]"#, 5));
    let cpu = s.wait(r#"[data-testid="light-cpu"]"#, 120);
    assert_eq!(s.attr(&cpu, "data-state").as_deref(), Some("green"));
    let text = s.text(&cpu);
    assert!(text.contains("torch 2.11.0"), "{text}");
    let mps = s.wait(r#"[data-testid="light-mps"]"#, 5);
    assert_eq!(s.attr(&mps, "data-state").as_deref(), Some("off"));
    assert!(!s.find_all(r#"[data-testid="python-row"]"#).is_empty());
    // The interpreters that can train are listed; those without torch (this machine's system
    // Python among them) are one folded line.
    let shown = s.find_all(r#"section.pythons > [data-testid="python-row"]"#);
    for r in &shown {
        let t = s.text(r);
        assert!(
            t.contains("torch 2."),
            "a row without torch shown unfolded: {t}"
        );
    }
    let folded = s
        .find_all(r#"[data-testid="pythons-without-torch"] > summary"#)
        .first()
        .map(|f| s.text(f))
        .unwrap_or_default();
    eprintln!(
        "readiness: {} Pythons with torch shown; {folded:?}",
        shown.len()
    );
    s.screenshot(&out.join("readiness.png"));

    // Sweep: a fresh panel says what to do instead of drawing an empty table.
    s.click(&s.wait(r#"[data-testid="tab-sweep"]"#, 5));
    let empty = s.wait(r#"[data-testid="sweep-empty"]:not([hidden])"#, 5);
    assert!(
        s.text(&empty).starts_with("No sweep yet"),
        "{}",
        s.text(&empty)
    );
    assert!(s
        .find_all(r#"[data-testid="sweep-results"]:not([hidden])"#)
        .is_empty());
    s.screenshot(&out.join("sweep_fresh.png"));

    // Sweep: mlp on the CPU up to batch 32, points arriving while it runs.
    s.click(&s.wait(r#"[data-testid="sweep-device"] option[value="cpu"]"#, 5));
    s.type_into(&s.wait(r#"[data-testid="sweep-max-batch"]"#, 5), "32");
    s.click(&s.wait(r#"[data-testid="run-sweep"]"#, 5));
    let status = s.wait(r#"[data-testid="sweep-status"][data-state="running"]"#, 30);
    let until = Instant::now() + Duration::from_secs(300);
    let mut seen_live = 0;
    loop {
        let rows = s.find_all(r#"[data-testid="sweep-point"]"#).len();
        let running = s.attr(&status, "data-state").as_deref() == Some("running");
        if running {
            seen_live = seen_live.max(rows);
        } else {
            break;
        }
        assert!(Instant::now() < until, "the sweep did not finish in 300 s");
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(
        seen_live >= 1,
        "no point arrived while the sweep was running"
    );
    assert_eq!(
        s.attr(&status, "data-state").as_deref(),
        Some("complete"),
        "{}",
        s.text(&status)
    );
    // Batches 1, 2 and 4 always run; what comes next is the planner's call on what it measured
    // (doubling, four times, or straight to the largest batch the memory line allows when the
    // throughput scales or stalls), so the count of points is not fixed.
    let rows = s.find_all(r#"[data-testid="sweep-point"]"#);
    assert!(
        rows.len() >= 3,
        "batches 1..32 give at least 3 points, saw {}",
        rows.len()
    );
    let rec = s.wait(r#"[data-testid="sweep-recommendation"]:not([hidden])"#, 10);
    let rec_text = s.text(&rec);
    assert!(rec_text.starts_with("Recommended batch "), "{rec_text}");
    let chart = s.wait(r#"[data-testid="sweep-chart"]:not([hidden])"#, 5);
    assert!(s
        .attr(&chart, "src")
        .is_some_and(|src| src.starts_with("data:image/svg+xml")));
    s.screenshot(&out.join("sweep.png"));
    // Hover: the pointer moved onto the first point (where the chart's own hover target puts
    // it) shows its batch, samples/s, step time and peak beside it.
    let at = s.script(
        "const img = document.querySelector('[data-testid=\"sweep-chart\"]');\
         const svg = decodeURIComponent(img.src.slice(img.src.indexOf(',') + 1));\
         const m = /<circle cx=\"(\\d+)\" cy=\"(\\d+)\" r=\"10\" data-label=\"([^\"]*)\"/.exec(svg);\
         const size = /width=\"(\\d+)\" height=\"(\\d+)\"/.exec(svg);\
         img.scrollIntoView({block: 'center'});\
         const r = img.getBoundingClientRect();\
         return [Math.round(m[1] * r.width / size[1] - r.width / 2), Math.round(m[2] * r.height / size[2] - r.height / 2), m[3]];",
    );
    let label = at[2]
        .as_str()
        .expect("a hover target in the chart")
        .to_owned();
    assert!(
        label.starts_with("batch 1 · ")
            && label.contains("samples/s")
            && label.contains("ms/step")
            && label.contains("peak "),
        "{label}"
    );
    request(
        "POST",
        &format!("{}/actions", s.base),
        Some(
            &json!({"actions": [{"type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"}, "actions": [
                {"type": "pointerMove", "duration": 0, "origin": {ELEMENT: chart}, "x": at[0], "y": at[1]}
            ]}]}),
        ),
    );
    let tip = s.wait(r#"[data-testid="sweep-chart-tip"]:not([hidden])"#, 5);
    assert_eq!(s.text(&tip), label);
    s.screenshot(&out.join("sweep_hover.png"));
    // Below the fold: clicking scrolls each into view (WebKitWebDriver's element screenshots
    // are blank outside the viewport), then the window is captured.
    s.click(&chart);
    s.screenshot(&out.join("sweep_chart.png"));
    s.click(&s.wait(r#"[data-testid="sweep-results"]"#, 5));
    s.screenshot(&out.join("sweep_results.png"));

    // Cancel: a longer search, stopped once its first point is in; the run is kept.
    s.type_into(&s.wait(r#"[data-testid="sweep-max-batch"]"#, 5), "512");
    s.click(&s.wait(r#"[data-testid="run-sweep"]"#, 5));
    let until = Instant::now() + Duration::from_secs(120);
    while s
        .find_all(r#"[data-testid="sweep-status"][data-state="running"]"#)
        .is_empty()
        || s.find_all(r#"[data-testid="sweep-point"]"#).is_empty()
    {
        assert!(
            Instant::now() < until,
            "no point of the second sweep within 120 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    s.click(&s.wait(r#"[data-testid="cancel-sweep"]"#, 5));
    s.wait_state("sweep-status", "interrupted", 30);
    let why = s.text(&s.wait(r#"[data-testid="sweep-recommendation"]:not([hidden])"#, 5));
    assert!(why.starts_with("cancelled from the app after "), "{why}");

    // Runs: the sweeps and the doctor run, from the ledger.
    s.click(&s.wait(r#"[data-testid="tab-runs"]"#, 5));
    s.wait(r#"[data-testid="run-row"][data-kind="sweep"]"#, 10);
    let rows: Vec<String> = s
        .find_all(r#"[data-testid="run-row"][data-kind="sweep"]"#)
        .iter()
        .map(|r| s.text(r))
        .collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(
        rows[0].contains("interrupted") && rows[1].contains("complete"),
        "{rows:?}"
    );
    s.wait(r#"[data-testid="run-row"][data-kind="doctor"]"#, 5);
    s.screenshot(&out.join("runs.png"));
    // The Ledger panel: a click opens the complete sweep's report (chart and facts), two
    // ticked sweeps are compared with their curves side by side, and an export writes the
    // standalone HTML report into Headroom's folder.
    let sweeps = s.find_all(r#"[data-testid="run-row"][data-kind="sweep"] td:nth-child(3)"#);
    s.click(&sweeps[1]);
    s.wait(r#"[data-testid="report-chart"]"#, 15);
    let facts = s.text(&s.wait(r#"[data-testid="report-facts"]"#, 5));
    assert!(
        facts.contains("libtorch") && facts.contains("2.11.0") && facts.contains("threads"),
        "{facts}"
    );
    s.screenshot(&out.join("ledger_report.png"));
    for tick in s.find_all(r#"[data-testid="run-row"][data-kind="sweep"] [data-testid="run-tick"]"#)
    {
        s.click(&tick);
    }
    s.click(&s.wait(r#"[data-testid="ledger-compare"]"#, 5));
    let lines = s.text(&s.wait(r#"[data-testid="compare-lines"]"#, 15));
    assert!(
        lines.contains(" vs run ") && lines.contains("samples/s"),
        "{lines}"
    );
    s.wait(r#"[data-testid="compare-chart"]"#, 5);
    s.screenshot(&out.join("ledger_compare.png"));
    s.click(&s.wait(r#"[data-testid="ledger-export"]"#, 5));
    s.wait(r#"[data-testid="export-files"] li"#, 20);
    let files: Vec<String> = s
        .find_all(r#"[data-testid="export-files"] li"#)
        .iter()
        .map(|li| s.text(li))
        .collect();
    let html: Vec<&String> = files.iter().filter(|l| l.ends_with(".html")).collect();
    assert_eq!(html.len(), 2, "{files:?}");
    for f in html {
        let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(
            text.starts_with("<!DOCTYPE html>") && text.contains("<svg"),
            "{f}"
        );
    }
    assert!(
        files.iter().any(|f| f.contains("compare-")),
        "the side-by-side picture too: {files:?}"
    );

    // Memory: epochs with the leak demo on the CPU, judged a leak, with its chart.
    s.click(&s.wait(r#"[data-testid="tab-memory"]"#, 5));
    s.click(&s.wait(r#"[data-testid="epochs-device"] option[value="cpu"]"#, 5));
    s.type_into(&s.wait(r#"[data-testid="epochs-batch"]"#, 5), "16");
    s.type_into(&s.wait(r#"[data-testid="epochs-count"]"#, 5), "6");
    s.type_into(&s.wait(r#"[data-testid="epochs-steps"]"#, 5), "3");
    s.click(&s.wait(r#"[data-testid="epochs-leak-demo"]"#, 5));
    s.click(&s.wait(r#"[data-testid="run-epochs"]"#, 5));
    let verdict = s.wait(r#"[data-testid="memory-verdict"]:not([hidden])"#, 120);
    let verdict_text = s.text(&verdict);
    assert!(
        verdict_text.starts_with("Leak suspected: "),
        "{verdict_text}"
    );
    assert_eq!(s.find_all(r#"[data-testid="memory-row"]"#).len(), 6);
    s.screenshot(&out.join("memory.png"));
    s.click(&s.wait(r#"[data-testid="memory-chart"]:not([hidden])"#, 5));
    s.screenshot(&out.join("memory_chart.png"));
    // The verdict went to the desktop as a notification too.
    let sent = bus.wait_for("leak suspected", 10);
    assert!(
        sent.iter().any(|l| l.contains("grew +")),
        "the notification cites the growth: {sent:?}"
    );

    // Watch: a real Python process that keeps 8 MiB more every 0.2 s, picked from the list;
    // the app flags it once it grew past the threshold and says so on the desktop.
    let grower = Killed(Command::new(env_path("HEADROOM_E2E_VENV").join("bin/python"))
        .args([
            "-c",
            "import time\nkeep = []\nfor _ in range(600):\n    keep.append(bytearray(8 << 20))\n    time.sleep(0.2)\n",
        ])
        .spawn()
        .expect("start a growing python"));
    std::thread::sleep(Duration::from_millis(500));
    s.click(&s.wait(r#"[data-testid="list-processes"]"#, 5));
    let pick = format!(
        r#"[data-testid="process-row"][data-pid="{}"] button"#,
        grower.0.id()
    );
    s.click(&s.wait(&pick, 10));
    let flagged = s.wait(
        r#"[data-testid="memory-verdict"][data-kind="watch"][data-state="stopped"]:not([hidden])"#,
        60,
    );
    let flagged_text = s.text(&flagged);
    s.screenshot(&out.join("watch.png"));
    let sent = bus.wait_for(&format!("process {}", grower.0.id()), 10);
    assert!(
        sent.iter().any(|l| l.contains("since watching began")),
        "{sent:?} / {flagged_text}"
    );
    s.click(&s.wait(r#"[data-testid="stop-memory"]"#, 5));
    s.wait_state("memory-status", "complete", 10);
    drop(grower);

    // Your own training: a plain DataLoader loop (no markers) that keeps 96 MiB per epoch, run
    // through the real `headroom run` into the same ledger; the panel shows the run's epochs and
    // its verdict as it shows its own jobs.
    let script = home.path().join("train.py");
    std::fs::write(&script, LEAKING_TRAIN).expect("write train.py");
    let wrapped = Command::new(env_path("HEADROOM_E2E_WORKER"))
        .args(["run", "--json", "--"])
        .arg(env_path("HEADROOM_E2E_VENV").join("bin/python"))
        .arg(&script)
        .env("HEADROOM_HOME", home.path())
        .output()
        .expect("headroom run");
    assert!(
        wrapped.status.success(),
        "{}",
        String::from_utf8_lossy(&wrapped.stderr)
    );
    let doc: Value = serde_json::from_slice(&wrapped.stdout).expect("run --json");
    let id = doc["run_id"].as_i64().expect("run id");
    s.click(&s.wait(r#"[data-testid="last-wrapped-run"]"#, 5));
    let until = Instant::now() + Duration::from_secs(10);
    let status = s.wait(r#"[data-testid="memory-status"]"#, 5);
    while !s.text(&status).starts_with(&format!("run {id}: ")) {
        assert!(Instant::now() < until, "{}", s.text(&status));
        std::thread::sleep(Duration::from_millis(200));
    }
    let shown = s.text(&status);
    assert!(shown.contains("train.py"), "{shown}");
    assert!(shown.contains("120 steps, batch 32, on cpu"), "{shown}");
    assert_eq!(s.find_all(r#"[data-testid="memory-row"]"#).len(), 6);
    let verdict = s.wait(r#"[data-testid="memory-verdict"]:not([hidden])"#, 5);
    assert!(
        s.text(&verdict).starts_with("Leak suspected: "),
        "{}",
        s.text(&verdict)
    );
    s.screenshot(&out.join("wrapped_run.png"));

    // Contention: a stand-in named like Zoom holds memory, and thresholds in the config that any
    // share of RAM crosses: the Overview turns to the remote host and the desktop is told.
    let bin = tempfile::tempdir().expect("bin dir");
    let python =
        std::fs::canonicalize(env_path("HEADROOM_E2E_VENV").join("bin/python")).expect("python");
    std::os::unix::fs::symlink(&python, bin.path().join("zoom.us")).expect("symlink");
    let zoom = Killed(
        Command::new(bin.path().join("zoom.us"))
            .args(["-c", "import time\nb = bytearray(200 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\ntime.sleep(120)\n"])
            .spawn()
            .expect("start the zoom.us stand-in"),
    );
    std::fs::write(
        home.path().join("config.toml"),
        "[contention]\napps_share = 0.0\nreserve_share = 1.0\ninterval_s = 1\n",
    )
    .expect("config");
    s.click(&s.wait(r#"[data-testid="tab-overview"]"#, 5));
    s.wait(
        r#"[data-testid="verdict-headline"][data-verdict="remote"]"#,
        30,
    );
    let banner = s.wait(r#"[data-testid="contention-banner"]"#, 5);
    assert!(
        s.text(&banner).contains("conferencing and IDEs hold"),
        "{}",
        s.text(&banner)
    );
    let calls = s.wait(r#"[data-testid="group-conferencing"]"#, 10);
    assert!(s.text(&calls).contains("zoom.us"), "{}", s.text(&calls));
    let remote = s.wait(r#"[data-testid="column-remote"]"#, 5);
    assert!(
        s.text(&remote).contains("memory contention"),
        "{}",
        s.text(&remote)
    );
    // The decision table is judged from the user's run too: its leak, citing that run.
    let mps = s.wait(r#"[data-testid="column-mps"]"#, 5);
    assert!(
        s.text(&mps).contains(&format!("run {id} (")),
        "the Overview cites the wrapped run {id}: {}",
        s.text(&mps)
    );
    s.screenshot(&out.join("contention.png"));
    let sent = bus.wait_for("memory contention", 15);
    assert!(
        sent.iter()
            .any(|l| l.contains("conferencing and IDEs hold")),
        "{sent:?}"
    );
    // The notification's button, clicked in the notification server, opens the Remote panel.
    let menu = dunst.click_remote_button();
    assert!(menu.contains("Open the Remote panel"), "{menu}");
    s.wait(r#"[data-testid="tab-remote"].active"#, 10);
    s.wait(r#"[data-testid="add-host"]"#, 5);
    drop(zoom);

    // Remote: a real sshd on 127.0.0.1 as the rented host — add it, make a key in the app and
    // install only that key (as the shown ssh-copy-id would), check the host with it, and run
    // the sweep there from the panel.
    let sshd = Sshd::start();
    s.click(&s.wait(r#"[data-testid="tab-remote"]"#, 5));
    let worker = env_path("HEADROOM_E2E_WORKER").display().to_string();
    for (id, value) in [
        ("host-name", "box".to_owned()),
        ("host-host", "127.0.0.1".to_owned()),
        ("host-port", sshd.port.to_string()),
        ("host-user", whoami()),
        (
            "host-identity",
            sshd.dir.path().join("userkey").display().to_string(),
        ),
        ("host-headroom", worker),
    ] {
        s.type_into(&s.wait(&format!(r#"[data-testid="{id}"]"#), 5), &value);
    }
    s.click(&s.wait(r#"[data-testid="add-host"]"#, 5));
    s.wait(r#"[data-testid="host-row"][data-name="box"]"#, 10);
    // No project in this home: the wizard asks for one first.
    let wizard = s.wait(r#"[data-testid="wizard"]"#, 10);
    assert!(
        s.text(&wizard)
            .contains("Add a project in the bar at the top first"),
        "{}",
        s.text(&wizard)
    );
    // Added, the form folds away under the host list: open it again for the key.
    unfold(&s, "add-host-form");
    s.click(&s.wait(r#"[data-testid="make-key"]"#, 5));
    let key_row = s.wait(r#"[data-testid="key-row"]"#, 20);
    assert!(
        s.text(&key_row).contains("ssh-ed25519 "),
        "{}",
        s.text(&key_row)
    );
    // The path is shown beside "Use" (WebKitWebDriver gives an ellipsised span's text as
    // empty, so its title, the same path, is read).
    let path = s.wait(r#"[data-testid="key-path"]"#, 5);
    let shown = s.attr(&path, "title").unwrap_or_default();
    assert!(shown.ends_with("ssh/headroom_ed25519"), "{shown:?}");
    let made = std::fs::read_to_string(home.path().join("ssh/headroom_ed25519.pub"))
        .expect("the key made in the app");
    std::fs::write(sshd.dir.path().join("authorized_keys"), &made).expect("install the key");
    // The form now names the new key: adding again is refused until "replace" is ticked.
    s.click(&s.wait(r#"[data-testid="add-host"]"#, 5));
    let refused = s.wait(r#"[data-testid="remote-status"][data-state="error"]"#, 10);
    assert!(
        s.text(&refused).contains("exists already"),
        "{}",
        s.text(&refused)
    );
    s.click(&s.wait(r#"[data-testid="host-replace"]"#, 5));
    s.click(&s.wait(r#"[data-testid="add-host"]"#, 5));
    // The checks and the built-in sweep sit under "More for this host". Saving the host redraws
    // its card, which can close a section opened a moment before: open it until it stays open.
    let until = Instant::now() + Duration::from_secs(15);
    loop {
        std::thread::sleep(Duration::from_millis(500));
        if !s.find_all(r#"[data-testid="host-tools"][open]"#).is_empty() {
            break;
        }
        assert!(
            Instant::now() < until,
            "More for this host did not stay open"
        );
        s.click(&s.wait(r#"[data-testid="host-tools"] summary"#, 5));
    }
    s.click(&s.wait(r#"[data-testid="check-host"]"#, 5));
    let checked = s.wait(r#"[data-testid="check-result"][data-ok="true"]"#, 90);
    let text = s.text(&checked);
    assert!(text.contains("RTT") && text.contains("Linux"), "{text}");
    s.screenshot(&out.join("remote.png"));
    let managed = std::fs::read_to_string(home.path().join("ssh/config.d/headroom"))
        .expect("the managed ssh config");
    assert!(
        managed.contains("Host box") && managed.contains("headroom_ed25519"),
        "{managed}"
    );
    s.click(&s.wait(r#"[data-testid="remote-sweep"]"#, 5));
    s.wait(r#"[data-testid="tab-sweep"].active"#, 10);
    let status = s.wait(r#"[data-testid="sweep-status"]"#, 10);
    let until = Instant::now() + Duration::from_secs(120);
    // The panel shows the cancelled local sweep until the remote one reports.
    while !s.text(&status).contains("(host box)")
        || s.attr(&status, "data-state").as_deref() == Some("running")
    {
        if Instant::now() > until {
            s.screenshot(&out.join("remote-sweep-failed.png"));
            panic!(
                "the remote sweep did not finish in 300 s: {:?} / {:?}",
                s.text(&status),
                s.attr(&status, "data-state")
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(
        s.attr(&status, "data-state").as_deref(),
        Some("complete"),
        "{}",
        s.text(&status)
    );
    s.screenshot(&out.join("remote-sweep.png"));
    drop(sshd);
    s.close();
    drop(driver);

    // The same run, read from the SQLite ledger by the CLI.
    let ledger = Command::new(env_path("HEADROOM_E2E_WORKER"))
        .args(["ledger", "list", "--json"])
        .env("HEADROOM_HOME", home.path())
        .output()
        .expect("headroom ledger list");
    let runs: Value = serde_json::from_slice(&ledger.stdout).expect("ledger JSON");
    let sweeps: Vec<&Value> = runs
        .as_array()
        .map(|r| r.iter().filter(|r| r["kind"] == "sweep").collect())
        .unwrap_or_default();
    assert_eq!(sweeps.len(), 3, "{runs}");
    // Newest first: the remote one, the cancelled one, then the complete local one.
    assert_eq!(sweeps[0]["status"], "complete");
    assert_eq!(sweeps[0]["host"], "box", "{}", sweeps[0]);
    assert_eq!(sweeps[1]["status"], "interrupted");
    let sweep = sweeps[2];
    assert_eq!(sweep["status"], "complete");
    assert_eq!(sweep["workload"], "mlp");
    assert_eq!(sweep["device"], "cpu");
    assert!(sweep["points"].as_u64().is_some_and(|n| n >= 5));
    let chosen = sweep["chosen_batch"].as_u64().expect("chosen batch");
    assert_eq!(recommended_batch(&rec_text), chosen, "{rec_text}");
}

/// The batch in the Sweep panel's answer: "Recommended batch 64 · 10.0 k samples/s · …", or
/// "Recommended batch 64: …" for a summary without its one-line answer.
fn recommended_batch(text: &str) -> u64 {
    text.strip_prefix("Recommended batch ")
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no recommended batch in {text:?}"))
}

/// A researcher's own training script: an argparse CLI, a DataLoader, an MLP, SGD. Its memory
/// grows with the batch (it keeps 256 KiB per sample alive through each step, as activations
/// would), it runs epochs until stopped, and batches above 300 fail the way a laptop's RAM would
/// end them (this VM has too much memory to reach a real limit in a test's time).
const PROJECT_TRAIN: &str = r#"
import argparse, os, torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
p = argparse.ArgumentParser()
p.add_argument("--batch-size", type=int, required=True)
p.add_argument("--device", default="cpu")
a = p.parse_args()
if a.batch_size > 300:
    raise RuntimeError(f"DefaultCPUAllocator: not enough memory: you tried to allocate {a.batch_size * 262144} bytes.")
torch.manual_seed(0)
n = a.batch_size * 20
loader = DataLoader(TensorDataset(torch.randn(n, 128), torch.randint(0, 10, (n,))), batch_size=a.batch_size, shuffle=True)
model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 10)).to(a.device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
# Trains until stopped, or for the epochs an `epochs` file beside it names.
limit = int(open("epochs").read()) if os.path.exists("epochs") else 0
epoch = 0
while not limit or epoch < limit:
    for x, y in loader:
        x, y = x.to(a.device), y.to(a.device)
        kept = torch.ones(a.batch_size, 65536)
        loss = nn.functional.cross_entropy(model(x), y) + kept[0, 0] * 0
        opt.zero_grad()
        loss.backward()
        opt.step()
    epoch += 1
    print(f"epoch {epoch} loss {loss.item():.3f}", flush=True)
"#;

/// The run id at the head of a status line (`run 12 · …`).
fn run_id_of(status: &str) -> i64 {
    status
        .strip_prefix("run ")
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no run id in {status:?}"))
}

/// The user's own training, from the project bar: a project added in the window (a folder, the
/// Python doctor found, a command), one click on "Sweep my training" → points, chart and
/// recommendation, the Overview citing that sweep; "Watch my training" at the sweep's batch →
/// epochs live, Stop; "Compare with the CPU" over cpu@1 and cpu@2 → the speed-up.
#[test]
#[ignore = "needs Xvfb, tauri-driver and WebKitWebDriver: run scripts/e2e.sh"]
fn your_own_training_swept_watched_and_compared_in_the_real_window() {
    let app = env_path("HEADROOM_E2E_APP");
    let out = env_path("HEADROOM_E2E_OUT");
    std::fs::create_dir_all(&out).expect("output dir");
    let home = tempfile::tempdir().expect("temp HEADROOM_HOME");
    let project = tempfile::tempdir().expect("project folder");
    std::fs::write(project.path().join("train.py"), PROJECT_TRAIN).expect("train.py");
    // pip is in every fresh venv: the remote environment is made without a download.
    std::fs::write(project.path().join("requirements.txt"), "pip\n").expect("requirements");
    // Headroom as an installed bundle lays it out (bin/headroom, bin/headroom-worker,
    // lib/headroom/), so the wizard's fourth step can copy it to the fresh host.
    let bundle = home.path().join("bundle");
    std::fs::create_dir_all(bundle.join("bin")).expect("bin");
    std::fs::create_dir_all(bundle.join("lib/headroom")).expect("lib");
    let built = env_path("HEADROOM_E2E_WORKER");
    for name in ["headroom", "headroom-worker"] {
        std::fs::copy(built.with_file_name(name), bundle.join("bin").join(name)).expect(name);
    }
    std::fs::write(bundle.join("lib/headroom/README"), "its libtorch goes here").expect("lib");
    // The notification server, from the start (it must own the bus name before any
    // notification): its menu picks "Continue on the remote host".
    let dunst = Dunst::picking("Continue on the remote host");
    let driver = start_driver_with(
        home.path(),
        &[
            ("HEADROOM_BIN", bundle.join("bin/headroom").as_path()),
            // The runs there are followed every 2 s instead of every minute.
            ("HEADROOM_APP_REMOTE_FOLLOW_S", Path::new("2")),
        ],
    );
    let s = Session::new(&driver, &app);

    // Doctor has run (the Python list is what the add form offers).
    s.click(&s.wait(r#"[data-testid="tab-readiness"]"#, 5));
    s.wait(r#"[data-testid="light-cpu"]"#, 120);
    // One line, cut short with an ellipsis: WebKitWebDriver gives such an element's text as
    // empty, so its title (the same text) is read.
    let status = s.wait(r#"[data-testid="project-status"]"#, 5);
    let said = s.attr(&status, "title").unwrap_or_default();
    assert!(said.contains("No project yet"), "{said:?}");
    s.click(&s.wait(r#"[data-testid="add-project-form"] summary"#, 5));
    let venv = std::fs::canonicalize(env_path("HEADROOM_E2E_VENV").join("bin/python"))
        .expect("venv python");
    let offered = s.wait(
        r#"[data-testid="project-python-pick"] option:not([value="__other__"])"#,
        10,
    );
    let offered_text = s.text(&offered);
    assert!(offered_text.contains("torch 2.11.0"), "{offered_text}");
    s.type_into(&s.wait(r#"[data-testid="project-name"]"#, 5), "mlp-cifar");
    s.type_into(
        &s.wait(r#"[data-testid="project-dir"]"#, 5),
        project.path().to_str().expect("utf-8"),
    );
    s.type_into(
        &s.wait(r#"[data-testid="project-command"]"#, 5),
        "python train.py --batch-size {batch} --device {device}",
    );
    s.click(&s.wait(r#"[data-testid="add-project"]"#, 5));
    s.wait(r#"[data-testid="project-status"][data-state="done"]"#, 10);
    let config = std::fs::read_to_string(home.path().join("config.toml")).expect("config");
    assert!(config.contains("[projects.mlp-cifar]"), "{config}");
    let python_line = config
        .lines()
        .find(|l| l.starts_with("python"))
        .unwrap_or_default()
        .to_owned();
    assert!(
        python_line.contains("bin/python"),
        "the Python picked from doctor's list is kept: {config} (venv {})",
        venv.display()
    );

    // Sweep my training: batch=auto on the script, live.
    s.click(&s.wait(r#"[data-testid="sweep-my-training"]"#, 5));
    s.wait(r#"[data-testid="sweep-status"][data-state="running"]"#, 30);
    let until = Instant::now() + Duration::from_secs(420);
    let mut saw_step = false;
    let (shown, state) = loop {
        let (text, state) = s.read(r#"[data-testid="sweep-status"]"#, "data-state");
        if state.as_deref() != Some("running") {
            break (text, state);
        }
        saw_step |= text.contains(", step ");
        assert!(Instant::now() < until, "the sweep did not finish in 420 s");
        std::thread::sleep(Duration::from_millis(300));
    };
    assert_eq!(state.as_deref(), Some("complete"), "{shown}");
    assert!(saw_step, "the steps of a start were shown while it ran");
    let sweep_id = run_id_of(&shown);
    assert!(shown.contains("train.py --batch-size {batch}"), "{shown}");
    let rows = s.find_all(r#"[data-testid="sweep-point"]"#);
    assert!(rows.len() >= 4, "{} points", rows.len());
    let failed = s.find_all(r#"[data-testid="sweep-point"].failed"#);
    assert!(!failed.is_empty(), "the batches past 300 failed");
    let chart = s.wait(r#"[data-testid="sweep-chart"]:not([hidden])"#, 5);
    assert!(s
        .attr(&chart, "src")
        .is_some_and(|src| src.starts_with("data:image/svg")));
    let rec = s.wait(
        r#"[data-testid="sweep-recommendation"][data-state="done"]"#,
        5,
    );
    let rec_text = s.text(&rec);
    let chosen = recommended_batch(&rec_text);
    assert!((16..=300).contains(&chosen), "{rec_text}");
    // At a glance: the answer one line with its figure and memory, and the chart's top edge
    // inside the 640 px popover without scrolling.
    let answer = s.text(&s.wait(r#"[data-testid="sweep-answer"]"#, 5));
    assert!(
        answer.starts_with(&format!("Recommended batch {chosen} · "))
            && answer.contains(" samples/s · "),
        "{answer}"
    );
    let top = s
        .script(
            r#"const c = document.querySelector('[data-testid="sweep-chart"]');
               return c.getBoundingClientRect().top + window.scrollY;"#,
        )
        .as_f64()
        .expect("the chart's top");
    assert!(
        top < 640.0,
        "the chart starts {top} px down, below the fold"
    );
    eprintln!("project sweep: {answer:?}, the chart's top at {top:.0} px");
    s.screenshot(&out.join("project_sweep.png"));

    // The Overview, judged from this project, cites that sweep.
    s.click(&s.wait(r#"[data-testid="tab-overview"]"#, 5));
    let until = Instant::now() + Duration::from_secs(30);
    let cite = format!("sweep {sweep_id} (");
    loop {
        // The table is redrawn at every decision: read the panel, which stays.
        let (text, _) = s.read(".panel.overview", "class");
        if text.contains(&cite) {
            break;
        }
        assert!(
            Instant::now() < until,
            "the Overview does not cite {cite}: {text}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    s.screenshot(&out.join("project_overview.png"));

    // Watch my training: at the batch the sweep chose, epochs live, then Stop.
    s.click(&s.wait(r#"[data-testid="watch-my-training"]"#, 5));
    s.wait(r#"[data-testid="memory-status"][data-state="running"]"#, 30);
    let until = Instant::now() + Duration::from_secs(120);
    while s.find_all(r#"[data-testid="memory-row"]"#).len() < 3 {
        assert!(
            Instant::now() < until,
            "no 3 epochs in 120 s: {}",
            s.read(r#"[data-testid="memory-status"]"#, "data-state").0
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    let live = s.read(r#"[data-testid="memory-status"]"#, "data-state").0;
    assert!(live.contains("steps") && live.contains("epochs"), "{live}");
    assert!(
        live.contains(&format!("--batch-size {chosen} --device cpu")),
        "{live}"
    );
    s.screenshot(&out.join("project_watch.png"));
    // The table lists the newest epochs only: once it is full (the line naming the earlier
    // ones shows), nothing below it moves, and Stop is clicked where it stays.
    s.wait(r#"[data-testid="memory-earlier"]"#, 120);
    s.click(&s.wait(r#"[data-testid="stop-memory"]"#, 5));
    let stopped = s.wait_state("memory-status", "interrupted", 30);
    let stopped_text = s.text(&stopped);
    assert!(stopped_text.contains("stopped by you"), "{stopped_text}");
    assert!(
        s.find_all(r#"[data-testid="memory-row"]"#).len() >= 3,
        "the epochs are kept"
    );
    s.wait(r#"[data-testid="memory-verdict"]:not([hidden])"#, 5);

    // Check numerics (Options): the script's model at its first iteration against a CPU copy,
    // layer by layer, then the run stops; the Memory panel opens on the verdict.
    s.click(&s.wait(r#"[data-testid="projects"] .project-options summary"#, 5));
    s.click(&s.wait(r#"[data-testid="project-numerics"] option[value="f32"]"#, 5));
    s.click(&s.wait(r#"[data-testid="watch-my-training"]"#, 5));
    let verdict = s.wait(r#"[data-testid="memory-numerics-verdict"]"#, 120);
    let verdict_text = s.text(&verdict);
    assert!(
        verdict_text
            .starts_with("numerics: cpu f32 agrees with cpu f32 within 1.0e-3 everywhere ("),
        "{verdict_text}"
    );
    assert!(!s
        .find_all(r#"[data-testid="memory-numerics-row"]"#)
        .is_empty());
    s.screenshot(&out.join("project_numerics.png"));
    s.click(&s.wait(r#"[data-testid="project-numerics"] option[value="off"]"#, 5));

    // Compare with the CPU: cpu@2 stands in for the accelerator here.
    s.type_into(
        &s.wait(r#"[data-testid="project-compare-devices"]"#, 5),
        "cpu@1,cpu@2",
    );
    s.click(&s.wait(r#"[data-testid="compare-with-cpu"]"#, 5));
    let speed = s.wait(r#"[data-testid="sweep-speedup"]:not([hidden])"#, 420);
    let speed_text = s.text(&speed);
    assert!(
        speed_text.starts_with("Speed-up: ")
            && speed_text.contains(" ms per step on cpu@2 against "),
        "{speed_text}"
    );
    // The comparison's sweep is now the project's newest here: its batch is "the batch chosen
    // here" that the migration's training step sets the remote's answer beside.
    let chosen: u32 = speed_text
        .split(" at batch ")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{speed_text}"));
    s.screenshot(&out.join("project_compare.png"));

    // The migration wizard moves this project to a really fresh host (a user made for the test,
    // an empty home, a password), step by step in the Remote panel, all eight steps.
    if let Some(user) = FreshUser::create() {
        let sshd = Sshd::start_with_passwords();
        // Its screen: a listener that greets as a VNC server does (RFB's version line).
        let screen = std::net::TcpListener::bind("127.0.0.1:0").expect("screen");
        let screen_port = screen.local_addr().expect("addr").port();
        std::thread::spawn(move || {
            for mut c in screen.incoming().flatten() {
                let _ = std::io::Write::write_all(&mut c, b"RFB 003.008\n");
            }
        });
        s.click(&s.wait(r#"[data-testid="tab-remote"]"#, 5));
        let key = home.path().join("ssh/wizard_ed25519");
        for (id, value) in [
            ("host-name", "fresh".to_owned()),
            ("host-host", "127.0.0.1".to_owned()),
            ("host-port", sshd.port.to_string()),
            ("host-user", user.name.clone()),
            ("host-identity", key.display().to_string()),
            ("host-vnc", screen_port.to_string()),
        ] {
            s.type_into(&s.wait(&format!(r#"[data-testid="{id}"]"#), 5), &value);
        }
        s.click(&s.wait(r#"[data-testid="add-host"]"#, 5));
        s.wait(r#"[data-testid="host-row"][data-name="fresh"]"#, 10);
        s.wait(r#"[data-testid="wizard-title"]"#, 10);
        let step_state = |step: &str, want: &str, secs: u64| {
            s.wait(
                &format!(r#"[data-testid="wizard-step"][data-step="{step}"][data-state="{want}"]"#),
                secs,
            )
        };
        // Runs the step shown and waits for it to pass, keeping every progress line seen.
        let run_to_pass = |step: &str, secs: u64| -> Vec<String> {
            s.click(&s.wait(r#"[data-testid="wizard-run"]"#, 5));
            let until = Instant::now() + Duration::from_secs(secs);
            let mut seen: Vec<String> = Vec::new();
            loop {
                let (line, hidden) = s.read(r#"[data-testid="wizard-progress"]"#, "hidden");
                if hidden.is_none() && !line.is_empty() && seen.last() != Some(&line) {
                    seen.push(line);
                }
                let (detail, state) = s.read(r#"[data-testid="wizard-detail"]"#, "data-state");
                match state.as_deref() {
                    Some("passed") => break,
                    Some("failed") => {
                        let fix = s.read(r#"[data-testid="wizard-fix"]"#, "hidden").0;
                        s.screenshot(&out.join(format!("wizard_{step}_failed.png")));
                        panic!("step {step} failed: {detail} / {fix}");
                    }
                    _ => {}
                }
                assert!(
                    Instant::now() < until,
                    "step {step} ran past {secs} s: {seen:?}"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
            step_state(step, "passed", 5);
            // And what the step printed, kept folded under it.
            let log = s.wait(r#"[data-testid="wizard-log"] pre"#, 5);
            seen.extend(s.prop(&log, "textContent").lines().map(str::to_owned));
            seen
        };
        run_to_pass("host", 20);
        s.click(&s.wait(r#"[data-testid="wizard-next"]"#, 5));
        // The key: refused without the password, installed with it (typed once).
        s.click(&s.wait(r#"[data-testid="wizard-run"]"#, 5));
        step_state("key", "failed", 30);
        let fix = s.read(r#"[data-testid="wizard-fix"]"#, "hidden").0;
        assert!(fix.contains("password"), "{fix}");
        s.screenshot(&out.join("wizard_key_refused.png"));
        s.type_into(
            &s.wait(r#"[data-testid="wizard-password"]"#, 5),
            &user.password,
        );
        run_to_pass("key", 40);
        s.click(&s.wait(r#"[data-testid="wizard-next"]"#, 5));
        run_to_pass("check", 60);
        let checked = s.read(r#"[data-testid="wizard-detail"]"#, "data-state").0;
        assert!(
            checked.contains("free in headroom-projects/mlp-cifar"),
            "{checked}"
        );
        s.click(&s.wait(r#"[data-testid="wizard-next"]"#, 5));
        // Headroom there: this bundle's binaries and its lib folder copied, then asked.
        let seen = run_to_pass("headroom", 120);
        let detail = s.read(r#"[data-testid="wizard-detail"]"#, "data-state").0;
        assert!(detail.contains(".headroom/bin/headroom"), "{detail}");
        assert!(
            seen.iter().any(|l| l.starts_with("copying Headroom")),
            "the copy was said while it ran: {seen:?}"
        );
        assert!(user.home.join(".headroom/lib/headroom/README").is_file());
        s.click(&s.wait(r#"[data-testid="wizard-next"]"#, 5));
        // The project: copied, checked, its environment made; pip's lines shown meanwhile.
        let seen = run_to_pass("project", 300);
        s.screenshot(&out.join("wizard_project.png"));
        let detail = s.read(r#"[data-testid="wizard-detail"]"#, "data-state").0;
        assert!(detail.contains("checksums match"), "{detail}");
        assert!(
            seen.iter().any(|l| l.starts_with("making the environment")
                || l.starts_with("pip: ")
                || l.starts_with("copied ")),
            "no progress shown while the project step ran: {seen:?}"
        );
        let there = user.home.join("headroom-projects/mlp-cifar");
        assert!(there.join("train.py").is_file());
        // The fresh environment gets this checkout's torch through a .pth (same Python, no 4.7
        // GB download into a throwaway home).
        sshd::lend_torch(
            &there.join(".venv"),
            &env_path("HEADROOM_E2E_VENV").join("bin/python"),
        );
        s.click(&s.wait(r#"[data-testid="wizard-next"]"#, 5));
        // Your training there: the project's batch=auto sweep on that machine's own memory,
        // its lines streamed, its answer set beside the batch the sweep here chose.
        let seen = run_to_pass("training", 600);
        let detail = s.read(r#"[data-testid="wizard-detail"]"#, "data-state").0;
        assert!(
            detail.contains("recommended there")
                && (detail.contains(&format!("(here: batch {chosen})"))
                    || detail.contains("(the same batch as here)"))
                && detail.contains("under host fresh"),
            "{detail} / {seen:?}"
        );
        assert!(
            seen.iter()
                .any(|l| l.starts_with("there: headroom: [1] batch 16: starting the command")),
            "the sweep's own lines came over while it ran: {seen:?}"
        );
        // The sweep there as a curve under it.
        let chart = s.wait(r#"[data-testid="wizard-chart"]:not([hidden])"#, 20);
        assert!(s
            .attr(&chart, "src")
            .is_some_and(|src| src.starts_with("data:image/svg")));
        s.screenshot(&out.join("wizard_training.png"));
        s.script(
            "document.querySelector('[data-testid=\"wizard-chart\"]').scrollIntoView({block: 'center'}); return 0;",
        );
        std::thread::sleep(Duration::from_millis(300));
        s.screenshot(&out.join("wizard_training_chart.png"));
        s.click(&s.wait(r#"[data-testid="wizard-next"]"#, 5));
        // Side by side: the sweep here against the sweep there, each at its own batch.
        run_to_pass("compare", 30);
        let detail = s.read(r#"[data-testid="wizard-detail"]"#, "data-state").0;
        assert!(
            detail.starts_with("here: batch ")
                && detail.contains(" on fresh)")
                && detail.contains("at its own batch")
                && detail.contains("the decision table now: "),
            "{detail}"
        );
        // Here is a sweep, not the one-point baseline of the device comparison (cpu@1).
        assert!(!detail.contains(", cpu@1 on "), "{detail}");
        // And the two sweeps' curves under it.
        let chart = s.wait(r#"[data-testid="wizard-chart"]:not([hidden])"#, 20);
        assert!(s
            .attr(&chart, "src")
            .is_some_and(|src| src.starts_with("data:image/svg")));
        s.screenshot(&out.join("wizard_compare.png"));
        s.script(
            "document.querySelector('[data-testid=\"wizard-chart\"]').scrollIntoView({block: 'center'}); return 0;",
        );
        std::thread::sleep(Duration::from_millis(300));
        s.screenshot(&out.join("wizard_compare_chart.png"));
        s.click(&s.wait(r#"[data-testid="wizard-next"]"#, 5));
        run_to_pass("screen", 30);
        let detail = s.read(r#"[data-testid="wizard-detail"]"#, "data-state").0;
        assert!(detail.contains("RFB 003.008"), "{detail}");
        let states: Vec<String> = s
            .find_all(r#"[data-testid="wizard-step"][data-state="passed"]"#)
            .iter()
            .map(|e| s.attr(e, "data-step").unwrap_or_default())
            .collect();
        assert_eq!(
            states,
            ["host", "key", "check", "headroom", "project", "training", "compare", "screen"]
        );
        s.screenshot(&out.join("wizard_done.png"));
        let keys = std::fs::read_to_string(user.home.join(".ssh/authorized_keys"))
            .expect("the key installed on the fresh host");
        assert!(keys.contains("ssh-ed25519 "), "{keys}");

        // Training there, detached (the panel's step 3): started in one click, listed running
        // with its live line; when it ends there (after the three epochs an `epochs` file beside
        // it names) the app's follow-up says so in a notification, and the list shows it
        // complete, recorded in this ledger under the host's name.
        std::fs::write(there.join("epochs"), "3").expect("epochs file there");
        let bus = BusMonitor::start();
        s.click(&s.wait(r#"[data-testid="start-remote-run"]"#, 5));
        let until = Instant::now() + Duration::from_secs(60);
        let started = loop {
            let (said, state) = s.read(r#"[data-testid="remote-runs-status"]"#, "data-state");
            if said.starts_with("started run ") {
                break said;
            }
            assert!(
                state.as_deref() != Some("error") && Instant::now() < until,
                "the run did not start there: {said}"
            );
            std::thread::sleep(Duration::from_millis(200));
        };
        assert!(started.contains("; recorded here as run "), "{started}");
        s.wait(r#"[data-testid="remote-run"]"#, 10);
        s.screenshot(&out.join("remote_run_started.png"));
        let sent = bus.wait_for("Headroom: the run on fresh ended complete", 180);
        assert!(
            sent.iter()
                .any(|l| l.contains("train.py --batch-size ") && l.contains("epoch 3")),
            "the notification names the command and where it stood: {sent:?}"
        );
        s.click(&s.wait(r#"[data-testid="refresh-remote-runs"]"#, 5));
        let done = s.wait(r#"[data-testid="remote-run"][data-state="complete"]"#, 30);
        let title = s.attr(&done, "title").unwrap_or_default();
        assert!(title.contains(" in this ledger"), "{title}");
        // (A <pre> cut to its height reads empty through WebKitWebDriver: its textContent.)
        let last = s.prop(
            &s.wait(r#"[data-testid="remote-run-last"]"#, 5),
            "textContent",
        );
        assert!(last.contains("epoch 3 loss"), "{last}");
        s.screenshot(&out.join("remote_run_done.png"));
        // Its row here: under the host's name, its three epochs once each.
        let ledger_id: i64 = title
            .split(" · run ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{title}"));
        let report = Command::new(env_path("HEADROOM_E2E_WORKER"))
            .args(["ledger", "show", &ledger_id.to_string(), "--json"])
            .env("HEADROOM_HOME", home.path())
            .output()
            .expect("headroom ledger show");
        let doc: Value = serde_json::from_slice(&report.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&report.stderr)));
        assert_eq!(doc["run"]["host"], "fresh", "{doc}");
        assert_eq!(doc["run"]["status"], "complete", "{doc}");
        let epochs: Vec<u64> = doc["samples"]
            .as_array()
            .map(|v| v.iter().filter_map(|e| e["epoch"].as_u64()).collect())
            .unwrap_or_default();
        assert_eq!(epochs, [1, 2, 3], "each epoch once: {doc}");

        // The hand-off in one click: the call squeezes memory past the threshold, the
        // contention notification's "Continue on the remote host" starts this project there,
        // detached (at the batch the sweep there chose), and says so; the Remote panel lists it
        // running, and its Stop ends it there.
        std::fs::remove_file(there.join("epochs")).expect("train until stopped");
        let config = std::fs::read_to_string(home.path().join("config.toml")).expect("config");
        std::fs::write(
            home.path().join("config.toml"),
            format!(
                "{config}\n[contention]\napps_share = 0.0\nreserve_share = 1.0\ninterval_s = 1\n"
            ),
        )
        .expect("config");
        let bin = tempfile::tempdir().expect("bin dir");
        let python = std::fs::canonicalize(env_path("HEADROOM_E2E_VENV").join("bin/python"))
            .expect("python");
        std::os::unix::fs::symlink(&python, bin.path().join("zoom.us")).expect("symlink");
        let zoom = Killed(
            Command::new(bin.path().join("zoom.us"))
                .args(["-c", "import time\nb = bytearray(200 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\ntime.sleep(120)\n"])
                .spawn()
                .expect("start the zoom.us stand-in"),
        );
        bus.wait_for("memory contention", 30);
        let menu = dunst.click_remote_button();
        assert!(menu.contains("Continue on the remote host"), "{menu}");
        let sent = bus.wait_for("Headroom: mlp-cifar continues on fresh", 60);
        assert!(
            sent.iter()
                .any(|l| l.contains("detached: it goes on if this Mac sleeps")),
            "{sent:?}"
        );
        drop(zoom);
        s.click(&s.wait(r#"[data-testid="tab-remote"]"#, 5));
        s.click(&s.wait(r#"[data-testid="refresh-remote-runs"]"#, 5));
        s.wait(r#"[data-testid="remote-run"][data-state="running"]"#, 30);
        s.screenshot(&out.join("remote_run_continued.png"));
        s.click(&s.wait(r#"[data-testid="stop-remote-run"]"#, 5));
        s.wait(
            r#"[data-testid="remote-run"][data-state="interrupted"]"#,
            60,
        );
        let said = s.text(&s.wait(r#"[data-testid="remote-runs-status"]"#, 5));
        assert!(said.contains(" interrupted"), "{said}");
    }
    s.close();
}

/// Opens the `<details>` with this testid when it is folded.
fn unfold(s: &Session, testid: &str) {
    if !s
        .find_all(&format!(r#"[data-testid="{testid}"]:not([open])"#))
        .is_empty()
    {
        s.click(&s.wait(&format!(r#"[data-testid="{testid}"] > summary"#), 5));
    }
    s.wait(&format!(r#"[data-testid="{testid}"][open]"#), 5);
}

/// Readiness still shows its verdict (the CPU light green) when the ledger cannot take it, with a
/// note that the check was not recorded that carries `advice`.
fn readiness_shown_but_not_recorded(s: &Session, advice: &str) {
    s.click(&s.wait(r#"[data-testid="tab-readiness"]"#, 5));
    let cpu = s.wait(r#"[data-testid="light-cpu"]"#, 120);
    assert_eq!(s.attr(&cpu, "data-state").as_deref(), Some("green"));
    let notes: Vec<String> = s
        .find_all(r#".panel.readiness .note"#)
        .iter()
        .map(|e| s.text(e))
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("not recorded in the ledger") && n.contains(advice)),
        "{notes:?}"
    );
}

/// The app on a damaged ledger file starts, keeps the file as it was, and says in each panel that
/// reads the ledger what is wrong and what to do, while the readiness verdict (which needs no
/// ledger) still shows. Then About: the app's commit and the worker's libtorch, in the window.
#[test]
#[ignore = "needs Xvfb, tauri-driver and WebKitWebDriver: run scripts/e2e.sh"]
fn a_damaged_ledger_is_said_plainly_and_about_names_the_libtorch() {
    let app = env_path("HEADROOM_E2E_APP");
    let out = env_path("HEADROOM_E2E_OUT");
    std::fs::create_dir_all(&out).expect("output dir");
    let home = tempfile::tempdir().expect("temp HEADROOM_HOME");
    let ledger = home.path().join("ledger.sqlite3");
    let garbage: Vec<u8> = (0..64 * 1024u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&ledger, &garbage).expect("write a damaged ledger");
    let driver = start_driver(home.path());
    let s = Session::new(&driver, &app);

    // Overview: the decision table still comes, with the ledger's problem under it.
    s.wait(r#"[data-testid="verdict-headline"]"#, 60);
    let note = s.wait(r#".panel.overview .note"#, 30);
    let text = s.text(&note);
    assert!(
        text.contains("ledger.sqlite3") && text.contains("move it aside"),
        "{text}"
    );

    // Readiness: the lights, and a note that this check was not recorded and why.
    readiness_shown_but_not_recorded(&s, "move it aside");

    // Ledger: the message with the file and what to do.
    s.click(&s.wait(r#"[data-testid="tab-runs"]"#, 5));
    let until = Instant::now() + Duration::from_secs(20);
    let status = s.wait(r#"[data-testid="ledger-status"]"#, 5);
    while !s.text(&status).contains("cannot read the ledger") {
        assert!(Instant::now() < until, "{}", s.text(&status));
        std::thread::sleep(Duration::from_millis(250));
    }
    let said = s.text(&status);
    assert!(said.contains("move it aside"), "{said}");
    s.screenshot(&out.join("damaged_ledger.png"));
    assert_eq!(
        std::fs::read(&ledger).expect("the ledger file"),
        garbage,
        "the damaged ledger must be left as it was"
    );

    // About: this build's commit, and the worker's own version line with its libtorch.
    s.click(&s.wait(r#"[data-testid="tab-about"]"#, 5));
    let lt = s.wait(r#"[data-testid="about-libtorch"]"#, 30);
    assert_eq!(s.text(&lt), "2.11.0");
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .expect("git rev-parse");
    let head = String::from_utf8_lossy(&head.stdout).trim().to_owned();
    let commit = s.text(&s.wait(r#"[data-testid="about-commit"]"#, 5));
    assert!(commit.starts_with(&head), "{commit} vs {head}");
    let says = s.text(&s.wait(r#"[data-testid="about-worker-version"]"#, 5));
    assert!(
        says.starts_with("headroom ") && says.contains(&head) && says.contains("libtorch 2.11.0"),
        "{says}"
    );
    let worker = s.text(&s.wait(r#"[data-testid="about-worker"]"#, 5));
    assert_eq!(
        PathBuf::from(worker),
        env_path("HEADROOM_E2E_WORKER"),
        "the worker the app runs"
    );
    s.screenshot(&out.join("about.png"));
    s.close();
    drop(driver);
}

/// Headroom's folder on a read-only filesystem (a tmpfs mounted `ro`: root can write through
/// chmod, not through this): the app still starts — its one-instance lock moves to the temporary
/// folder — and its panels say what is wrong and what to do. Needs mount(2); skipped where it is
/// refused unless HEADROOM_REQUIRE_MOUNT=1 (set by .ci/run as root).
#[test]
#[ignore = "needs Xvfb, tauri-driver and WebKitWebDriver: run scripts/e2e.sh"]
fn a_read_only_folder_still_starts_the_app_and_says_what_to_do() {
    let app = env_path("HEADROOM_E2E_APP");
    let out = env_path("HEADROOM_E2E_OUT");
    std::fs::create_dir_all(&out).expect("output dir");
    let Some(fs) = tmpfs::Tmpfs::mount("size=8m,ro") else {
        return;
    };
    let home = fs.at.clone();
    assert!(
        std::fs::write(home.join("probe"), b"x").is_err(),
        "the folder must be read-only"
    );
    let driver = start_driver(&home);
    let s = Session::new(&driver, &app);

    s.wait(r#"[data-testid="verdict-headline"]"#, 60);
    let note = s.wait(r#".panel.overview .note"#, 30);
    let text = s.text(&note);
    assert!(text.contains("HEADROOM_HOME"), "no advice: {text}");

    readiness_shown_but_not_recorded(&s, "HEADROOM_HOME");
    s.screenshot(&out.join("read_only_folder.png"));
    s.close();
    drop(driver);
}

/// Whether a window named exactly "Headroom" is mapped (shown) on the X display, by `xdotool`.
fn popover_shown() -> bool {
    first_window(&["--onlyvisible", "--name", "^Headroom$"]).is_some()
}

/// The first window `xdotool search ARGS` finds, its id as xdotool prints it.
fn first_window(args: &[&str]) -> Option<String> {
    let out = Command::new("xdotool")
        .arg("search")
        .args(args)
        .output()
        .expect("xdotool (scripts/bootstrap.sh installs it)");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_owned)
}

/// Presses a key combination on the X server's keyboard, as a person would (`ctrl+shift+h`).
fn key(combo: &str) {
    let st = Command::new("xdotool")
        .args(["key", "--clearmodifiers", combo])
        .status()
        .expect("xdotool key");
    assert!(st.success(), "xdotool key {combo}: {st}");
}

fn wait_shown(shown: bool, secs: u64, what: &str) {
    let until = Instant::now() + Duration::from_secs(secs);
    while popover_shown() != shown {
        assert!(
            Instant::now() < until,
            "{what}: the popover is still {} after {secs} s",
            if shown { "hidden" } else { "shown" }
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// What a menu-bar app owes its desktop, in the real window: open at login (the XDG autostart
/// entry appears in the user's home and goes when turned off, written to the config the CLI
/// reads), the global shortcut hides and shows the popover (keys sent through the X server, as a
/// keyboard would), a second start brings the first one's popover forward and exits, and Tab,
/// Enter and Escape alone start a sweep and cancel it.
#[test]
#[ignore = "needs Xvfb, tauri-driver and WebKitWebDriver: run scripts/e2e.sh"]
fn login_entry_shortcut_second_start_and_keyboard_in_the_real_window() {
    let app = env_path("HEADROOM_E2E_APP");
    let out = env_path("HEADROOM_E2E_OUT");
    std::fs::create_dir_all(&out).expect("output dir");
    let home = tempfile::tempdir().expect("temp HEADROOM_HOME");
    let user = home.path().join("user");
    std::fs::create_dir_all(&user).expect("a home folder");
    let driver = start_driver_with(home.path(), &[("HOME", user.as_path())]);
    let s = Session::new(&driver, &app);
    s.wait(r#"[data-testid="verdict-headline"]"#, 60);

    // Settings: the app's own keys first, the shortcut registered at start.
    s.click(&s.wait(r#"[data-testid="tab-settings"]"#, 5));
    let note = s.wait(r#"[data-testid="setting-note-app.shortcut"]"#, 20);
    let said = s.text(&note);
    assert!(
        said.contains("CmdOrCtrl+Shift+H opens and closes the popover"),
        "{said}"
    );
    let entry = user.join(".config/autostart/Headroom.desktop");
    assert!(!entry.exists(), "no login entry before it is asked for");
    s.click(&s.wait(r#"[data-testid="setting-app.open_at_login"]"#, 5));
    let until = Instant::now() + Duration::from_secs(10);
    while !entry.exists() {
        assert!(
            Instant::now() < until,
            "no {} after ticking",
            entry.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let desktop = std::fs::read_to_string(&entry).expect("the autostart entry");
    assert!(
        desktop.contains(&format!("Exec={}", app.display()))
            || desktop.contains(&app.display().to_string()),
        "the entry starts another program: {desktop}"
    );
    let note = s.text(&s.wait(r#"[data-testid="setting-note-app.open_at_login"]"#, 10));
    assert!(note.starts_with("starts at login: "), "{note}");
    let config = std::fs::read_to_string(home.path().join("config.toml")).expect("config.toml");
    assert!(config.contains("open_at_login = true"), "{config}");
    s.screenshot(&out.join("settings_login.png"));
    s.click(&s.wait(r#"[data-testid="setting-app.open_at_login"]"#, 5));
    let until = Instant::now() + Duration::from_secs(10);
    while entry.exists() {
        assert!(
            Instant::now() < until,
            "{} left after unticking",
            entry.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // The shortcut, pressed on the X server's keyboard: hides, then shows. While hidden the
    // popover gets no overview (its WebKit process stays asleep); shown, it gets the latest.
    wait_shown(true, 10, "opened with --open");
    let updated = || {
        s.script(
            "return [...document.querySelectorAll('.machine')].map((e) => e.textContent)\
             .find((t) => t.startsWith('updated ')) || ''",
        )
        .as_str()
        .unwrap_or_default()
        .to_owned()
    };
    let until = Instant::now() + Duration::from_secs(20);
    while updated().is_empty() {
        assert!(Instant::now() < until, "no overview drawn");
        std::thread::sleep(Duration::from_millis(200));
    }
    key("ctrl+shift+h");
    wait_shown(false, 10, "the shortcut pressed once");
    // An update sent just before the window hid may still land.
    std::thread::sleep(Duration::from_secs(1));
    let hidden_at = updated();
    // Two of the loop's 5 s ticks.
    std::thread::sleep(Duration::from_secs(11));
    assert_eq!(updated(), hidden_at, "the hidden popover was redrawn");
    key("ctrl+shift+h");
    wait_shown(true, 10, "the shortcut pressed again");
    let until = Instant::now() + Duration::from_secs(3);
    while updated() == hidden_at {
        assert!(
            Instant::now() < until,
            "shown again, the popover still says {hidden_at}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // A second start, the popover hidden: it shows the first one's popover and leaves.
    key("ctrl+shift+h");
    wait_shown(false, 10, "hidden before the second start");
    let started = Instant::now();
    let second = Command::new(&app)
        .env("HEADROOM_HOME", home.path())
        .env("HOME", &user)
        .env("HEADROOM_BIN", env_path("HEADROOM_E2E_WORKER"))
        .output()
        .expect("start the app a second time");
    assert!(
        second.status.success(),
        "the second start failed: {}",
        String::from_utf8_lossy(&second.stderr)
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the second start took {:?} to leave",
        started.elapsed()
    );
    wait_shown(true, 10, "after the second start");

    // Another shortcut, set in Settings, takes effect at once and the old one lets go.
    s.click(&s.wait(r#"[data-testid="tab-settings"]"#, 5));
    // The tab reloads the settings and draws them afresh: wait for that before typing.
    std::thread::sleep(Duration::from_millis(1000));
    let field = s.wait(r#"[data-testid="setting-app.shortcut"]"#, 5);
    s.type_into(&field, "Ctrl+Alt+K");
    s.keys(&[ENTER]);
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let note = s
            .read(r#"[data-testid="setting-note-app.shortcut"]"#, "class")
            .0;
        if note.starts_with("Ctrl+Alt+K opens and closes") {
            break;
        }
        assert!(Instant::now() < until, "the new shortcut's note: {note}");
        std::thread::sleep(Duration::from_millis(200));
    }
    key("ctrl+alt+k");
    wait_shown(false, 10, "the new shortcut");
    key("ctrl+shift+h");
    std::thread::sleep(Duration::from_millis(1500));
    assert!(!popover_shown(), "the old shortcut still opens the popover");
    key("ctrl+alt+k");
    wait_shown(true, 10, "the new shortcut again");
    let config = std::fs::read_to_string(home.path().join("config.toml")).expect("config.toml");
    assert!(config.contains(r#"shortcut = "Ctrl+Alt+K""#), "{config}");

    // The native folder chooser fills the project's folder (and a fresh form's name): the GTK
    // dialog is driven on the X server as a person would, the path typed in its location bar.
    let project = user.join("code").join("cifar-resnet");
    std::fs::create_dir_all(&project).expect("a project folder");
    s.click(&s.wait(r#"[data-testid="add-project-form"] summary"#, 5));
    s.click(&s.wait(r#"[data-testid="choose-project-dir"]"#, 5));
    let until = Instant::now() + Duration::from_secs(20);
    let dialog = loop {
        if let Some(id) =
            first_window(&["--onlyvisible", "--name", "^Choose the project's folder$"])
        {
            break id;
        }
        assert!(Instant::now() < until, "no folder chooser within 20 s");
        std::thread::sleep(Duration::from_millis(200));
    };
    std::thread::sleep(Duration::from_millis(500));
    let xdo = |args: &[&str]| {
        let st = Command::new("xdotool")
            .args(args)
            .status()
            .expect("xdotool");
        assert!(st.success(), "xdotool {args:?}: {st}");
    };
    // No window manager under Xvfb: the dialog is given the keyboard directly.
    xdo(&["windowfocus", "--sync", &dialog]);
    xdo(&["key", "--window", &dialog, "ctrl+l"]);
    std::thread::sleep(Duration::from_millis(300));
    xdo(&["type", "--delay", "20", &project.display().to_string()]);
    std::thread::sleep(Duration::from_millis(300));
    xdo(&["key", "Return"]);
    let dir_field = s.wait(r#"[data-testid="project-dir"]"#, 5);
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let v = s.prop(&dir_field, "value");
        if v == project.display().to_string() {
            break;
        }
        assert!(
            Instant::now() < until,
            "the folder field reads {v:?}, not {}",
            project.display()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(
        s.prop(&s.wait(r#"[data-testid="project-name"]"#, 5), "value"),
        "cifar-resnet"
    );
    s.screenshot(&out.join("folder_chosen.png"));
    let wide = s.script(
        "return [document.documentElement.scrollWidth, document.documentElement.clientWidth];",
    );
    if wide[0].as_i64() > wide[1].as_i64() {
        let over = s.script(
            "const w = document.documentElement.clientWidth; return [...document.querySelectorAll('body *')]\
             .filter((e) => e.getBoundingClientRect().right > w + 1 || e.scrollWidth > e.clientWidth + 1)\
             .slice(0, 8).map((e) => `${e.tagName}.${e.className}[${e.dataset.testid ?? ''}] ${Math.round(e.getBoundingClientRect().right)} ${e.scrollWidth}/${e.clientWidth}`);",
        );
        panic!("the popover is wider than its window: {wide}; past its edge: {over}");
    }

    // The keyboard alone: Tab from the largest-batch field to Run sweep, Enter, then Escape.
    // (ViT-tiny on the CPU: slow enough a sweep to be cancelled while it runs.)
    s.click(&s.wait(r#"[data-testid="tab-sweep"]"#, 5));
    s.click(&s.wait(
        r#"[data-testid="sweep-workload"] option[value="vit-tiny"]"#,
        5,
    ));
    s.click(&s.wait(r#"[data-testid="sweep-device"] option[value="cpu"]"#, 5));
    s.type_into(&s.wait(r#"[data-testid="sweep-max-batch"]"#, 5), "512");
    let mut walked = vec![s.focused().unwrap_or_default()];
    while s.focused().as_deref() != Some("run-sweep") {
        assert!(walked.len() < 12, "Tab never reached Run sweep: {walked:?}");
        s.keys(&[TAB]);
        walked.push(s.focused().unwrap_or_default());
    }
    s.keys(&[ENTER]);
    let until = Instant::now() + Duration::from_secs(120);
    while s
        .find_all(r#"[data-testid="sweep-status"][data-state="running"]"#)
        .is_empty()
        || s.find_all(r#"[data-testid="sweep-point"]"#).is_empty()
    {
        assert!(
            Instant::now() < until,
            "Enter on Run sweep started nothing within 120 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    s.keys(&[ESCAPE]);
    s.wait_state("sweep-status", "interrupted", 30);
    let why = s.text(&s.wait(r#"[data-testid="sweep-recommendation"]:not([hidden])"#, 5));
    assert!(why.starts_with("cancelled from the app after "), "{why}");
    eprintln!("keyboard walk: {walked:?}");
    s.screenshot(&out.join("keyboard_cancel.png"));
    s.close();
    drop(driver);
}

/// Every tab in the real window, light and then dark (`GTK_THEME=Adwaita:dark`, which WebKitGTK
/// turns into `prefers-color-scheme: dark`): the page sees the appearance, and each tab is
/// captured to be looked at (`target/e2e/theme_{light,dark}_{tab}.png`).
#[test]
#[ignore = "needs Xvfb, tauri-driver and WebKitWebDriver: run scripts/e2e.sh"]
fn every_tab_light_and_dark_in_the_real_window() {
    let app = env_path("HEADROOM_E2E_APP");
    let out = env_path("HEADROOM_E2E_OUT");
    std::fs::create_dir_all(&out).expect("output dir");
    let home = tempfile::tempdir().expect("temp HEADROOM_HOME");
    for (theme, env) in [("light", None), ("dark", Some(Path::new("Adwaita:dark")))] {
        let extra: Vec<(&str, &Path)> = env.map(|v| ("GTK_THEME", v)).into_iter().collect();
        let driver = start_driver_with(home.path(), &extra);
        let s = Session::new(&driver, &app);
        s.wait(r#"[data-testid="verdict-headline"]"#, 60);
        let dark = s
            .script("return window.matchMedia('(prefers-color-scheme: dark)').matches;")
            .as_bool();
        assert_eq!(
            dark,
            Some(theme == "dark"),
            "the page's appearance under {theme}"
        );
        for tab in [
            "overview",
            "readiness",
            "sweep",
            "memory",
            "runs",
            "remote",
            "settings",
            "about",
        ] {
            s.click(&s.wait(&format!(r#"[data-testid="tab-{tab}"]"#), 10));
            s.wait(&format!(r#"[data-testid="tab-{tab}"].active"#), 10);
            std::thread::sleep(Duration::from_millis(400));
            s.screenshot(&out.join(format!("theme_{theme}_{tab}.png")));
        }
        s.close();
        drop(driver);
    }
}

/// The WebKit processes under the app now (the app's descendants named `WebKitWebProces…`).
fn web_processes(app: u32) -> usize {
    descendants(app)
        .iter()
        .filter(|(_, comm)| comm.starts_with("WebKitWebProces"))
        .count()
}

/// Every process under `pid` (its children's children too), with its command name.
fn descendants(pid: u32) -> Vec<(u32, String)> {
    let mut seen = vec![pid];
    let mut i = 0;
    while i < seen.len() {
        let p = seen[i];
        i += 1;
        if let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) {
            for t in tasks.flatten() {
                let kids = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
                seen.extend(
                    kids.split_whitespace()
                        .filter_map(|c| c.parse::<u32>().ok()),
                );
            }
        }
    }
    seen.iter()
        .skip(1)
        .filter_map(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm"))
                .ok()
                .map(|c| (*p, c.trim().to_owned()))
        })
        .collect()
}

/// Starts a CPU sweep of the built-in mlp up to batch 4096 (long enough to run through a close
/// and a reopening) and waits for its first point.
fn start_long_cpu_sweep(s: &Session) {
    s.click(&s.wait(r#"[data-testid="tab-sweep"]"#, 5));
    s.click(&s.wait(r#"[data-testid="sweep-device"] option[value="cpu"]"#, 5));
    s.type_into(&s.wait(r#"[data-testid="sweep-max-batch"]"#, 5), "4096");
    s.click(&s.wait(r#"[data-testid="run-sweep"]"#, 5));
    s.wait(r#"[data-testid="sweep-status"][data-state="running"]"#, 30);
    s.wait(r#"[data-testid="sweep-point"]"#, 60);
}

/// Closes the popover with the shortcut and waits until no WebKit web process is left under
/// `root`, which must take at least the keep time (3 s in these tests) from the key (the keep
/// time runs from the hide, which follows the key: the page cannot go sooner; timed from the
/// moment the hide was seen, a page that goes at once after its keep time looked early by the
/// look's own lag); returns how long after the key the page was gone.
fn close_and_wait_for_the_page_to_go(root: u32, what: &str) -> Duration {
    close_so_and_wait_for_the_page_to_go(root, what, || key("ctrl+shift+h"))
}

/// [`close_and_wait_for_the_page_to_go`], the popover closed by `close`.
fn close_so_and_wait_for_the_page_to_go(root: u32, what: &str, close: impl FnOnce()) -> Duration {
    let pressed = Instant::now();
    close();
    wait_shown(false, 10, what);
    while web_processes(root) > 0 {
        assert!(
            pressed.elapsed() < Duration::from_secs(25),
            "the closed popover's web process is still there 25 s after the key"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let gone = pressed.elapsed();
    assert!(
        gone >= Duration::from_secs(3),
        "dropped before its keep time: {gone:?} after the key"
    );
    gone
}

/// A closed popover holds no web page: once it has stayed hidden for its keep time (3 s here, a
/// minute by default) its window and WebKit web process are gone, and the shortcut makes it
/// again, drawn from the app's own state.
#[test]
#[ignore = "needs Xvfb, tauri-driver and WebKitWebDriver: run scripts/e2e.sh"]
fn a_closed_popover_drops_its_web_page_and_the_shortcut_makes_it_again() {
    let app = env_path("HEADROOM_E2E_APP");
    let out = env_path("HEADROOM_E2E_OUT");
    std::fs::create_dir_all(&out).expect("output dir");
    let home = tempfile::tempdir().expect("temp HEADROOM_HOME");
    let driver = start_driver_with(
        home.path(),
        &[("HEADROOM_APP_KEEP_POPOVER_S", Path::new("3"))],
    );
    let s = Session::new(&driver, &app);
    s.wait(r#"[data-testid="verdict-headline"]"#, 60);
    let pid = Command::new("pgrep")
        .args(["-n", "-x", "headroom-app"])
        .output()
        .expect("pgrep");
    let pid: u32 = String::from_utf8_lossy(&pid.stdout)
        .trim()
        .parse()
        .expect("the app's pid");
    assert!(web_processes(pid) >= 1, "the open popover has its page");
    wait_shown(true, 10, "opened with --open");
    // A sweep that runs through the close and the reopening (mlp on the CPU up to batch 4096).
    start_long_cpu_sweep(&s);
    close_and_wait_for_the_page_to_go(pid, "the shortcut pressed once");
    assert!(
        first_window(&["--name", "^Headroom$"]).is_none(),
        "the popover's window is still there, hidden"
    );
    // The app itself runs on (the tray stays): the shortcut makes the popover again.
    let pressed = Instant::now();
    key("ctrl+shift+h");
    wait_shown(true, 10, "the shortcut pressed again");
    let mapped = pressed.elapsed();
    let until = Instant::now() + Duration::from_secs(10);
    while web_processes(pid) == 0 {
        assert!(Instant::now() < until, "no web process for the new popover");
        std::thread::sleep(Duration::from_millis(200));
    }
    // The new page, through the same WebDriver session (its window is a new browsing context):
    // the first panel drawn, and the sweep still running, its chart drawing.
    let drawn = s.reattach(".panel:not([hidden]) > *", 10);
    let drawn_at = pressed.elapsed();
    eprintln!(
        "popover made again: window mapped {mapped:?}, first panel drawn {drawn_at:?} after the key"
    );
    assert!(!drawn.is_empty());
    s.click(&s.wait(r#"[data-testid="tab-sweep"]"#, 5));
    let status = s.wait(r#"[data-testid="sweep-status"]"#, 5);
    let chart = s.wait(r#"[data-testid="sweep-chart"]:not([hidden])"#, 30);
    assert!(s
        .attr(&chart, "src")
        .is_some_and(|src| src.starts_with("data:image/svg")));
    let points = s.find_all(r#"[data-testid="sweep-point"]"#).len();
    eprintln!("after reopening: {} · {points} point(s)", s.text(&status));
    s.screenshot(&out.join("popover_reopened_sweep.png"));
    // Minimised, the popover is closed too: its page goes after the keep time. A window
    // manager minimises a window by unmapping it (ICCCM's iconic state); Xvfb has none, so the
    // test unmaps it as one would.
    close_so_and_wait_for_the_page_to_go(pid, "the popover minimised", || {
        let st = Command::new("xdotool")
            .args(["search", "--name", "^Headroom$", "windowunmap"])
            .status()
            .expect("xdotool windowunmap");
        assert!(st.success(), "xdotool windowunmap: {st}");
    });
    let pressed = Instant::now();
    key("ctrl+shift+h");
    wait_shown(true, 10, "the shortcut after the popover was minimised");
    s.reattach(".panel:not([hidden]) > *", 10);
    eprintln!(
        "made again after a minimise: first panel drawn {:?} after the key",
        pressed.elapsed()
    );
    s.click(&s.wait(r#"[data-testid="tab-sweep"]"#, 5));
    s.click(&s.wait(r#"[data-testid="cancel-sweep"]"#, 5));
    s.close();
    drop(driver);
}

/// Whether `pid` runs (a process that ended but is not reaped yet — its parent gone, as here —
/// is a zombie: it holds no memory).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
        .unwrap_or(false)
}

/// A process's proportional set size in KiB (`/proc/PID/smaps_rollup`).
fn pss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Pss:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// `bin` (`headroom-tray`, or `headroom-app` started plain, which becomes it) as the tray tests
/// start it: Headroom's folder `home`, the user's `user_home`, the worker built for the e2e,
/// stderr piped for [`TrayLines`]; the caller adds what its test needs.
fn tray_command(bin: &Path, home: &Path, user_home: &Path) -> Command {
    let mut c = Command::new(bin);
    c.env("HEADROOM_HOME", home)
        .env("HEADROOM_BIN", env_path("HEADROOM_E2E_WORKER"))
        .env("HOME", user_home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("HEADROOM_APP_OPEN")
        .env_remove("HEADROOM_APP_ALONE")
        .env_remove("HEADROOM_TRAY_OPEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// A tray's stderr, line by line (echoed as `tray: …`): waited for in turn, or searched among
/// all it said.
struct TrayLines {
    rx: std::sync::mpsc::Receiver<String>,
    all: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl TrayLines {
    fn follow(tray: &mut Child) -> Self {
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let err = tray.stderr.take().expect("the tray's stderr, piped");
        let all = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let kept = all.clone();
        std::thread::spawn(move || {
            for l in BufReader::new(err).lines().map_while(Result::ok) {
                eprintln!("tray: {l}");
                kept.lock().expect("lines").push(l.clone());
                let _ = tx.send(l);
            }
        });
        Self { rx, all }
    }

    /// The next line containing `what`, within `secs`.
    fn wait(&self, what: &str, secs: u64) -> String {
        let until = Instant::now() + Duration::from_secs(secs);
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(l) if l.contains(what) => return l,
                Ok(_) => {}
                Err(_) => panic!("headroom-tray did not say {what:?} within {secs} s"),
            }
        }
    }

    /// Whether any line so far contains every one of `parts`.
    fn said(&self, parts: &[&str]) -> bool {
        self.all
            .lock()
            .expect("lines")
            .iter()
            .any(|l| parts.iter().all(|p| l.contains(p)))
    }

    /// Waits up to `secs` for a line containing every one of `parts`; `why` if none comes.
    fn until_said(&self, parts: &[&str], secs: u64, why: &str) {
        let until = Instant::now() + Duration::from_secs(secs);
        while !self.said(parts) {
            assert!(Instant::now() < until, "{why}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The menu bar without WebKit: `headroom-app` started plain becomes `headroom-tray`, alone (no
/// app, no web process under it),
/// the shortcut starts the popover's process and shows its window, the shortcut again closes
/// it and — once its keep time is over (2 s here) — that process ends with WebKit's, leaving the
/// tray alone; a second start leaves at once and the running tray opens its popover again.
#[test]
#[ignore = "needs Xvfb and a D-Bus session: run scripts/e2e.sh"]
fn the_tray_process_starts_the_popover_on_open_and_is_alone_once_it_is_closed() {
    let home = tempfile::tempdir().expect("temp HEADROOM_HOME");
    let user_home = tempfile::tempdir().expect("a HOME");
    let start = |bin: PathBuf| {
        tray_command(&bin, home.path(), user_home.path())
            .env("HEADROOM_SSH_DIR", home.path().join("ssh"))
            .env("HEADROOM_APP_KEEP_POPOVER_S", "2")
            .env("VIRTUAL_ENV", env_path("HEADROOM_E2E_VENV"))
            .spawn()
            .expect("start headroom-tray")
    };
    // Started plain, as the desktop entry and the login item start it, the app becomes the tray
    // (the same process: `exec`).
    let mut tray = TrayProcess(start(env_path("HEADROOM_E2E_APP")));
    let lines = TrayLines::follow(&mut tray.0);
    let wait_line = |what: &str, secs: u64| lines.wait(what, secs);
    wait_line("headroom-tray: ready", 30);
    let pid = tray.0.id();
    assert_eq!(
        std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .expect("comm")
            .trim(),
        "headroom-tray",
        "the plain start became the tray"
    );
    let apps = |pid: u32| -> Vec<u32> {
        descendants(pid)
            .into_iter()
            .filter(|(_, c)| c == "headroom-app")
            .map(|(p, _)| p)
            .collect()
    };
    assert!(apps(pid).is_empty(), "no popover process before an open");
    assert!(!popover_shown(), "no window before an open");
    let alone = pss_kib(pid);
    // Open: the popover's process starts and maps its window.
    let pressed = Instant::now();
    key("ctrl+shift+h");
    wait_shown(true, 30, "the shortcut pressed on the tray");
    let mapped = pressed.elapsed();
    wait_line("headroom-app: page loaded", 30);
    let loaded = pressed.elapsed();
    let first = apps(pid);
    assert_eq!(
        first.len(),
        1,
        "one popover process: {:?}",
        descendants(pid)
    );
    let until = Instant::now() + Duration::from_secs(20);
    while web_processes(pid) == 0 {
        assert!(Instant::now() < until, "no web page under the open popover");
        std::thread::sleep(Duration::from_millis(200));
    }
    // Close: hidden at once, the process gone after its keep time, WebKit's with it.
    key("ctrl+shift+h");
    wait_shown(false, 10, "the shortcut pressed again");
    wait_line("popover is closed and nothing runs: ending", 30);
    let until = Instant::now() + Duration::from_secs(20);
    while !descendants(pid).is_empty() {
        assert!(
            Instant::now() < until,
            "still under the tray after the close: {:?}",
            descendants(pid)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let closed = pss_kib(pid);
    // This X server has no system tray and this D-Bus session no StatusNotifierWatcher: the
    // tray says the icon cannot show, and how to open Headroom.
    lines.until_said(
        &[
            "headroom-tray: no tray icon can show here yet",
            "press Ctrl+Shift+H to open it",
        ],
        30,
        "the tray never said that no icon can show on a desktop without a tray host",
    );
    // The start-up readiness check, its Pythons held while the popover opened, ran on to its
    // end.
    lines.until_said(
        &["headroom-tray: readiness checked"],
        90,
        "the tray's start-up check, held for the open, never ended",
    );
    eprintln!(
        "tray alone: {:.1} MiB PSS before the first open, {:.1} MiB once closed; the window mapped {mapped:?} and its page loaded {loaded:?} after the key",
        alone as f64 / 1024.0,
        closed as f64 / 1024.0
    );
    // Started again while closed (a double click on the app): the second start leaves naming
    // the first, and the running tray opens its popover, in a new process.
    let pressed = Instant::now();
    let second = start(env_path("HEADROOM_E2E_TRAY"))
        .wait_with_output()
        .expect("a second headroom-tray");
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{said}");
    assert!(
        said.contains(&format!(
            "Headroom's tray is already running (pid {pid}); use its tray icon; its popover opens"
        )),
        "{said}"
    );
    wait_shown(true, 30, "a second start");
    let mapped = pressed.elapsed();
    wait_line("headroom-app: page loaded", 30);
    eprintln!(
        "opened again by a second start: mapped {mapped:?}, page loaded {:?} after it",
        pressed.elapsed()
    );
    let again = apps(pid);
    assert_eq!(again.len(), 1, "{:?}", descendants(pid));
    assert_ne!(again, first, "a new process");
    // The tray ended while its popover is hidden but kept: the popover's process ends once the
    // keep time drops its window, not later.
    key("ctrl+shift+h");
    wait_shown(false, 10, "the shortcut pressed a fourth time");
    let _ = tray.0.kill();
    let _ = tray.0.wait();
    let until = Instant::now() + Duration::from_secs(15);
    while again.iter().any(|p| running(*p)) {
        assert!(Instant::now() < until, "the popover outlived its tray");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The contention notice's "Continue on the remote host", clicked with the popover closed: the
/// tray hands the training over itself — no popover's process, no WebKit, at the moment memory is
/// short. With no project chosen there is nothing to hand over: the tray says why and opens the
/// popover on the Remote panel (whose wizard shows what is missing). The popover's page picks the
/// user's project; a new tray (after a login, a Quit) judges from that project and hands *it*
/// over — here to no host yet, which it says — without a popover opened first.
#[test]
#[ignore = "needs Xvfb, a D-Bus session and dunst: run scripts/e2e.sh"]
fn the_tray_hands_the_training_over_itself_from_the_contention_notice() {
    let home = tempfile::tempdir().expect("temp HEADROOM_HOME");
    let user_home = tempfile::tempdir().expect("a HOME");
    // Thresholds any share of RAM crosses, a stand-in named like Zoom holding memory, and
    // samples every second.
    std::fs::write(
        home.path().join("config.toml"),
        "[contention]\napps_share = 0.0\nreserve_share = 1.0\ninterval_s = 1\n",
    )
    .expect("config");
    let bin = tempfile::tempdir().expect("bin dir");
    let python =
        std::fs::canonicalize(env_path("HEADROOM_E2E_VENV").join("bin/python")).expect("python");
    std::os::unix::fs::symlink(&python, bin.path().join("zoom.us")).expect("symlink");
    let _zoom = Killed(
        Command::new(bin.path().join("zoom.us"))
            .args(["-c", "import time\nb = bytearray(200 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\ntime.sleep(120)\n"])
            .spawn()
            .expect("start the zoom.us stand-in"),
    );
    // The user's project, added from the command line: no popover has picked it yet.
    let project_dir = tempfile::tempdir().expect("project dir");
    std::fs::write(project_dir.path().join("train.py"), "print('training')\n").expect("train.py");
    let added = Command::new(env_path("HEADROOM_E2E_WORKER"))
        .args(["project", "add", "mlp", "--dir"])
        .arg(project_dir.path())
        .arg("--python")
        .arg(&python)
        .args(["--", "python", "train.py", "--batch-size", "{batch}"])
        .env("HEADROOM_HOME", home.path())
        .output()
        .expect("headroom project add");
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    let dunst = Dunst::picking("Continue on the remote host");
    let start_tray = || {
        let mut tray = TrayProcess(
            tray_command(
                &env_path("HEADROOM_E2E_TRAY"),
                home.path(),
                user_home.path(),
            )
            .env("HEADROOM_SSH_DIR", home.path().join("ssh"))
            .env("HEADROOM_TRAY_PREWARM", "0")
            .env("VIRTUAL_ENV", env_path("HEADROOM_E2E_VENV"))
            .spawn()
            .expect("start headroom-tray"),
        );
        let lines = TrayLines::follow(&mut tray.0);
        (tray, lines)
    };
    let wait_line = |lines: &TrayLines, what: &str, secs: u64| lines.wait(what, secs);
    let (tray, lines) = start_tray();
    wait_line(&lines, "headroom-tray: ready", 30);
    let said = wait_line(&lines, "headroom-tray: notification: ", 60);
    assert!(said.contains("memory contention"), "{said}");
    assert!(
        !descendants(tray.0.id())
            .iter()
            .any(|(_, c)| c == "headroom-app"),
        "a popover's process before any open"
    );
    assert!(!popover_shown(), "no window before the click");
    // The notification's button, as a user clicks it in dunst's menu.
    let menu = dunst.click_remote_button();
    assert!(menu.contains("Continue on the remote host"), "{menu}");
    let why = wait_line(&lines, "headroom-tray: continue on the remote host: ", 30);
    assert!(why.ends_with("no project chosen"), "{why}");
    // Nothing to hand over: the popover opens, on the Remote panel.
    wait_shown(true, 30, "the hand-off with no project");
    wait_line(&lines, "headroom-app: page loaded", 30);
    // Its page picks the user's project (the only one), which Headroom keeps.
    let kept = home.path().join("popover/chosen-project.json");
    let until = Instant::now() + Duration::from_secs(15);
    while std::fs::read_to_string(&kept).map_or(true, |k| k.trim() != "\"mlp\"") {
        assert!(
            Instant::now() < until,
            "the project picked was not kept: {:?}",
            std::fs::read_to_string(&kept)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // A new tray, as after a login: no popover opened, the project is the one picked before.
    drop(tray);
    wait_shown(false, 10, "the popover gone with its tray");
    std::fs::remove_file(dunst.dir.path().join("menu.txt")).expect("the first menu");
    let (tray, lines) = start_tray();
    wait_line(&lines, "headroom-tray: ready", 30);
    let said = wait_line(&lines, "headroom-tray: notification: ", 60);
    assert!(said.contains("memory contention"), "{said}");
    assert!(
        !descendants(tray.0.id())
            .iter()
            .any(|(_, c)| c == "headroom-app"),
        "a popover's process before any open"
    );
    let menu = dunst.click_remote_button();
    assert!(menu.contains("Continue on the remote host"), "{menu}");
    let why = wait_line(&lines, "headroom-tray: continue on the remote host: ", 30);
    assert!(why.ends_with("no host has the project yet"), "{why}");
    wait_shown(true, 30, "the hand-off with no host");
}

/// The icon itself, in a real X system tray (`trayer`): libayatana-appindicator, with no
/// StatusNotifierWatcher on the bus, embeds it there as an XEmbed status icon — and the tray
/// then says nothing about a missing icon.
#[test]
#[ignore = "needs Xvfb, a D-Bus session and trayer: run scripts/e2e.sh"]
fn the_icon_shows_in_an_x_system_tray() {
    let home = tempfile::tempdir().expect("temp HEADROOM_HOME");
    let user_home = tempfile::tempdir().expect("a HOME");
    let _panel = Killed(
        Command::new("trayer")
            .args(["--edge", "top", "--align", "right", "--widthtype", "pixel"])
            .args(["--width", "200", "--height", "32"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start trayer (scripts/bootstrap.sh installs it)"),
    );
    let until = Instant::now() + Duration::from_secs(10);
    while first_window(&["--class", "trayer"]).is_none() {
        assert!(Instant::now() < until, "trayer made no window");
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut tray = TrayProcess(
        tray_command(
            &env_path("HEADROOM_E2E_TRAY"),
            home.path(),
            user_home.path(),
        )
        .env("HEADROOM_APP_BIN", env_path("HEADROOM_E2E_APP"))
        .env("HEADROOM_TRAY_PREWARM", "0")
        .spawn()
        .expect("start headroom-tray"),
    );
    let lines = TrayLines::follow(&mut tray.0);
    let said = |what: &str| lines.said(&[what]);
    lines.until_said(
        &["headroom-tray: ready"],
        30,
        "headroom-tray did not get ready",
    );
    let ready = Instant::now();
    // The icon's window, embedded in trayer's panel.
    let icon = loop {
        if let Some(id) = first_window(&["--class", "^tray-icon tray app headroom$"]) {
            break id;
        }
        assert!(
            ready.elapsed() < Duration::from_secs(10),
            "no icon window in the X system tray"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    // Its ancestors, up to the root: trayer's panel among them (XEmbed puts it in a socket
    // window of the panel's).
    let parent_of = |id: &str| -> Option<(String, String)> {
        let out = Command::new("xwininfo")
            .args(["-id", id, "-tree"])
            .output()
            .expect("xwininfo (x11-utils)");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let line = text
            .lines()
            .find(|l| l.contains("Parent window id:"))?
            .to_owned();
        let parent = line.split_whitespace().nth(3)?.to_owned();
        Some((parent, line))
    };
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let mut chain = Vec::new();
        let mut id = icon.clone();
        while let Some((parent, line)) = parent_of(&id) {
            chain.push(line);
            // 0x0: the root's parent (xwininfo asks for a click when given it).
            if chain.len() > 8 || parent == id || parent == "0x0" {
                break;
            }
            id = parent;
        }
        if chain.iter().any(|l| l.contains("\"panel\"")) {
            eprintln!("the icon's window {icon} in trayer's panel: {chain:?}");
            break;
        }
        assert!(
            Instant::now() < until,
            "the icon's window {icon} is not in trayer's panel: {chain:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // The notice would come 2 s after the start: none.
    std::thread::sleep(Duration::from_secs(3).saturating_sub(ready.elapsed()));
    assert!(
        !said("no tray icon can show"),
        "the tray said no icon can show, with its icon in a system tray"
    );
}

/// The same in the two-process menu bar, as a user runs it: WebDriver drives the popover's
/// process that `headroom-tray --open` started. The sweep started there runs in the tray: once
/// the popover is closed its window, WebKit's web process and the popover's process itself go
/// after the keep time (3 s here) while the sweep goes on — its points still reach the ledger
/// with the tray and the sweep's worker the only processes left —, and the shortcut on the tray
/// shows the popover again, in a new process, with the sweep still drawing.
#[test]
#[ignore = "needs Xvfb, tauri-driver and WebKitWebDriver: run scripts/e2e.sh"]
fn a_sweep_runs_on_in_the_tray_through_a_close_and_a_new_popover_draws_it() {
    let tray_bin = env_path("HEADROOM_E2E_TRAY");
    let out = env_path("HEADROOM_E2E_OUT");
    std::fs::create_dir_all(&out).expect("output dir");
    let home = tempfile::tempdir().expect("temp HEADROOM_HOME");
    let driver = start_driver_with(
        home.path(),
        &[
            ("HEADROOM_APP_KEEP_POPOVER_S", Path::new("3")),
            ("HEADROOM_TRAY_PREWARM", Path::new("0")),
        ],
    );
    let s = Session::started(&driver, &tray_bin, &["--open"]);
    s.wait(r#"[data-testid="verdict-headline"]"#, 60);
    let pid_of = |name: &str| -> u32 {
        let o = Command::new("pgrep")
            .args(["-n", "-x", name])
            .output()
            .expect("pgrep");
        String::from_utf8_lossy(&o.stdout)
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("no {name} process"))
    };
    let tray = pid_of("headroom-tray");
    let popover_processes = || -> Vec<u32> {
        descendants(tray)
            .into_iter()
            .filter(|(_, c)| c == "headroom-app")
            .map(|(p, _)| p)
            .collect()
    };
    /// The tray and everything under it (its popover's process, a sweep's worker).
    struct Reaped(u32);
    impl Drop for Reaped {
        fn drop(&mut self) {
            let all: Vec<u32> = descendants(self.0)
                .into_iter()
                .map(|(p, _)| p)
                .chain([self.0])
                .collect();
            for p in &all {
                let _ = Command::new("kill").arg(p.to_string()).status();
            }
            let until = Instant::now() + Duration::from_secs(10);
            while all.iter().any(|p| running(*p)) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    let popover = popover_processes();
    assert_eq!(popover.len(), 1, "one popover process under the tray");
    // The session's end closes the page, not the tray (no WebKit in it): it is ended here, so
    // the next test can take the shortcut.
    let _reaped = Reaped(tray);
    let popover = popover[0];
    assert!(web_processes(tray) >= 1, "the open popover has its page");
    wait_shown(true, 10, "opened by headroom-tray --open");
    start_long_cpu_sweep(&s);
    // Closed through the tray's shortcut: the page goes after the keep time, and the popover's
    // process with it — the sweep runs in the tray.
    let dropped = close_and_wait_for_the_page_to_go(tray, "the shortcut pressed on the tray");
    let until = Instant::now() + Duration::from_secs(30);
    while running(popover) {
        assert!(
            Instant::now() < until,
            "the closed popover's process is still there 30 s after its page went, a sweep running in the tray"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // Under the tray: the sweep's worker (and, this early, the tray's own readiness check's
    // Pythons); the popover's process reaped and WebKit's network process gone with it.
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let left: Vec<String> = descendants(tray).into_iter().map(|(_, c)| c).collect();
        let popover_left = left
            .iter()
            .any(|c| c == "headroom-app" || c.starts_with("WebKit"));
        if !popover_left {
            assert!(
                left.iter().any(|c| c == "headroom-worker"),
                "the sweep's worker is not under the tray: {left:?}"
            );
            break;
        }
        assert!(
            Instant::now() < until,
            "the popover's process or WebKit's still under the tray 20 s after it ended: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(web_processes(tray), 0, "no WebKit process while closed");
    // The sweep's points in the ledger (the one sweep of this Headroom folder).
    let points = || -> u64 {
        let o = Command::new(env_path("HEADROOM_E2E_WORKER"))
            .args(["ledger", "list", "--json"])
            .env("HEADROOM_HOME", home.path())
            .output()
            .expect("headroom ledger list");
        let runs: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
        runs.as_array()
            .and_then(|r| r.iter().find(|r| r["kind"] == "sweep"))
            .and_then(|r| r["points"].as_u64())
            .unwrap_or(0)
    };
    // The sweep goes on with no popover: a new point reaches the ledger.
    let closed_at = points();
    let until = Instant::now() + Duration::from_secs(120);
    while points() <= closed_at {
        assert!(
            Instant::now() < until,
            "no new point of the sweep in the ledger within 120 s of the close ({closed_at} before)"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let tray_pss = pss_kib(tray);
    let worker_pss: u64 = descendants(tray)
        .iter()
        .filter(|(_, c)| c == "headroom-worker")
        .map(|(p, _)| pss_kib(*p))
        .sum();
    // Opened again through the tray: a new popover's process makes the window and its page.
    let pressed = Instant::now();
    key("ctrl+shift+h");
    wait_shown(true, 10, "the shortcut pressed again");
    let again = popover_processes();
    assert_eq!(
        again.len(),
        1,
        "one popover process: {:?}",
        descendants(tray)
    );
    assert_ne!(again[0], popover, "a new popover process");
    // The first session's browser is gone: WebKitWebDriver attaches to the new one.
    let attached = Attached::to(again[0]);
    let s = &attached.session;
    let drawn = s.reattach(".panel:not([hidden]) > *", 20);
    let drawn_at = pressed.elapsed();
    assert!(!drawn.is_empty());
    s.click(&s.wait(r#"[data-testid="tab-sweep"]"#, 5));
    // Looked up afresh each time: the panel redraws its status as points arrive.
    let state = || {
        let e = s.wait(r#"[data-testid="sweep-status"]"#, 5);
        s.attr(&e, "data-state").unwrap_or_default()
    };
    let chart = s.wait(r#"[data-testid="sweep-chart"]:not([hidden])"#, 30);
    assert!(s
        .attr(&chart, "src")
        .is_some_and(|src| src.starts_with("data:image/svg")));
    let before = s.find_all(r#"[data-testid="sweep-point"]"#).len();
    assert!(
        before >= 2,
        "the points measured while closed are shown: {before}"
    );
    // Still drawing: another point arrives in the reopened popover, or the sweep ends there.
    let until = Instant::now() + Duration::from_secs(120);
    loop {
        let now = s.find_all(r#"[data-testid="sweep-point"]"#).len();
        let state = state();
        if now > before || state != "running" {
            eprintln!(
                "two processes: page and popover process gone {dropped:?} after the closing key; closed with the sweep running: tray {:.1} MiB PSS, the sweep's worker {:.1} MiB; first panel drawn {drawn_at:?} after the reopening key (a new process, WebKitWebDriver attached to it in that time); points {before} -> {now}, sweep {state}",
                tray_pss as f64 / 1024.0,
                worker_pss as f64 / 1024.0
            );
            break;
        }
        assert!(
            Instant::now() < until,
            "no new point within 120 s of the reopening"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    s.screenshot(&out.join("two_process_reopened_sweep.png"));
    if state() == "running" {
        s.click(&s.wait(r#"[data-testid="cancel-sweep"]"#, 5));
    }
    let until = Instant::now() + Duration::from_secs(60);
    while state() == "running" {
        assert!(Instant::now() < until, "the sweep did not stop");
        std::thread::sleep(Duration::from_millis(300));
    }
    // A memory job runs in the tray too: a Python process that keeps 4 MiB more every 0.5 s,
    // watched from the Memory panel through a close and a reopening.
    let grower = Killed(
        Command::new(env_path("HEADROOM_E2E_VENV").join("bin/python"))
            .args([
                "-c",
                "import time\nkeep = []\nfor _ in range(400):\n    keep.append(bytearray(4 << 20))\n    time.sleep(0.5)\n",
            ])
            .spawn()
            .expect("start a growing python"),
    );
    std::thread::sleep(Duration::from_millis(500));
    s.click(&s.wait(r#"[data-testid="tab-memory"]"#, 5));
    s.click(&s.wait(r#"[data-testid="list-processes"]"#, 5));
    let pick = format!(
        r#"[data-testid="process-row"][data-pid="{}"] button"#,
        grower.0.id()
    );
    s.click(&s.wait(&pick, 10));
    s.wait_state("memory-status", "running", 10);
    // The seconds watched, from the status line ("12 s · tree 40 MiB · +5 % since …").
    let watched = |s: &Session| -> f64 {
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            let (text, _) = s.read(r#"[data-testid="memory-status"]"#, "data-state");
            if let Some(secs) = text
                .split(" s · tree")
                .next()
                .and_then(|t| t.rsplit(' ').next())
                .and_then(|t| t.parse::<f64>().ok())
            {
                return secs;
            }
            assert!(Instant::now() < until, "no seconds in {text:?}");
            std::thread::sleep(Duration::from_millis(250));
        }
    };
    let before_close = watched(s);
    let popover = again[0];
    close_and_wait_for_the_page_to_go(tray, "closed with a process watched");
    let until = Instant::now() + Duration::from_secs(30);
    while running(popover) {
        assert!(
            Instant::now() < until,
            "the closed popover's process is still there 30 s after its page went, a watch running in the tray"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let closed_for = Instant::now();
    std::thread::sleep(Duration::from_secs(3));
    let tray_pss_watch = pss_kib(tray);
    key("ctrl+shift+h");
    wait_shown(true, 10, "the shortcut pressed with a watch running");
    let third = popover_processes();
    assert_eq!(
        third.len(),
        1,
        "one popover process: {:?}",
        descendants(tray)
    );
    drop(attached);
    let attached = Attached::to(third[0]);
    let s = &attached.session;
    s.reattach(".panel:not([hidden]) > *", 20);
    s.click(&s.wait(r#"[data-testid="tab-memory"]"#, 5));
    s.wait_state("memory-status", "running", 10);
    let after_reopen = watched(s);
    let gap = closed_for.elapsed().as_secs_f64();
    eprintln!(
        "a process watched through a close: {before_close:.0} s watched before, {after_reopen:.0} s after the reopening ({gap:.1} s with no popover's process); tray {:.1} MiB PSS while closed",
        tray_pss_watch as f64 / 1024.0
    );
    assert!(
        after_reopen >= before_close + 3.0,
        "the watch did not go on while the popover was closed: {before_close} s then {after_reopen} s"
    );
    s.screenshot(&out.join("two_process_reopened_watch.png"));
    s.click(&s.wait(r#"[data-testid="stop-memory"]"#, 5));
    s.wait_state("memory-status", "complete", 15);
    drop(grower);
    // Closed with nothing running: the popover's process ends, the tray stays alone.
    let popover = third[0];
    key("ctrl+shift+h");
    wait_shown(false, 10, "closed after the sweep");
    let until = Instant::now() + Duration::from_secs(30);
    while running(popover) {
        assert!(
            Instant::now() < until,
            "the idle closed popover's process is still there after 30 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(running(tray), "the tray stays");
    let until = Instant::now() + Duration::from_secs(20);
    while !descendants(tray).is_empty() {
        assert!(
            Instant::now() < until,
            "still under the tray after the popover's process ended: {:?}",
            descendants(tray)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(attached);
    drop(driver);
}
