//! Facts a run records besides its measurements, gathered before it starts: the checksums of
//! the dataset files it uses (`--data`) and the round trip to the artifact store
//! (`--artifact-store`), measured where the run runs.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use headroom_core::remote::rtt::{self, ArtifactRtt};
use headroom_core::remote::HostProfile;
use headroom_model::budget::format_bytes;
use headroom_store::ledger::{Ledger, ARTIFACT_RTT_SEQ, DATA_SEQ};
use indicatif::{ProgressBar, ProgressStyle};

/// `--data` and `--artifact-store`, shared by the commands that make runs.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RecordArgs {
    /// Dataset files or folders this run uses: their SHA-256 checksums go into the ledger
    /// (cached while a file's size and mtime are unchanged). Repeat or list several.
    #[arg(long = "data", value_name = "PATH", num_args = 1..)]
    pub data: Vec<PathBuf>,
    /// Where checkpoints and data live (host:port or a URL): the round trip to it, from where the
    /// run runs, goes into the ledger. A remote host's profile may name one instead.
    #[arg(long, value_name = "HOST:PORT|URL")]
    pub artifact_store: Option<String>,
}

/// Connections per round-trip measurement, and how long each may take.
const RTT_COUNT: u32 = 5;
const RTT_TIMEOUT: Duration = Duration::from_secs(3);

impl RecordArgs {
    /// Gathers the facts and attaches them to the runs `ledger` begins from now on. `remote` is
    /// the host the run goes to, whose profile may name the artifact store.
    pub fn attach(&self, ledger: &Ledger, remote: Option<&HostProfile>, quiet: bool) -> Result<()> {
        if !self.data.is_empty() {
            let shards = checksum(ledger, &self.data, quiet)?;
            let record = headroom_report::datasum::DataRecord {
                shards,
                mounts: headroom_report::datasum::mounts_of(&self.data),
            };
            ledger.attach(DATA_SEQ, "data", &record)?;
        }
        let store = self
            .artifact_store
            .clone()
            .or_else(|| remote.and_then(|p| p.artifact_store.clone()));
        if let Some(store) = store {
            rtt::parse_target(&store)?;
            let r = match remote {
                None => rtt::measure(
                    &store,
                    &headroom_core::jobs::hostname(),
                    RTT_COUNT,
                    RTT_TIMEOUT,
                ),
                Some(p) => measure_from(p, &store),
            };
            if !quiet {
                eprintln!("artifact store: {}", r.describe());
            }
            ledger.attach(ARTIFACT_RTT_SEQ, "artifact_rtt", &r)?;
        }
        Ok(())
    }
}

/// Checksums with a progress bar on a terminal and a summary line.
fn checksum(
    ledger: &Ledger,
    paths: &[PathBuf],
    quiet: bool,
) -> Result<Vec<headroom_report::datasum::Shard>> {
    let bar = if quiet {
        ProgressBar::hidden()
    } else {
        let b = ProgressBar::new(0);
        b.set_style(
            ProgressStyle::with_template(
                "checksumming data {bar:30} {bytes}/{total_bytes} {bytes_per_sec} {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b
    };
    let shards = headroom_report::datasum::checksums(ledger, paths, &mut |p| {
        bar.set_length(p.total_bytes);
        bar.set_position(p.done_bytes);
        bar.set_message(format!(
            "{}/{} {}",
            p.files_done,
            p.files,
            p.file.file_name().unwrap_or_default().to_string_lossy()
        ));
    })
    .context("cannot checksum the --data files")?;
    bar.finish_and_clear();
    if !quiet {
        let cached = shards.iter().filter(|s| s.cached).count();
        eprintln!(
            "data: {} file(s), {}, set sha256 {} ({cached} from the cache)",
            shards.len(),
            format_bytes(shards.iter().map(|s| s.bytes).sum()),
            &headroom_report::datasum::digest(&shards)[..16]
        );
    }
    Ok(shards)
}

/// The round trip from remote host `p`: `headroom remote rtt --json` run there over ssh. What
/// fails (ssh, an old headroom there) is recorded as unknown with the reason.
pub fn measure_from(p: &HostProfile, store: &str) -> ArtifactRtt {
    let unknown = |why: String| ArtifactRtt {
        target: store.to_owned(),
        from: p.name.clone(),
        samples_ms: Vec::new(),
        median_ms: None,
        error: Some(why),
    };
    let mut cmd = match headroom_core::remote::check::ssh_command(p, Duration::from_secs(10)) {
        Ok(c) => c,
        Err(e) => return unknown(e.to_string()),
    };
    let hr = headroom_core::remote::check::remote_headroom(p);
    let q = headroom_core::remote::check::sh_quote;
    cmd.arg(&p.name).arg("--").arg(format!(
        "{} remote rtt --json --from-name {} {}",
        q(&hr),
        q(&p.name),
        q(store)
    ));
    let out = match headroom_probe::child::run_captured(&mut cmd, Duration::from_secs(60)) {
        Ok(o) => o,
        Err(_) => return unknown(format!("ssh to {} did not answer within 60 s", p.name)),
    };
    let (status, stdout, stderr) = out;
    if !status.success() {
        let last = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return unknown(format!("measuring on {} failed: {}", p.name, last.trim()));
    }
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| unknown(format!("{} answered something unreadable ({e})", p.name)))
}
