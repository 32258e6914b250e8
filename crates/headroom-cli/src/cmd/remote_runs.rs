//! `headroom remote run|runs|attach|stop|tunnel`: training on a remote host that keeps going
//! without this machine (the host runs `headroom run --detach`; see `headroom runs`), mirrored
//! into this ledger under the host's name whenever it is looked at.

use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{bail, Result};
use headroom_core::jobs::detached::{DetachedRun, DetachedState};
use headroom_core::jobs::remote_runs as runs;
use headroom_core::remote::{HostProfile, Hosts};

fn profile(name: &str) -> Result<HostProfile> {
    let hosts = Hosts::load()?;
    let p = hosts.get(name)?.clone();
    super::remote::sync(&hosts)?;
    Ok(p)
}

/// Mirrors `found` into the ledger; a ledger that refuses is said, the runs there go on.
fn mirror(name: &str, found: &[DetachedRun]) -> Vec<Option<i64>> {
    let mirrored = super::open_ledger_keeping()
        .map_err(|e| e.to_string())
        .and_then(|l| {
            let rows = runs::mirror(&l, name, found).map_err(|e| e.to_string())?;
            super::settle_ledger(&l).map_err(|e| e.to_string())?;
            Ok(rows)
        });
    match mirrored {
        Ok(rows) => rows.into_iter().map(Some).collect(),
        Err(e) => {
            eprintln!("headroom: warning: the runs on {name} are not mirrored here: {e}");
            vec![None; found.len()]
        }
    }
}

pub fn start(
    name: &str,
    project: &str,
    batch: Option<u32>,
    release: Option<&str>,
    timeout: Duration,
    json: bool,
) -> Result<ExitCode> {
    let release = release
        .map(headroom_model::protocol::Release::parse)
        .transpose()?;
    let p = profile(name)?;
    // No batch for a command that takes one: the batch its sweep there recommended (else the
    // sweep's here), said on stderr.
    let ledger = super::open_ledger().ok();
    let (batch, why) = runs::batch_for(name, project, batch, ledger.as_ref())?;
    if let Some(why) = why {
        eprintln!("headroom: {why}");
    }
    let started = runs::start_project(&p, project, batch, release, timeout)?;
    let meta = &started.meta;
    let row = mirror(name, &[runs::just_started(meta)])[0];
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "host": name,
                "run": meta,
                "device": started.device,
                "ledger_run_id": row,
            }))?
        );
    } else {
        println!(
            "started run {} on {name} on {}: `{}` in {} (process group {} there){}",
            meta.id,
            started.device,
            started.argv.join(" "),
            started.dir,
            meta.pid,
            row.map_or_else(String::new, |r| format!("; recorded here as run {r}"))
        );
        println!("follow it: headroom remote attach {name} {}", meta.id);
        println!("all runs:  headroom remote runs {name}");
        println!("end it:    headroom remote stop {name} {}", meta.id);
    }
    Ok(ExitCode::SUCCESS)
}

pub fn list(name: &str, timeout: Duration, json: bool) -> Result<ExitCode> {
    let p = profile(name)?;
    let found = runs::list(&p, timeout)?;
    let rows = mirror(name, &found);
    if json {
        let out: Vec<serde_json::Value> = found
            .iter()
            .zip(&rows)
            .map(|(r, row)| {
                let mut v = serde_json::to_value(r).unwrap_or_default();
                v["host"] = serde_json::json!(name);
                v["ledger_run_id"] = serde_json::json!(row);
                v
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else if found.is_empty() {
        println!("no runs on {name}: start one with `headroom remote run {name} --project P`");
    } else {
        for (r, row) in found.iter().zip(&rows) {
            println!(
                "{}{}",
                super::runs::line(r),
                row.map_or_else(String::new, |id| format!("\n    here: run {id}"))
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn attach(name: &str, run: &str, tail: Option<u64>, timeout: Duration) -> Result<ExitCode> {
    headroom_core::jobs::detached::check_id(run)?;
    let p = profile(name)?;
    let stop = super::runs::catch_interrupt();
    let mut child = runs::follow_command(&p, run, tail, timeout)?
        .stdin(std::process::Stdio::null())
        .spawn()
        .map_err(|e| anyhow::anyhow!("cannot run ssh: {e}; install OpenSSH's client"))?;
    // A terminal's Ctrl-C reaches ssh too, which may end first: the flag decides.
    let status = loop {
        let ended = child.try_wait()?;
        if stop.load(Ordering::SeqCst) {
            if ended.is_none() {
                let _ = child.kill();
                let _ = child.wait();
            }
            break None;
        }
        if ended.is_some() {
            // A Ctrl-C that ended ssh lands here a moment before its own flag is seen.
            std::thread::sleep(Duration::from_millis(100));
            if stop.load(Ordering::SeqCst) {
                break None;
            }
            break ended;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // What became of it, mirrored here.
    let found = runs::list(&p, timeout).unwrap_or_default();
    let this: Vec<DetachedRun> = found.into_iter().filter(|r| r.meta.id == run).collect();
    mirror(name, &this);
    match (status, this.first()) {
        (None, _) => {
            eprintln!(
                "headroom: stopped following; run {run} goes on on {name} (`headroom remote attach {name} {run}` again, `headroom remote stop {name} {run}` to end it)"
            );
            Ok(ExitCode::SUCCESS)
        }
        (Some(s), Some(r)) if s.success() => {
            eprintln!("headroom: run {run} on {name} ended {}", r.state.as_str());
            Ok(ExitCode::SUCCESS)
        }
        (Some(_), _) => {
            bail!("could not follow run {run} on {name}: `headroom remote runs {name}` lists its runs, `headroom remote check {name}` the connection")
        }
    }
}

pub fn stop(name: &str, run: &str, timeout: Duration, json: bool) -> Result<ExitCode> {
    headroom_core::jobs::detached::check_id(run)?;
    let p = profile(name)?;
    let r = runs::stop(&p, run, timeout)?;
    let row = mirror(name, std::slice::from_ref(&r))[0];
    if json {
        let mut v = serde_json::to_value(&r)?;
        v["ledger_run_id"] = serde_json::json!(row);
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("{}", super::runs::line(&r));
    }
    Ok(if r.state == DetachedState::Running {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

pub fn tunnel(
    name: &str,
    port: u16,
    local: Option<u16>,
    for_secs: Option<u64>,
    timeout: Duration,
) -> Result<ExitCode> {
    let p = profile(name)?;
    // The same port here when it is free, so a URL printed there works as it is.
    let local = local.or_else(|| {
        std::net::TcpListener::bind(("127.0.0.1", port))
            .ok()
            .map(|_| port)
    });
    let mut t = match headroom_core::remote::vnc::open_tunnel_to(&p, port, local, timeout)? {
        Ok(t) => t,
        Err(f) => bail!(
            "cannot open the tunnel to {name}:{port}: {}\n  fix: {}",
            f.message,
            f.fix
        ),
    };
    println!(
        "http://localhost:{}  (port {port} on {name}, through ssh)",
        t.local_port
    );
    let stop = super::runs::catch_interrupt();
    let until = for_secs.map(|s| std::time::Instant::now() + Duration::from_secs(s));
    while t.alive() {
        if stop.load(Ordering::SeqCst) || until.is_some_and(|u| std::time::Instant::now() >= u) {
            println!("tunnel closed");
            return Ok(ExitCode::SUCCESS);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    bail!("the ssh carrying the tunnel ended")
}
