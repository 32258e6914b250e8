import { describe, expect, it } from "vitest";

import type { RunRecord } from "../src/backend";
import { mockBackend } from "../src/backend/mock";
import { matches, runsPanel, what } from "../src/panels/runs";

const flush = () => new Promise((r) => setTimeout(r, 0));

function run(id: number, over: Partial<RunRecord>): RunRecord {
  return {
    id, kind: "sweep", started_at: "2026-11-30T11:48:49Z", finished_at: null, status: "complete", host: "laptop",
    device: "cpu", device_name: "AMD EPYC", workload: "mlp", dtype: "f32", mode: "train", libtorch: "2.11.0",
    git_commit: null, git_dirty: null, budget_bytes: null, chosen_batch: 64, peak_bytes: 2 ** 27, fallback: false,
    points: 3, summary: null, note: null, ...over,
  } as RunRecord;
}

const runs = [
  run(5, { host: "gpu-mac", device: "mps" }),
  run(4, {}),
  run(3, { kind: "epochs", workload: "cnn", points: 0, note: "stable" }),
  run(2, { kind: "run", workload: "python -c\nprint(1)", device: "process", note: null, points: 0 }),
];

function ids(root: HTMLElement): string[] {
  return Array.from(root.querySelectorAll<HTMLElement>('[data-testid="run-row"]')).map((r) => r.dataset.runId ?? "");
}

describe("ledger panel", () => {
  it("filters by kind, device and host, with options from the runs", async () => {
    const b = mockBackend({ runs });
    const p = runsPanel(b);
    await p.load();
    expect(ids(p.root)).toEqual(["5", "4", "3", "2"]);
    const host = p.root.querySelector<HTMLSelectElement>('[data-testid="filter-host"]')!;
    expect(Array.from(host.options).map((o) => o.value)).toEqual(["", "gpu-mac", "laptop"]);
    host.value = "gpu-mac";
    host.dispatchEvent(new Event("change"));
    expect(ids(p.root)).toEqual(["5"]);
    host.value = "";
    host.dispatchEvent(new Event("change"));
    const kind = p.root.querySelector<HTMLSelectElement>('[data-testid="filter-kind"]')!;
    kind.value = "sweep";
    kind.dispatchEvent(new Event("change"));
    expect(ids(p.root)).toEqual(["5", "4"]);
    expect(p.root.querySelector('[data-testid="ledger-status"]')!.textContent).toContain("2 of 4");
    // A command line with newlines is one short line in the table and no workload option.
    const workload = p.root.querySelector<HTMLSelectElement>('[data-testid="filter-workload"]')!;
    expect(Array.from(workload.options).map((o) => o.value)).toEqual(["", "cnn", "mlp"]);
    expect(what(runs[3])).toBe("run: process");
    expect(matches(runs[0], { kind: "", workload: "mlp", device: "mps", host: "" })).toBe(true);
    expect(matches(runs[0], { kind: "epochs", workload: "", device: "", host: "" })).toBe(false);
  });

  it("opens a report, compares two picked runs, exports what is picked", async () => {
    const b = mockBackend({
      runs,
      comparison: { lines: ["run 4 vs run 5", "  threads: 2 vs 8"], chart_svg: "<svg xmlns='http://www.w3.org/2000/svg'></svg>" },
    });
    const p = runsPanel(b);
    await p.load();
    const rows = () => p.root.querySelectorAll<HTMLElement>('[data-testid="run-row"]');
    const compare = p.root.querySelector<HTMLButtonElement>('[data-testid="ledger-compare"]')!;
    const exportBtn = p.root.querySelector<HTMLButtonElement>('[data-testid="ledger-export"]')!;
    expect(compare.disabled).toBe(true);
    expect(exportBtn.disabled).toBe(true);
    // A click on the row (not its box) opens the run's report.
    rows()[1].querySelectorAll("td")[2].click();
    await flush();
    expect(b.calls).toContain("runReport 4");
    const detail = p.root.querySelector('[data-testid="ledger-detail"]')!;
    expect(detail.textContent).toContain("run 4: sweep of mlp on cpu");
    expect(detail.querySelectorAll('[data-testid="report-chart"]')).toHaveLength(1);
    expect(detail.querySelector('[data-testid="report-facts"]')!.textContent).toContain("libtorch2.11.0");
    // Two ticks → compare.
    for (const i of [0, 1]) rows()[i].querySelector<HTMLInputElement>('[data-testid="run-tick"]')!.click();
    expect(compare.disabled).toBe(false);
    compare.click();
    await flush();
    expect(b.calls).toContain("compareRuns 4 5");
    expect(detail.querySelector('[data-testid="compare-lines"]')!.textContent).toContain("threads: 2 vs 8");
    expect(detail.querySelector('[data-testid="compare-chart"]')).not.toBeNull();
    // Export the picked runs as PNG.
    const format = p.root.querySelector<HTMLSelectElement>('[data-testid="export-format"]')!;
    format.value = "png";
    exportBtn.click();
    await flush();
    expect(b.calls).toContain("exportRuns 4,5 png");
    expect(detail.querySelector('[data-testid="export-files"]')!.textContent).toContain("/reports/run-5.png");
    // A third tick disables compare again.
    rows()[2].querySelector<HTMLInputElement>('[data-testid="run-tick"]')!.click();
    expect(compare.disabled).toBe(true);
  });
});
