// Test data: a real doctor report captured on the H200 machine, and sweep points shaped as the
// worker sends them.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";

import type { ContentionReport, Decision, OverviewSnapshot, Point, Report, SweepSnapshot } from "../src/backend";

export function h200Report(): Report {
  // vitest runs in ui/.
  const path = resolve(process.cwd(), "../bench/results/doctor_h200.json");
  return JSON.parse(readFileSync(path, "utf8")) as Report;
}

export function point(batch: number, sps: number | null, peak: number | null, status: Point["status"] = "ok"): Point {
  return {
    batch,
    status,
    message: status === "ok" ? null : "out of memory",
    samples_per_s: sps,
    step_ms_p50: sps ? (batch / sps) * 1000 : null,
    step_ms_p95: sps ? (batch / sps) * 1100 : null,
    data_ms: null,
    forward_ms: null,
    backward_ms: null,
    peak_bytes: peak,
    peak_reserved_bytes: peak,
    peak_process_bytes: null,
    predicted_peak_bytes: null,
    steps: 10,
    warmup_steps: 3,
    flops_per_s: null,
    seconds: 1.5,
  } as unknown as Point;
}

export function snapshot(over: Partial<SweepSnapshot>): SweepSnapshot {
  return {
    running: true,
    run_id: 7,
    workload: "mlp",
    device: "cpu",
    host: null,
    device_name: "AMD EPYC",
    budget_bytes: 2 ** 33,
    message: "batch 4: timed steps 3/10",
    points: [],
    summary: null,
    status: "running",
    error: null,
    chart_svg: "<svg xmlns='http://www.w3.org/2000/svg'><text>chart</text></svg>",
    comparison: null,
    warnings: [],
    ...over,
  };
}

/** The decision table `headroom decide --json` printed on the H200 machine, as the app's
 * background loop would send it. */
export function h200Overview(): OverviewSnapshot {
  const path = resolve(process.cwd(), "../bench/results/decide_h200.json");
  const d = JSON.parse(readFileSync(path, "utf8")) as { decision: Decision; contention: ContentionReport };
  return { project: null, decision: d.decision, contention: d.contention, taken_at: "2026-11-30T14:42:07Z", problem: null, interval_s: 5 };
}
