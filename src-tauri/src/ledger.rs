//! The Ledger panel's commands: a run's report (its facts and pictures, as `ledger export`
//! writes them), exports into Headroom's folder, and two runs compared (as `ledger compare`).

use headroom_core::jobs;
use headroom_report::report::{self, Format};
use serde::{Deserialize, Serialize};

use crate::error::{AppError, ErrorCode};
use crate::util::blocking;

/// Chart sizes in the popover (CSS pixels), as the Sweep and Memory panels draw theirs.
const CHART: (u32, u32) = (360, 420);
const MEMORY_CHART: (u32, u32) = (360, 300);

/// One fact of a run: "power" → "battery".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Fact {
    pub label: String,
    pub value: String,
}

/// A run's report for the panel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunReport {
    pub run_id: i64,
    pub title: String,
    pub facts: Vec<Fact>,
    /// The run's pictures as SVG: throughput and memory against batch, memory per epoch.
    pub charts: Vec<String>,
    pub recommendation: Option<String>,
}

/// Two runs side by side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Comparison {
    /// `ledger compare`'s lines: figures at common batches, then the facts that differ.
    pub lines: Vec<String>,
    /// Both runs' curves in one picture, when both have points.
    pub chart_svg: Option<String>,
}

/// Builds run `id`'s report from `ledger`.
pub fn build_report(
    ledger: &headroom_store::ledger::Ledger,
    id: i64,
) -> Result<RunReport, AppError> {
    let (r, points) = ledger.get_run(id)?;
    let rec = report::recorded(ledger, id)?;
    let charts = report::charts_at(ledger, &r, &points, CHART, MEMORY_CHART)?;
    Ok(RunReport {
        run_id: id,
        title: format!("run {id}: {} of {} on {}", r.kind, r.workload, r.device),
        facts: report::facts(&r, &rec)
            .into_iter()
            .map(|(label, value)| Fact {
                label: label.to_owned(),
                value,
            })
            .collect(),
        charts: charts.into_iter().map(|c| c.svg).collect(),
        // The answer in one line with its doubt tag, then why.
        recommendation: r.summary.map(|s| match s.headline {
            Some(h) => format!("Recommended {h}: {}", s.reason),
            None => s.reason,
        }),
    })
}

/// Run `run_id`'s report.
#[tauri::command]
pub async fn run_report(run_id: i64) -> Result<RunReport, AppError> {
    blocking(move || build_report(&jobs::open_ledger()?, run_id)).await
}

/// The most runs one export or comparison takes.
const MAX_RUNS: usize = 20;

/// Writes the reports of `run_ids` in `format` (md, html, csv, json, svg, png) into the
/// `reports` folder of Headroom's folder; several runs with points also get their side-by-side
/// picture. Returns the files written.
#[tauri::command]
pub async fn export_runs(run_ids: Vec<i64>, format: String) -> Result<Vec<String>, AppError> {
    if run_ids.is_empty() || run_ids.len() > MAX_RUNS {
        return Err(AppError::new(
            ErrorCode::InvalidInput,
            format!("pick 1 to {MAX_RUNS} runs to export"),
        ));
    }
    let format = Format::parse(&format)?;
    blocking(move || {
        let ledger = jobs::open_ledger()?;
        let dir = headroom_store::paths::data_dir()?.join("reports");
        let mut files = Vec::new();
        for id in &run_ids {
            files.extend(report::export(&ledger, *id, format, &dir)?);
        }
        if run_ids.len() > 1 {
            files.extend(report::export_overlay(&ledger, &run_ids, &dir)?.unwrap_or_default());
        }
        Ok(files.iter().map(|f| f.display().to_string()).collect())
    })
    .await
}

/// Runs `a` and `b` compared.
#[tauri::command]
pub async fn compare_runs(a: i64, b: i64) -> Result<Comparison, AppError> {
    if a == b {
        return Err(AppError::new(
            ErrorCode::InvalidInput,
            "pick two different runs to compare",
        ));
    }
    blocking(move || {
        let ledger = jobs::open_ledger()?;
        let lines = report::compare(&ledger, a, b)?;
        let (ra, pa) = ledger.get_run(a)?;
        let (rb, pb) = ledger.get_run(b)?;
        let chart_svg = if pa.is_empty() && pb.is_empty() {
            // Two runs of a project (here and on a remote host): their figures as bars.
            report::pair_chart_at(&[&ra, &rb], 360)?
        } else if pa.is_empty() || pb.is_empty() {
            None
        } else {
            Some(report::overlay_chart_at(
                &[
                    (report::overlay_label(&ra), a, pa),
                    (report::overlay_label(&rb), b, pb),
                ],
                (360, 460),
            )?)
        };
        Ok(Comparison { lines, chart_svg })
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use headroom_model::protocol::Point;
    use headroom_store::ledger::{Ledger, NewRun};

    #[test]
    fn a_recorded_sweep_reports_its_facts_and_chart() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ledger = Ledger::open(&dir.path().join("l.sqlite3")).expect("ledger");
        let id = ledger
            .begin_run(&NewRun {
                kind: headroom_store::ledger::RunKind::Sweep,
                host: "here".into(),
                device: "cpu".into(),
                device_name: "a CPU".into(),
                workload: "mlp".into(),
                dtype: Some(headroom_model::protocol::Dtype::F32),
                mode: Some(headroom_model::protocol::Mode::Train),
                libtorch: "2.11.0".into(),
                git_commit: None,
                git_dirty: None,
                budget_bytes: Some(1 << 30),
                fallback: Some(false),
                request_json: "{}".into(),
                owner_pid: None,
            })
            .expect("run");
        let mut p = Point::failed(8, headroom_model::protocol::PointStatus::Ok, "");
        p.message = None;
        p.samples_per_s = Some(1000.0);
        p.peak_bytes = Some(200 << 20);
        ledger.add_point(id, 0, &p).expect("point");
        let r = build_report(&ledger, id).expect("report");
        assert_eq!(r.title, format!("run {id}: sweep of mlp on cpu"));
        assert_eq!(r.charts.len(), 1);
        assert!(r.charts[0].contains("samples/s"));
        let fact = |k: &str| {
            r.facts
                .iter()
                .find(|f| f.label == k)
                .map(|f| f.value.clone())
        };
        assert_eq!(fact("libtorch").as_deref(), Some("2.11.0"));
        assert_eq!(fact("data").as_deref(), Some("not named (--data)"));
        assert!(fact("power").is_some(), "conditions are among the facts");
    }
}
