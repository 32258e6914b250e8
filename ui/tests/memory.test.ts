import { describe, expect, it, vi } from "vitest";

import type { EpochSample, MemorySnapshot } from "../src/backend";
import { mockBackend } from "../src/backend/mock";
import { MAX_EPOCH_ROWS, memoryPanel, verdictText } from "../src/panels/memory";

const get = <T extends HTMLElement>(root: HTMLElement, id: string) =>
  root.querySelector<T>(`[data-testid="${id}"]`) as T;
const flush = () => new Promise((r) => setTimeout(r, 0));

function sample(epoch: number, mib: number): EpochSample {
  return { epoch, live_bytes: null, cache_bytes: null, footprint_bytes: mib * 2 ** 20, seconds: 0.1, samples_per_s: 900 };
}

function snap(over: Partial<MemorySnapshot>): MemorySnapshot {
  return {
    running: true, kind: "epochs", title: "mlp batch 16 on cpu", run_id: 4, samples: [], joules_per_sample: [], readings: [], verdict: null,
    growth: null, crossed: false, message: "epoch 1 of 6", status: "running", error: null,
    chart_svg: "<svg xmlns='http://www.w3.org/2000/svg'></svg>", profile: null, ...over,
  };
}

describe("memory panel", () => {
  it("runs epochs with the leak demo, fills the table and ends with the verdict", async () => {
    const b = mockBackend({});
    const panel = memoryPanel(b);
    document.body.append(panel.root);
    get<HTMLInputElement>(panel.root, "epochs-batch").value = "16";
    get<HTMLInputElement>(panel.root, "epochs-count").value = "6";
    get<HTMLInputElement>(panel.root, "epochs-steps").value = "3";
    get<HTMLInputElement>(panel.root, "epochs-leak-demo").checked = true;
    get<HTMLButtonElement>(panel.root, "run-epochs").click();
    await flush();
    expect(b.epochForms).toEqual([
      { workload: "mlp", device: "auto", batch: 16, epochs: 6, steps_per_epoch: 3, release: "none", leak_demo: true },
    ]);
    b.pushMemory(snap({ samples: [sample(1, 434), sample(2, 492)] }));
    expect(get(panel.root, "memory-table").querySelectorAll('[data-testid="memory-row"]')).toHaveLength(2);
    expect(get(panel.root, "memory-verdict").hidden).toBe(true);
    b.pushMemory(
      snap({
        running: false,
        status: "complete",
        samples: [1, 2, 3, 4, 5, 6].map((e) => sample(e, 434 + 49 * (e - 1))),
        verdict: { kind: "leak_suspected", reason: "process footprint grew +56 % from epoch 1 to 6" } as never,
      }),
    );
    const v = get(panel.root, "memory-verdict");
    expect(v.hidden).toBe(false);
    expect(v.textContent).toBe("Leak suspected: process footprint grew +56 % from epoch 1 to 6");
    expect(v.dataset.state).toBe("stopped");
    expect(get<HTMLImageElement>(panel.root, "memory-chart").src).toMatch(/^data:image\/svg\+xml/);
    panel.root.remove();
  });

  it("shows the backend's refusal of a zero batch, and refuses text that is no number itself", async () => {
    // The one check is the backend's (headroom_core::requests::EpochsInput); its message is the
    // CLI's, which src-tauri/src/audit.rs asserts for the real command layer.
    const refusal = { code: "invalid_input", message: "--batch, --epochs and --steps-per-epoch must all be 1 or more" };
    const b = mockBackend({ epochsError: refusal });
    const panel = memoryPanel(b);
    document.body.append(panel.root);
    get<HTMLInputElement>(panel.root, "epochs-batch").value = "0";
    get<HTMLButtonElement>(panel.root, "run-epochs").click();
    await flush();
    expect(b.calls).toContain("startEpochs");
    const status = get(panel.root, "memory-status");
    expect(status.dataset.state).toBe("error");
    expect(status.textContent).toBe(`cannot start: ${refusal.message}`);
    b.calls.length = 0;
    get<HTMLInputElement>(panel.root, "epochs-batch").value = "1.5";
    get<HTMLButtonElement>(panel.root, "run-epochs").click();
    await flush();
    expect(b.calls).not.toContain("startEpochs");
    expect(status.textContent).toBe("batch, epochs and steps per epoch must be whole numbers");
    panel.root.remove();
  });

  it("lists Python processes, watches one, and says when it crosses the threshold", async () => {
    const b = mockBackend({ processes: [{ pid: 4242, command: "python train.py --bs 64", rss_bytes: 2 ** 30 }] });
    const panel = memoryPanel(b);
    get<HTMLButtonElement>(panel.root, "list-processes").click();
    await flush();
    const rows = panel.root.querySelectorAll<HTMLElement>('[data-testid="process-row"]');
    expect(rows).toHaveLength(1);
    expect(rows[0].textContent).toContain("python train.py --bs 64");
    rows[0].querySelector("button")?.click();
    await flush();
    expect(b.calls).toContain("startWatch 4242");
    const crossed = snap({ kind: "watch", title: "process 4242", growth: 0.31, crossed: true, message: "watching" });
    b.pushMemory(crossed);
    const v = get(panel.root, "memory-verdict");
    expect(v.hidden).toBe(false);
    expect(verdictText(crossed)).toBe("Leak suspected: memory grew past the threshold (+31 % since watching began)");
    get<HTMLButtonElement>(panel.root, "stop-memory").click();
    expect(b.calls).toContain("stopMemory");
  });

  it("reads the job back after a Stop whose last update never came, so it never stays running", async () => {
    vi.useFakeTimers();
    const ended = snap({ running: false, kind: "run", title: "run 7: python train.py", status: "interrupted", message: "stopped by you; 3 epochs" });
    const b = mockBackend({ processes: [{ pid: 77, command: "python train.py", rss_bytes: 2 ** 30 }], memory: ended });
    const panel = memoryPanel(b);
    get<HTMLButtonElement>(panel.root, "list-processes").click();
    await vi.advanceTimersByTimeAsync(0);
    panel.root.querySelector<HTMLButtonElement>('[data-testid="process-row"] button')?.click();
    await vi.advanceTimersByTimeAsync(0);
    b.pushMemory(snap({ kind: "watch", title: "process 77", message: "watching" }));
    const status = get(panel.root, "memory-status");
    expect(status.dataset.state).toBe("running");
    get<HTMLButtonElement>(panel.root, "stop-memory").click();
    await vi.advanceTimersByTimeAsync(2100);
    expect(b.calls).toContain("memorySnapshot");
    expect(status.dataset.state).toBe("interrupted");
    expect(status.textContent).toContain("stopped by you");
    // Once ended, it stops asking.
    const asked = b.calls.filter((c) => c === "memorySnapshot").length;
    await vi.advanceTimersByTimeAsync(6000);
    expect(b.calls.filter((c) => c === "memorySnapshot").length).toBe(asked);
    vi.useRealTimers();
  });

  it("shows the user's newest wrapped run with its epochs and verdict, on open and on the button", async () => {
    const wrapped = snap({
      running: false, kind: "run", title: "run 9: python train.py --bs 32", run_id: 9, status: "complete",
      samples: [sample(1, 600), sample(2, 700), sample(3, 800)],
      verdict: { kind: "leak_suspected", live: null, cache: null, footprint: null, throughput: null, slowing: false, reason: "process footprint grew +33 % from epoch 1 to 3" },
      message: "60 steps, batch 32, on cpu, 12.5 ms per step",
    });
    const b = mockBackend({ wrapped });
    const panel = memoryPanel(b);
    await panel.restore();
    expect(b.calls).toEqual(["memorySnapshot", "lastWrappedRun"]);
    expect(get(panel.root, "memory-table").querySelectorAll('[data-testid="memory-row"]')).toHaveLength(3);
    expect(get(panel.root, "memory-status").textContent).toBe("run 9: python train.py --bs 32 · complete · 60 steps, batch 32, on cpu, 12.5 ms per step");
    const v = get(panel.root, "memory-verdict");
    expect(v.hidden).toBe(false);
    expect(v.textContent).toBe("Leak suspected: process footprint grew +33 % from epoch 1 to 3");
    // No energy read: no J/sample column.
    expect(get(panel.root, "memory-table").textContent).not.toContain("J/sample");
    const none = mockBackend({});
    const empty = memoryPanel(none);
    get<HTMLButtonElement>(empty.root, "last-wrapped-run").click();
    await flush();
    expect(none.calls).toContain("lastWrappedRun");
    expect(get(empty.root, "memory-status").textContent).toContain("no `headroom run` recorded yet");
  });

  it("lists the newest epochs of a long run and says how many more the chart holds", async () => {
    const samples = Array.from({ length: 40 }, (_, i) => sample(i + 1, 600));
    const wrapped = snap({
      running: false, kind: "run", title: "run 9: python train.py", run_id: 9, status: "complete", samples,
      verdict: { kind: "stable", live: null, cache: null, footprint: null, throughput: null, slowing: false, reason: "flat" },
      message: "800 steps",
    });
    const panel = memoryPanel(mockBackend({ wrapped }));
    await panel.restore();
    const rows = get(panel.root, "memory-table").querySelectorAll('[data-testid="memory-row"]');
    expect(rows).toHaveLength(MAX_EPOCH_ROWS);
    expect(rows[0].firstElementChild?.textContent).toBe(String(40 - MAX_EPOCH_ROWS + 1));
    expect(get(panel.root, "memory-earlier").textContent).toBe(`${40 - MAX_EPOCH_ROWS} earlier epochs in the chart`);
  });

  it("adds a J/sample column where the machine gave each epoch's energy", async () => {
    const wrapped = snap({
      running: false, kind: "run", title: "run 9: python train.py", run_id: 9, status: "complete",
      samples: [sample(1, 600), sample(2, 600)], joules_per_sample: [0.0412, null],
      verdict: { kind: "stable", live: null, cache: null, footprint: null, throughput: null, slowing: false, reason: "flat" },
      message: "10 steps",
    });
    const panel = memoryPanel(mockBackend({ wrapped }));
    await panel.restore();
    const table = get(panel.root, "memory-table");
    expect(table.querySelector("tr")?.textContent).toContain("J/sample");
    const rows = table.querySelectorAll('[data-testid="memory-row"]');
    expect(rows[0].lastElementChild?.textContent).toBe("0.0412 J");
    expect(rows[1].lastElementChild?.textContent).toBe("–");
  });

  it("a restore still waiting on the backend never draws an older run over a watch that started", async () => {
    const old = snap({ running: false, kind: "run", status: "complete", title: "run 14: python train.py --batch-size 300", message: "49 steps" });
    const b = mockBackend({ projects: [{ name: "train", dir: "/tmp/train", python: null, command: ["python", "train.py"] }] });
    // The newest wrapped run (a sweep's last start) comes back only after the watch began.
    b.lastWrappedRun = () => new Promise((r) => setTimeout(() => r(old), 20));
    const panel = memoryPanel(b);
    document.body.append(panel.root);
    const restoring = panel.restore();
    panel.watchProject("train", 300, null, null);
    await flush();
    b.pushMemory(snap({ kind: "run", title: "train: python train.py", message: "3 epochs · 60 steps", samples: [sample(1, 400), sample(2, 401), sample(3, 402)] }));
    await restoring;
    await new Promise((r) => setTimeout(r, 30));
    const status = get(panel.root, "memory-status");
    expect(status.dataset.state).toBe("running");
    expect(status.textContent).toContain("train: python train.py");
    expect(status.textContent).not.toContain("run 14");
    panel.root.remove();
  });

  it("shows a wrapped run's profiler window: its top operators, its waits and the trace", async () => {
    const b = mockBackend({ projects: [{ name: "train", dir: "/tmp/train", python: null, command: ["python", "train.py"] }] });
    const panel = memoryPanel(b);
    document.body.append(panel.root);
    panel.watchProject("train", 64, null, null, 20);
    await flush();
    expect(b.calls).toContain("watchProject:train:64:::profile 20");
    expect(get(panel.root, "memory-profile").hidden).toBe(true);
    const profile: MemorySnapshot["profile"] = {
      headline: "20 iterations profiled after 10 on cuda (2.00 s; it cost the run 0.70 s)",
      of: "of the device time",
      top: [
        { name: "aten::convolution", calls: 1060, ms: 900, share: 0.64 },
        { name: "aten::batch_norm", calls: 1060, ms: 300, share: 0.21 },
      ],
      waits: [{ name: "aten::_local_scalar_dense", calls: 20, ms: 400, share: 0.2, wait: "sync" }],
      trace: "/home/you/.headroom/traces/trace-1.json",
      error: null,
    };
    b.pushMemory(snap({ running: false, kind: "run", status: "complete", title: "train: python train.py", message: "60 steps", profile }));
    const section = get(panel.root, "memory-profile");
    expect(section.hidden).toBe(false);
    expect(get(section, "memory-profile-headline").textContent).toContain("20 iterations profiled after 10 on cuda");
    const ops = section.querySelectorAll('[data-testid="memory-profile-op"]');
    expect(ops).toHaveLength(2);
    expect(ops[0].textContent).toBe("aten::convolution1060900.064 %");
    expect(section.querySelector("th:last-child")?.textContent).toBe("of the device time");
    expect(get(section, "memory-profile-waits").textContent).toBe("aten::_local_scalar_dense: 20 % of the window — a sync: the host waited for the device");
    expect(get(section, "memory-profile-trace").textContent).toContain("trace-1.json");
    // A run without a window hides the section again.
    b.pushMemory(snap({ running: false, kind: "run", status: "complete", profile: null }));
    expect(section.hidden).toBe(true);
    panel.root.remove();
  });
});
