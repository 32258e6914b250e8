import { describe, expect, it } from "vitest";

import { mount } from "../src/app";
import type { RunRecord } from "../src/backend";
import { mockBackend } from "../src/backend/mock";
import { h200Report } from "./fixtures";

const flush = () => new Promise((r) => setTimeout(r, 0));

describe("popover", () => {
  it("opens on the overview with readiness checked, switches tabs, follows the tray's navigate, lists runs", async () => {
    const run = {
      id: 3, kind: "sweep", started_at: "2026-11-30T11:48:49Z", finished_at: null, status: "complete", host: "h",
      device: "cpu", device_name: "AMD EPYC", workload: "mlp", dtype: "f32", mode: "train", libtorch: "2.11.0",
      git_commit: null, git_dirty: null, budget_bytes: null, chosen_batch: 64, peak_bytes: 2 ** 27, fallback: false,
      points: 7, summary: null, note: null,
    } as unknown as RunRecord;
    const b = mockBackend({ report: h200Report(), runs: [run] });
    const root = document.createElement("div");
    const app = mount(root, b);
    await flush();
    const visible = () =>
      Array.from(root.querySelectorAll<HTMLElement>("main > .panel")).filter((p) => !p.hidden).map((p) => p.className);
    expect(visible()).toEqual(["panel overview"]);
    expect(b.calls).toContain("readiness");
    expect(b.calls).toContain("overview");
    b.navigate("sweep");
    expect(visible()).toEqual(["panel sweep"]);
    app.show("runs");
    await flush();
    const rows = root.querySelectorAll('[data-testid="run-row"]');
    expect(rows).toHaveLength(1);
    expect(rows[0].textContent).toContain("mlp · cpu");
    (rows[0].querySelectorAll("td")[1] as HTMLElement).click();
    await flush();
    expect(b.calls).toContain("runReport 3");
  });

  it("shows About from the header button and the tray, with the worker's libtorch and errors said plainly", async () => {
    const about = {
      version: "0.1.0", commit: "0123abcd4567", worker: "/usr/bin/headroom",
      worker_version: "headroom 0.1.0 (commit 0123abcd4567, libtorch 2.11.0)", libtorch: "2.11.0", worker_error: null,
    };
    const b = mockBackend({ report: h200Report(), about });
    const root = document.createElement("div");
    mount(root, b);
    await flush();
    const tabs = Array.from(root.querySelectorAll(".tabs button")).map((x) => x.textContent);
    expect(tabs).not.toContain("About");
    root.querySelector<HTMLElement>('[data-testid="tab-about"]')!.click();
    await flush();
    const panel = root.querySelector<HTMLElement>('[data-testid="panel-about"]')!;
    expect(panel.hidden).toBe(false);
    const cell = (id: string) => panel.querySelector(`[data-testid="${id}"]`)?.textContent;
    expect(cell("about-version")).toBe("0.1.0");
    expect(cell("about-commit")).toBe("0123abcd4567");
    expect(cell("about-libtorch")).toBe("2.11.0");
    expect(cell("about-worker")).toBe("/usr/bin/headroom");
    b.navigate("overview");
    expect(panel.hidden).toBe(true);
    b.navigate("about");
    expect(panel.hidden).toBe(false);

    const broken = mockBackend({
      report: h200Report(),
      about: { ...about, worker: null, worker_version: null, libtorch: null, worker_error: "cannot find the `headroom` binary" },
    });
    const root2 = document.createElement("div");
    mount(root2, broken).show("about");
    await flush();
    expect(root2.querySelector('[data-testid="about-libtorch"]')?.textContent).toBe("unknown");
    const status = root2.querySelector<HTMLElement>('[data-testid="about-status"]')!;
    expect(status.textContent).toContain("cannot find the `headroom` binary");
    expect(status.classList.contains("error")).toBe(true);
  });
});
