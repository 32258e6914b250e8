//! `headroom decide`: the CPU / MPS / MLX / remote table for this machine now, from what the
//! ledger holds (doctor, sweeps, epochs, wrapped runs), a contention sample and the config.

use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use headroom_decide::Status;
use headroom_probe::contention::Sampler;

#[derive(Debug, Args)]
pub struct DecideArgs {
    /// Print the facts, the contention sample and the decision as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &DecideArgs) -> anyhow::Result<ExitCode> {
    let (now, problem) = headroom_core::jobs::decide_now::now(&mut Sampler::new(), None);
    // The app decides on the defaults beside a broken configuration or ledger; a command fails.
    if let Some(e) = problem {
        return Err(e.into());
    }
    let d = &now.decision;
    if a.json {
        let doc =
            serde_json::json!({ "decision": d, "facts": now.facts, "contention": now.contention });
        println!(
            "{}",
            serde_json::to_string_pretty(&doc).context("cannot encode the decision")?
        );
        return Ok(ExitCode::SUCCESS);
    }
    // The columns and the symptoms first, the verdict last on screen, in one line.
    for c in &d.columns {
        let status = match c.status {
            Status::Recommended => "RECOMMENDED",
            Status::Viable => "viable",
            Status::Risky => "risky",
            Status::Blocked => "blocked",
        };
        println!("{:<7} {status}", c.column.label());
        println!("        + {}", c.strengths.join("; "));
        println!("        - {}", c.risks.join("; "));
        for r in &c.reasons {
            println!("        · {}", r.text);
        }
    }
    if !d.symptoms.is_empty() {
        println!("\nsymptom → hypothesis → action");
        for s in &d.symptoms {
            println!("  {} → {} → {}", s.symptom, s.hypothesis, s.action);
            println!("    observe: {}", s.observe);
        }
    }
    println!("\ndecision: {}", d.headline);
    Ok(ExitCode::SUCCESS)
}
