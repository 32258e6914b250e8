import { describe, expect, it } from "vitest";

import { mockBackend } from "../src/backend/mock";
import { overviewPanel } from "../src/panels/overview";
import { h200Overview } from "./fixtures";

const flush = () => new Promise((r) => setTimeout(r, 0));

describe("overview", () => {
  it("draws the H200's real decision: CPU recommended, the Apple columns blocked, memory by group", async () => {
    const b = mockBackend({ overview: h200Overview() });
    const p = overviewPanel(b);
    await p.load();
    const head = p.root.querySelector<HTMLElement>('[data-testid="verdict-headline"]');
    expect(head?.dataset.verdict).toBe("cpu");
    const status = (c: string) => p.root.querySelector<HTMLElement>(`[data-testid="column-${c}"]`)?.dataset.status;
    expect([status("cpu"), status("mps"), status("mlx"), status("remote")]).toEqual([
      "recommended",
      "blocked",
      "blocked",
      "blocked",
    ]);
    expect(p.root.querySelector('[data-testid="column-remote"]')?.textContent).toContain("headroom remote add");
    const other = p.root.querySelector('[data-testid="group-other"]');
    expect(other?.textContent).toMatch(/^Other \d/);
    expect(p.root.querySelector('[data-testid="contention-banner"]')).toBeNull();
    const seg = p.root.querySelector<HTMLElement>('[data-testid="memory-bar"] .seg-other');
    expect(Number.parseFloat(seg?.style.width ?? "0")).toBeGreaterThan(0);
  });

  it("shows Headroom's own footprint as its own group in the memory bar", async () => {
    const snap = h200Overview();
    snap.contention.groups.push({
      group: "headroom",
      bytes: 150 * 2 ** 20,
      processes: 3,
      apps: [{ name: "Headroom", bytes: 150 * 2 ** 20, processes: 3 }],
    });
    const p = overviewPanel(mockBackend({ overview: snap }));
    await p.load();
    expect(p.root.querySelector('[data-testid="group-headroom"]')?.textContent).toBe("Headroom 150.0 MiB");
    const seg = p.root.querySelector<HTMLElement>('[data-testid="memory-bar"] .seg-headroom');
    expect(seg?.title).toBe("Headroom 150.0 MiB");
  });

  it("follows the background loop: contention raised shows the banner and the remote verdict", async () => {
    const b = mockBackend({ overview: h200Overview() });
    const p = overviewPanel(b);
    await p.load();
    const next = h200Overview();
    next.contention.raised = true;
    next.contention.reasons = ["conferencing and IDEs hold 10.0 GiB (31 % of 32.0 GiB RAM; threshold 25 %)"];
    next.decision.verdict = "remote";
    next.decision.headline = "Remote: memory contention (add a host: `headroom remote add`)";
    next.decision.symptoms = [
      { rule: "contention", symptom: "the call and the IDE eat the memory training needs", hypothesis: "memory contention, not the model", action: "close the call or the IDE, or move the run to the remote host", observe: "`headroom contention`" },
    ];
    b.pushOverview(next);
    await flush();
    expect(p.root.querySelector<HTMLElement>('[data-testid="verdict-headline"]')?.dataset.verdict).toBe("remote");
    expect(p.root.querySelector('[data-testid="contention-banner"]')?.textContent).toContain("31 % of 32.0 GiB");
    const rows = p.root.querySelectorAll('[data-testid="symptom-row"]');
    expect(rows).toHaveLength(1);
    expect(rows[0].textContent).toContain("move the run to the remote host");
  });

  it("says why when there is no decision", async () => {
    const p = overviewPanel(mockBackend({}));
    await p.load();
    const s = p.root.querySelector<HTMLElement>('[data-testid="overview-status"]');
    expect(s?.textContent).toBe("cannot decide: no overview in this mock");
    expect(s?.dataset.state).toBe("error");
  });
});
