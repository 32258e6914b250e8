import { describe, expect, it } from "vitest";

import { mockBackend } from "../src/backend/mock";
import { pythonState, readinessPanel, renderReport } from "../src/panels/readiness";
import { h200Report } from "./fixtures";

const q = (root: HTMLElement, id: string) => Array.from(root.querySelectorAll<HTMLElement>(`[data-testid="${id}"]`));

describe("readiness panel", () => {
  it("draws a light per backend with its reason, from a real report", () => {
    const report = h200Report();
    const root = document.createElement("div");
    renderReport(root, report);
    const states = Object.fromEntries(report.lights.map((l) => [l.backend, l.state]));
    expect(states).toMatchObject({ cpu: "green", mps: "off", cuda: "green" });
    const cuda = root.querySelector<HTMLElement>('[data-testid="light-cuda"]');
    expect(cuda?.dataset.state).toBe("green");
    expect(cuda?.textContent).toContain("NVIDIA H200");
    expect(q(root, "python-row")).toHaveLength(report.pythons.length);
    // The system Python there has no torch: a yellow dot and "no torch".
    const bare = q(root, "python-row").find((r) => r.textContent?.includes("/usr/bin/python3"));
    expect(bare?.dataset.state).toBe("yellow");
    expect(bare?.textContent).toContain("no torch");
    // Those that can train come first; the others are one folded line.
    const withTorch = report.pythons.filter((p) => p.facts?.torch).length;
    const rows = q(root, "python-row");
    expect(rows.slice(0, withTorch).every((r) => !r.textContent?.includes("no torch"))).toBe(true);
    const fold = root.querySelector<HTMLDetailsElement>('[data-testid="pythons-without-torch"]');
    expect(fold?.open).toBe(false);
    expect(fold?.querySelector("summary")?.textContent).toBe(`${report.pythons.length - withTorch} more without torch`);
  });

  it("a red light shows its fix", () => {
    const report = h200Report();
    report.lights = report.lights.map((l) =>
      l.backend === "cuda" ? { ...l, state: "red", reason: "libtorch sees no CUDA device", fix: "check nvidia-smi" } : l,
    );
    const root = document.createElement("div");
    renderReport(root, report);
    const cuda = root.querySelector<HTMLElement>('[data-testid="light-cuda"]');
    expect(cuda?.dataset.state).toBe("red");
    expect(cuda?.querySelector(".light-fix")?.textContent).toBe("Fix: check nvidia-smi");
  });

  it("interpreters that failed are red, missing ones yellow", () => {
    const p = h200Report().pythons[0];
    expect(pythonState(p)).toBe("green");
    expect(pythonState({ ...p, status: "timed_out", facts: null })).toBe("red");
    expect(pythonState({ ...p, status: "not_found", facts: null })).toBe("yellow");
  });

  it("runs doctor when there is no report yet, and says why it failed", async () => {
    const ok = mockBackend({ report: h200Report() });
    const panel = readinessPanel(ok);
    await panel.load(false);
    expect(ok.calls).toEqual(["lastReadiness", "readiness"]);
    expect(q(panel.root, "readiness-status")[0].textContent).toMatch(/checked in/);
    await panel.load(false);
    expect(ok.calls.slice(2)).toEqual(["lastReadiness"]);

    const bad = mockBackend({ readinessError: { code: "worker", message: "cannot find the `headroom` binary" } });
    const failing = readinessPanel(bad);
    await failing.load(true);
    expect(q(failing.root, "readiness-status")[0].textContent).toContain("cannot find the `headroom` binary");
  });
});
