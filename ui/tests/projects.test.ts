import { describe, expect, it } from "vitest";

import { mount } from "../src/app";
import type { MemorySnapshot } from "../src/backend";
import { mockBackend } from "../src/backend/mock";
import { splitCommand, torchPythons } from "../src/panels/projects";
import { h200Report, point, snapshot } from "./fixtures";

const get = <T extends HTMLElement>(root: HTMLElement, id: string) =>
  root.querySelector<T>(`[data-testid="${id}"]`) as T;
const flush = () => new Promise((r) => setTimeout(r, 0));
const visible = (root: HTMLElement) =>
  Array.from(root.querySelectorAll<HTMLElement>("main > .panel")).filter((p) => !p.hidden).map((p) => p.className);

function addProject(root: HTMLElement, name: string, command: string): void {
  const form = get<HTMLDetailsElement>(root, "add-project-form");
  form.open = true;
  form.dispatchEvent(new Event("toggle"));
  get<HTMLInputElement>(root, "project-name").value = name;
  get<HTMLInputElement>(root, "project-dir").value = `/tmp/${name}`;
  get<HTMLInputElement>(root, "project-command").value = command;
  get<HTMLButtonElement>(root, "add-project").click();
}

describe("the project bar", () => {
  it("splits a command line like a shell would, quotes grouping", () => {
    expect(splitCommand(`python train.py --batch-size {batch}`)).toEqual(["python", "train.py", "--batch-size", "{batch}"]);
    expect(splitCommand(`python -c "print('a b')"  --x ''`)).toEqual(["python", "-c", "print('a b')", "--x", ""]);
  });

  it("offers the interpreters doctor found with torch as the project's Python", async () => {
    const report = h200Report();
    const withTorch = torchPythons(report);
    expect(withTorch.length).toBeGreaterThan(0);
    expect(withTorch.every((p) => p.facts?.torch)).toBe(true);
    const b = mockBackend({ report });
    const root = document.createElement("div");
    mount(root, b);
    await flush();
    await flush();
    const form = get<HTMLDetailsElement>(root, "add-project-form");
    form.open = true;
    form.dispatchEvent(new Event("toggle"));
    await flush();
    await flush();
    const pick = get<HTMLSelectElement>(root, "project-python-pick");
    const values = [...pick.options].map((o) => o.value);
    expect(values.slice(0, -1)).toEqual(withTorch.map((p) => p.path));
    expect(pick.options[0].textContent).toContain("torch 2.11.0");
    expect(pick.options[0].textContent).toContain("CUDA");
    get<HTMLInputElement>(root, "project-name").value = "resnet";
    get<HTMLInputElement>(root, "project-dir").value = "/tmp/resnet";
    get<HTMLInputElement>(root, "project-command").value = "python train.py --bs {batch}";
    get<HTMLButtonElement>(root, "add-project").click();
    await flush();
    const added = await b.listProjects();
    expect(added[0].python).toBe(withTorch[0].path);
    // "Other…" takes the typed path.
    pick.value = "__other__";
    pick.dispatchEvent(new Event("change"));
    expect(get<HTMLInputElement>(root, "project-python").parentElement!.hidden).toBe(false);
  });

  it("opens on the project picked before a page made again, not on the first", async () => {
    const project = (name: string) => ({ name, dir: `/tmp/${name}`, python: null, command: ["python", "train.py", "{batch}"] });
    const b = mockBackend({ projects: [project("cifar"), project("lm")], selectedProject: "lm" });
    const root = document.createElement("div");
    mount(root, b);
    await flush();
    await flush();
    expect(get<HTMLSelectElement>(root, "project-picker").value).toBe("lm");
    expect(b.calls).toContain("selectProject:lm");
    // One the app no longer has (removed meanwhile): the first.
    const gone = mockBackend({ projects: [project("cifar"), project("lm")], selectedProject: "old" });
    const again = document.createElement("div");
    mount(again, gone);
    await flush();
    await flush();
    expect(get<HTMLSelectElement>(again, "project-picker").value).toBe("cifar");
  });

  it("sweeps, compares and watches the picked project, each in its panel, with Cancel and Stop", async () => {
    const b = mockBackend({});
    const root = document.createElement("div");
    document.body.append(root);
    mount(root, b);
    await flush();
    expect(get<HTMLButtonElement>(root, "sweep-my-training").disabled).toBe(true);
    expect(get(root, "project-status").textContent).toContain("No project yet");
    // Nothing to pick or run yet: only the add form shows.
    expect(get(root, "project-picker").closest<HTMLElement>(".project-label")!.hidden).toBe(true);
    expect(get(root, "sweep-my-training").parentElement!.hidden).toBe(true);
    addProject(root, "mlp", "python train.py --batch-size {batch} --device {device}");
    await flush();
    await flush();
    expect(get(root, "project-picker").closest<HTMLElement>(".project-label")!.hidden).toBe(false);
    expect(get(root, "sweep-my-training").parentElement!.hidden).toBe(false);
    expect(b.calls).toContain("addProject");
    expect(b.calls).toContain("selectProject:mlp");
    expect(get<HTMLSelectElement>(root, "project-picker").value).toBe("mlp");

    get<HTMLButtonElement>(root, "sweep-my-training").click();
    await flush();
    expect(visible(root)).toEqual(["panel sweep"]);
    expect(b.calls).toContain("sweepProject:mlp");
    expect(get<HTMLButtonElement>(root, "sweep-my-training").disabled).toBe(true);
    b.push(snapshot({ points: [point(16, 900, 2 ** 20)] }));
    expect(root.querySelectorAll('[data-testid="sweep-point"]')).toHaveLength(1);
    expect(get<HTMLButtonElement>(root, "cancel-my-training").disabled).toBe(false);
    get<HTMLButtonElement>(root, "cancel-my-training").click();
    expect(b.calls).toContain("cancelSweep");
    b.push(snapshot({ running: false, status: "complete" }));
    expect(get<HTMLButtonElement>(root, "compare-with-cpu").disabled).toBe(false);
    expect(get(root, "project-status").textContent).toContain("python train.py --batch-size {batch}");
    expect(get(root, "project-status").dataset.state).toBe("");

    // Compare: the devices typed (empty: this machine's pair), and the speed-up shown.
    get<HTMLInputElement>(root, "project-compare-devices").value = "cpu@1,cpu@2";
    get<HTMLButtonElement>(root, "compare-with-cpu").click();
    await flush();
    expect(b.calls).toContain("sweepProject:mlp:cpu@1,cpu@2");
    b.push(
      snapshot({
        running: false,
        status: "complete",
        comparison: {
          batch: 64, device: "cpu@2", device_step_ms: 40, cpu_step_ms: 70, speedup: 1.75, faster: 0.43, cpu_run_id: 12,
          text: "40.0 ms per step on cpu@2 against 70.0 ms on the CPU at batch 64: 1.75× the speed",
        },
      }),
    );
    const speed = get(root, "sweep-speedup");
    expect(speed.hidden).toBe(false);
    // The core's sentence as it is, and the CPU run it compares with.
    expect(speed.textContent).toBe(
      "Speed-up: 40.0 ms per step on cpu@2 against 70.0 ms on the CPU at batch 64: 1.75× the speed (CPU run 12)",
    );

    // Watch: the Memory panel, the batch typed, Stop.
    get<HTMLInputElement>(root, "project-watch-batch").value = "x";
    get<HTMLButtonElement>(root, "watch-my-training").click();
    expect(get(root, "project-status").dataset.state).toBe("error");
    get<HTMLInputElement>(root, "project-watch-batch").value = "32";
    get<HTMLButtonElement>(root, "watch-my-training").click();
    await flush();
    expect(visible(root)).toEqual(["panel memory"]);
    expect(b.calls).toContain("watchProject:mlp:32::");
    expect(get<HTMLButtonElement>(root, "watch-my-training").disabled).toBe(true);
    const live: MemorySnapshot = {
      running: true, kind: "run", title: "mlp: python train.py", run_id: 9, joules_per_sample: [], readings: [], verdict: null, growth: null,
      crossed: false, message: "12 s · 80 steps · 2 epochs", status: "running", error: null, chart_svg: "", profile: null,
      samples: [1, 2].map((epoch) => ({ epoch, live_bytes: null, cache_bytes: null, footprint_bytes: epoch * 2 ** 28, seconds: 5, samples_per_s: 600 })),
    };
    b.pushMemory(live);
    expect(root.querySelectorAll('[data-testid="memory-row"]')).toHaveLength(2);
    expect(get(root, "memory-status").textContent).toContain("80 steps");
    get<HTMLButtonElement>(root, "stop-memory").click();
    expect(b.calls).toContain("stopMemory");
    b.pushMemory({ ...live, running: false, status: "interrupted", verdict: { kind: "too_short", reason: "2 epochs", growth: null, trend: null } as unknown as MemorySnapshot["verdict"] });
    expect(get<HTMLButtonElement>(root, "watch-my-training").disabled).toBe(false);
    // With the release at each epoch end: the runbook's step 4 on the user's own script.
    get<HTMLSelectElement>(root, "project-watch-release").value = "both";
    get<HTMLButtonElement>(root, "watch-my-training").click();
    await flush();
    expect(b.calls).toContain("watchProject:mlp:32::both");
    // With a profiler window: a count, checked before anything runs.
    b.pushMemory({ ...live, running: false, status: "complete" });
    get<HTMLInputElement>(root, "project-watch-profile").value = "0";
    get<HTMLButtonElement>(root, "watch-my-training").click();
    expect(get(root, "project-status").dataset.state).toBe("error");
    expect(get(root, "project-status").textContent).toContain("iterations to profile");
    get<HTMLInputElement>(root, "project-watch-profile").value = "20";
    get<HTMLButtonElement>(root, "watch-my-training").click();
    await flush();
    expect(b.calls).toContain("watchProject:mlp:32::both:profile 20");
    // Check numerics: the model in bf16 against a CPU copy; the Memory panel opens on its
    // verdict and the tensors past the tolerance, marked.
    b.pushMemory({ ...live, running: false, status: "complete" });
    get<HTMLInputElement>(root, "project-watch-profile").value = "";
    get<HTMLSelectElement>(root, "project-watch-release").value = "none";
    get<HTMLSelectElement>(root, "project-numerics").value = "bf16";
    get<HTMLButtonElement>(root, "watch-my-training").click();
    await flush();
    expect(b.calls).toContain("watchProject:mlp:32:::numerics bf16");
    expect(get(root, "project-status").textContent).toContain("numerics (bf16 against a CPU copy)");
    const verdict = "numerics: layer `fc2` on cpu bf16 differs from cpu f32 by 1.20 % (tolerance 1.0e-3) — the first of 1 layers past it; check before you trust these numbers";
    b.pushMemory({
      ...live,
      running: false,
      status: "complete",
      numerics: {
        verdict,
        within: false,
        rows: [
          { name: "fc2", what: "layer", rel: "0.0120", abs: "0.0310", over: true },
          { name: "fc1", what: "layer", rel: "8.0e-4", abs: "2.1e-3", over: false },
        ],
      },
    });
    const box = get(root, "memory-numerics");
    expect(box.hidden).toBe(false);
    expect(get(root, "memory-numerics-verdict").textContent).toBe(verdict);
    expect(get(root, "memory-numerics-verdict").dataset.state).toBe("stopped");
    const rows = root.querySelectorAll<HTMLElement>('[data-testid="memory-numerics-row"]');
    expect([...rows].map((r) => [r.textContent, r.className])).toEqual([
      ["fc2layer0.01200.0310", "failed"],
      ["fc1layer8.0e-42.1e-3", ""],
    ]);
    // A run without a check shows none.
    b.pushMemory({ ...live, running: false, status: "complete" });
    expect(get(root, "memory-numerics").hidden).toBe(true);
    root.remove();
  });

  it("fills the folder (and a fresh form's name) from the folder chooser, and keeps both when it is cancelled", async () => {
    const b = mockBackend({ report: h200Report(), pickedFolder: "/home/you/code/resnet-cifar" });
    const root = document.createElement("div");
    mount(root, b);
    await flush();
    const form = get<HTMLDetailsElement>(root, "add-project-form");
    form.open = true;
    form.dispatchEvent(new Event("toggle"));
    get<HTMLButtonElement>(root, "choose-project-dir").click();
    await flush();
    expect(b.calls).toContain("pickFolder ");
    expect(get<HTMLInputElement>(root, "project-dir").value).toBe("/home/you/code/resnet-cifar");
    expect(get<HTMLInputElement>(root, "project-name").value).toBe("resnet-cifar");

    const cancelled = mockBackend({ report: h200Report(), pickedFolder: null });
    const other = document.createElement("div");
    mount(other, cancelled);
    await flush();
    get<HTMLInputElement>(other, "project-dir").value = "/tmp/typed";
    get<HTMLButtonElement>(other, "choose-project-dir").click();
    await flush();
    expect(cancelled.calls).toContain("pickFolder /tmp/typed");
    expect(get<HTMLInputElement>(other, "project-dir").value).toBe("/tmp/typed");
    expect(get<HTMLInputElement>(other, "project-name").value).toBe("");
  });
});
