//! The verdict and the decision: the rules applied in order to the facts under the thresholds,
//! the most pressing verdict with its headline, each column's standing, and the symptoms the
//! reasons point to.

use headroom_model::settings::{DecideThresholds, WorkloadKind};

use crate::board::{idx, standing, Board, Measured};
use crate::facts::Facts;
use crate::rules::{
    availability, contention, energy, memory_and_signs, mlx_against_torch, numerics, practices,
    speed, your_run,
};
use crate::table::{Column, ColumnVerdict, Decision, Status, SYMPTOMS};

/// The verdict, most pressing first, and its headline.
pub(crate) fn verdict(f: &Facts, b: &Board, m: &Measured) -> (Option<Column>, String) {
    let wants_remote = m.leak_persists || f.cuda_parity_required || !f.contention.is_empty();
    if f.rosetta {
        (None, "Fix Python first: it runs under Rosetta".to_owned())
    } else if wants_remote {
        let why = if f.cuda_parity_required {
            "CUDA parity is required"
        } else if m.leak_persists {
            "the leak persists with release"
        } else {
            "memory contention"
        };
        let tail = if m.remote_ok {
            ""
        } else if f.remotes.is_empty() {
            " (add a host: `headroom remote add`)"
        } else {
            " (its host did not answer)"
        };
        (Some(Column::Remote), format!("Remote: {why}{tail}"))
    } else if f.workload_kind == WorkloadKind::LlmInference && b.usable(Column::Mlx) {
        (
            Some(Column::Mlx),
            "MLX: LLM inference is the main job".to_owned(),
        )
    } else if m.mlx_wins && b.usable(Column::Mlx) {
        (
            Some(Column::Mlx),
            "MLX: measured faster than torch for this workload".to_owned(),
        )
    } else if b.usable(Column::Mps) && m.accel_wins != Some(false) {
        let head = if m.accel_wins == Some(true) {
            "MPS: measured faster than the CPU"
        } else if m.too_close {
            "MPS, too close to call: its lead over the CPU is within the measured noise"
        } else {
            "MPS, unmeasured: run `headroom sweep --device mps --compare cpu`"
        };
        (Some(Column::Mps), head.to_owned())
    } else if let Some((r, d)) = f
        .run
        .as_ref()
        .and_then(|r| Some((r, r.device.as_deref().filter(|d| d.starts_with("cuda"))?)))
        .filter(|_| m.accel_wins != Some(false))
    {
        // No column names CUDA: the user's run measured it, so it is not put below the CPU.
        let speed = r
            .samples_per_s
            .map(|s| format!(" at {} samples/s", headroom_model::stats::sig3(s)))
            .unwrap_or_default();
        (
            None,
            format!(
                "CUDA: your newest run (run {}) trained on {d}{speed}; keep it there (the MPS and MLX columns are for Apple Silicon)",
                r.run_id
            ),
        )
    } else {
        let head = if m.accel_wins == Some(false) {
            "CPU: the accelerator is not faster enough to pay off"
        } else {
            "CPU: no MPS or MLX on this machine"
        };
        (Some(Column::Cpu), head.to_owned())
    }
}

/// The decision: every rule applied to the facts under the thresholds, each column's standing,
/// the verdict and its headline, and the symptoms the reasons point to.
pub fn decide(f: &Facts, t: &DecideThresholds) -> Decision {
    let mut b = Board {
        reasons: Vec::new(),
        status: [Status::Viable; 4],
    };
    let remote_ok = availability(f, &mut b);
    let (accel_wins, too_close) = speed(f, t, &mut b);
    // The user's own run, and what pairs of its runs measured.
    if let Some(r) = &f.run {
        your_run(r, f.ram_total.zip(f.ram_available), t, &mut b);
    }
    practices(f, t, &mut b);
    let leak_persists = memory_and_signs(f, t, &mut b);
    let mlx_wins = mlx_against_torch(f, t, &mut b);
    energy(f, &mut b);
    numerics(f, &mut b);
    contention(f, &mut b);
    let m = Measured {
        remote_ok,
        accel_wins,
        too_close,
        leak_persists,
        mlx_wins,
    };
    let (verdict, headline) = verdict(f, &b, &m);
    if let Some(v) = verdict {
        b.status[idx(v)] = match b.status[idx(v)] {
            Status::Viable | Status::Risky => Status::Recommended,
            s => s,
        };
    }
    let columns = Column::ALL
        .iter()
        .map(|c| {
            let (strengths, risks) = standing(*c);
            ColumnVerdict {
                column: *c,
                status: b.status[idx(*c)],
                strengths,
                risks,
                reasons: b
                    .reasons
                    .iter()
                    .filter(|r| r.column == *c)
                    .cloned()
                    .collect(),
            }
        })
        .collect();
    let symptoms = SYMPTOMS
        .iter()
        .filter(|s| b.reasons.iter().any(|r| r.rule == s.rule))
        .copied()
        .collect();
    Decision {
        verdict,
        headline,
        columns,
        reasons: b.reasons,
        symptoms,
    }
}
