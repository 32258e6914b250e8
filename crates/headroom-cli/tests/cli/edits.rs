//! Issue 39: never lose an edit. Twelve `project add` and twelve `remote add` started at once
//! all land (and `hosts.toml` and the managed ssh file agree); `config set` beside `project
//! add` keeps both; a symlinked `config.toml` or `~/.ssh/config` (a dotfile manager's) is
//! written through to its target; a CRLF file keeps its line ends; a `remote add` whose ssh
//! side fails changes neither file and can be retried.

use std::path::Path;
use std::process::{Child, Command};

use crate::common::Home;

fn spawn(home: &Home, ssh: &Path, args: &[&str]) -> Child {
    let mut c: Command = home.cmd(args);
    c.env("HEADROOM_SSH_DIR", ssh)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    c.spawn().expect("start headroom")
}

fn all_ok(children: Vec<Child>) {
    for c in children {
        let out = c.wait_with_output().expect("wait");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn projects(home: &Home) -> Vec<String> {
    let (out, v) = home.json(&["project", "list", "--json"]);
    assert!(out.status.success(), "{out:?}");
    v.as_array()
        .expect("a list")
        .iter()
        .map(|p| p["name"].as_str().expect("name").to_owned())
        .collect()
}

#[test]
fn twelve_parallel_project_adds_and_config_sets_all_land() {
    let home = Home::new();
    let ssh = home.path().join("ssh");
    let dir = home.path().display().to_string();
    let mut children = Vec::new();
    for i in 0..12 {
        let name = format!("p{i}");
        children.push(spawn(
            &home,
            &ssh,
            &[
                "project",
                "add",
                &name,
                "--dir",
                &dir,
                "--",
                "python3",
                "train.py",
                "--batch-size",
                "{batch}",
            ],
        ));
        if i % 3 == 0 {
            children.push(spawn(
                &home,
                &ssh,
                &[
                    "config",
                    "set",
                    "epochs.over_epochs",
                    &format!("{}", 20 + i),
                ],
            ));
        }
    }
    all_ok(children);
    let mut names = projects(&home);
    names.sort();
    let mut want: Vec<String> = (0..12).map(|i| format!("p{i}")).collect();
    want.sort();
    assert_eq!(names, want);
    let text = std::fs::read_to_string(home.path().join("config.toml")).expect("config");
    assert!(text.contains("over_epochs"), "{text}");
}

#[test]
fn twelve_parallel_remote_adds_all_land_in_both_files() {
    let home = Home::new();
    let ssh = home.path().join("ssh");
    let children = (0..12)
        .map(|i| {
            spawn(
                &home,
                &ssh,
                &[
                    "remote",
                    "add",
                    &format!("h{i}"),
                    "--host",
                    &format!("10.0.0.{i}"),
                ],
            )
        })
        .collect();
    all_ok(children);
    let hosts = std::fs::read_to_string(home.path().join("hosts.toml")).expect("hosts");
    let managed = std::fs::read_to_string(ssh.join("config.d").join("headroom"))
        .or_else(|_| {
            // Wherever the managed file lives, it is the one file in ssh/ besides config.
            let f = std::fs::read_dir(&ssh)
                .expect("ssh dir")
                .flatten()
                .find(|e| e.path().is_file() && e.file_name() != "config")
                .expect("managed file");
            std::fs::read_to_string(f.path())
        })
        .expect("managed ssh file");
    for i in 0..12 {
        assert!(hosts.contains(&format!("[hosts.h{i}]")), "h{i}: {hosts}");
        assert!(
            managed.lines().any(|l| l.trim() == format!("Host h{i}")),
            "h{i}: {managed}"
        );
    }
}

#[test]
fn symlinked_dotfiles_are_written_through_to_their_targets() {
    let home = Home::new();
    let dotfiles = home.path().join("dotfiles");
    std::fs::create_dir_all(&dotfiles).expect("dotfiles");
    // config.toml → dotfiles/headroom.toml (relative link, as stow makes them).
    std::fs::write(dotfiles.join("headroom.toml"), "# mine\n").expect("target");
    std::os::unix::fs::symlink("dotfiles/headroom.toml", home.path().join("config.toml"))
        .expect("link");
    // ssh/config → dotfiles/ssh_config (absolute link).
    let ssh = home.path().join("ssh");
    std::fs::create_dir_all(&ssh).expect("ssh");
    std::fs::write(
        dotfiles.join("ssh_config"),
        "Host old\n    HostName 192.0.2.1\n",
    )
    .expect("ssh target");
    std::os::unix::fs::symlink(dotfiles.join("ssh_config"), ssh.join("config")).expect("link");

    let out = home
        .cmd(&["config", "set", "epochs.over_epochs", "33"])
        .output()
        .expect("config set");
    assert!(out.status.success(), "{out:?}");
    let out = home
        .cmd(&["remote", "add", "box", "--host", "203.0.113.9"])
        .env("HEADROOM_SSH_DIR", &ssh)
        .output()
        .expect("remote add");
    assert!(out.status.success(), "{out:?}");

    for link in [home.path().join("config.toml"), ssh.join("config")] {
        assert!(
            std::fs::symlink_metadata(&link)
                .expect("link")
                .file_type()
                .is_symlink(),
            "{} is no longer a link",
            link.display()
        );
    }
    let cfg = std::fs::read_to_string(dotfiles.join("headroom.toml")).expect("target");
    assert!(
        cfg.contains("# mine") && cfg.contains("over_epochs = 33"),
        "{cfg}"
    );
    let ssh_cfg = std::fs::read_to_string(dotfiles.join("ssh_config")).expect("ssh target");
    assert!(ssh_cfg.starts_with("Include "), "{ssh_cfg}");
    assert!(ssh_cfg.contains("Host old"), "{ssh_cfg}");
}

#[test]
fn a_crlf_config_keeps_its_line_ends() {
    let home = Home::new();
    let cfg = home.path().join("config.toml");
    std::fs::write(&cfg, "# mine\r\n[epochs]\r\nslowdown = 0.2\r\n").expect("config");
    let out = home
        .cmd(&["config", "set", "epochs.over_epochs", "31"])
        .output()
        .expect("config set");
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&cfg).expect("config");
    assert!(text.contains("over_epochs = 31"), "{text:?}");
    assert_eq!(
        text.matches('\n').count(),
        text.matches("\r\n").count(),
        "{text:?}"
    );
}

/// The ssh side cannot be written (its folder is a file): `hosts.toml` is left as it was, and
/// once the folder is fixed the same `remote add` works instead of "exists already".
#[test]
fn a_remote_add_whose_ssh_side_fails_changes_neither_file_and_can_be_retried() {
    let home = Home::new();
    let ssh = home.path().join("ssh");
    std::fs::write(&ssh, "not a folder").expect("a file where the folder goes");
    let add = || {
        home.cmd(&["remote", "add", "box", "--host", "203.0.113.9"])
            .env("HEADROOM_SSH_DIR", &ssh)
            .output()
            .expect("remote add")
    };
    let out = add();
    assert!(!out.status.success(), "{out:?}");
    let hosts = std::fs::read_to_string(home.path().join("hosts.toml")).unwrap_or_default();
    assert!(!hosts.contains("box"), "{hosts}");
    std::fs::remove_file(&ssh).expect("fix");
    let out = add();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
