import { describe, expect, it } from "vitest";

import { mockBackend } from "../src/backend/mock";
import { readForm, samplesPerJoule, sweepPanel } from "../src/panels/sweep";
import { point, snapshot } from "./fixtures";

const get = <T extends HTMLElement>(root: HTMLElement, id: string) =>
  root.querySelector<T>(`[data-testid="${id}"]`) as T;
const flush = () => new Promise((r) => setTimeout(r, 0));

const base = { workload: "mlp", path: "", shape: "", device: "cpu", dtype: "f32", mode: "train", budget: "", maxBatch: "" };

describe("sweep form", () => {
  it("turns the fields into the command's form", () => {
    expect(readForm({ ...base, maxBatch: "64" })).toEqual({
      form: { workload: "mlp", input_shape: null, device: "cpu", dtype: "f32", mode: "train", budget: "default", max_batch: 64 },
    });
    expect(readForm({ ...base, everyDoubling: true })).toMatchObject({ form: { every_doubling: true } });
    expect(readForm({ ...base, everyDoubling: false })).not.toHaveProperty("form.every_doubling");
    const ts = readForm({ ...base, workload: "torchscript", path: "/m/model.pt", shape: "3x32x32" });
    expect(ts).toMatchObject({ form: { workload: "/m/model.pt", input_shape: "3x32x32" } });
  });
  it("leaves what can run to the backend's one check and refuses only text that is no number", () => {
    // A missing path or shape and a largest batch of 0 reach the backend, which refuses them with
    // the CLI's messages (src-tauri/src/audit.rs feeds both the same values).
    expect(readForm({ ...base, workload: "torchscript" })).toMatchObject({ form: { workload: "", input_shape: null } });
    expect(readForm({ ...base, workload: "torchscript", path: "/m.pt" })).toMatchObject({ form: { workload: "/m.pt", input_shape: null } });
    expect(readForm({ ...base, maxBatch: "0" })).toMatchObject({ form: { max_batch: 0 } });
    expect(readForm({ ...base, maxBatch: "2.5" })).toEqual({ error: "the largest batch must be a whole number" });
    expect(readForm({ ...base, maxBatch: "-1" })).toHaveProperty("error");
  });
});

describe("energy per sample", () => {
  it("shows samples/J only where a point has its energy, from its mean power", async () => {
    const b = mockBackend({});
    const panel = sweepPanel(b);
    document.body.append(panel.root);
    get<HTMLButtonElement>(panel.root, "run-sweep").click();
    await flush();
    // 3000 J over 10 s timed: 300 W; 1500 samples/s → 5 samples/J.
    const measured = {
      ...point(64, 1500, 2 ** 30),
      conditions: { samples: 10, seconds: 10, energy_j: 3000, energy_source: "NVML energy counter" },
    } as unknown as ReturnType<typeof point>;
    expect(samplesPerJoule(measured)).toBeCloseTo(5, 9);
    expect(samplesPerJoule(point(32, 900, 2 ** 29))).toBeNull();
    b.push(snapshot({ points: [point(32, 900, 2 ** 29)] }));
    expect(get(panel.root, "sweep-energy-head").hidden).toBe(true);
    expect(panel.root.querySelectorAll('[data-testid="sweep-point-energy"]')).toHaveLength(0);
    b.push(snapshot({ points: [point(32, 900, 2 ** 29), measured] }));
    expect(get(panel.root, "sweep-energy-head").hidden).toBe(false);
    const cells = [...panel.root.querySelectorAll('[data-testid="sweep-point-energy"]')].map((c) => c.textContent);
    expect(cells).toEqual(["–", "5.0"]);
    panel.root.remove();
  });
});

describe("sweep panel", () => {
  it("asks for every doubling when the box is ticked", async () => {
    const b = mockBackend({});
    const panel = sweepPanel(b);
    document.body.append(panel.root);
    get<HTMLInputElement>(panel.root, "sweep-every-doubling").checked = true;
    get<HTMLButtonElement>(panel.root, "run-sweep").click();
    await flush();
    expect(b.forms).toHaveLength(1);
    expect(b.forms[0]).toMatchObject({ workload: "mlp", every_doubling: true });
    panel.root.remove();
  });
  it("runs, fills the table and chart point by point, and ends with the recommendation", async () => {
    const b = mockBackend({});
    const panel = sweepPanel(b);
    document.body.append(panel.root);
    get<HTMLSelectElement>(panel.root, "sweep-device").value = "cpu";
    get<HTMLInputElement>(panel.root, "sweep-max-batch").value = "8";
    get<HTMLButtonElement>(panel.root, "run-sweep").click();
    await flush();
    expect(b.forms).toEqual([
      { workload: "mlp", input_shape: null, device: "cpu", dtype: "f32", mode: "train", budget: "default", max_batch: 8 },
    ]);
    expect(get<HTMLButtonElement>(panel.root, "run-sweep").disabled).toBe(true);
    expect(get<HTMLButtonElement>(panel.root, "cancel-sweep").disabled).toBe(false);

    b.push(snapshot({ points: [point(1, 900, 2 ** 20)] }));
    b.push(snapshot({ points: [point(1, 900, 2 ** 20), point(2, 1700, 2 ** 21)] }));
    expect(get(panel.root, "sweep-table").querySelectorAll("tr")).toHaveLength(2);
    expect(get<HTMLImageElement>(panel.root, "sweep-chart").src).toMatch(/^data:image\/svg\+xml/);
    expect(get(panel.root, "sweep-status").textContent).toContain("run 7");
    expect(get(panel.root, "sweep-status").textContent).not.toContain("host");
    expect(get(panel.root, "sweep-recommendation").hidden).toBe(true);
    b.push(snapshot({ host: "box", points: [point(1, 900, 2 ** 20)] }));
    expect(get(panel.root, "sweep-status").textContent).toContain("mlp on AMD EPYC (host box)");

    b.push(
      snapshot({
        running: false,
        status: "complete",
        points: [point(1, 900, 2 ** 20), point(2, 1700, 2 ** 21), point(4, 1720, 2 ** 22), point(8, null, null, "oom")],
        summary: {
          best_batch: 4,
          knee_batch: 2,
          max_fit_batch: 4,
          first_failing_batch: 8,
          limit: "oom",
          recommended_batch: 2,
          reason: "batch 2 is within 5% of the best throughput",
          samples_per_s_at_recommended: 1700,
          peak_bytes_at_recommended: 2 ** 21,
        } as never,
      }),
    );
    const rec = get(panel.root, "sweep-recommendation");
    expect(rec.hidden).toBe(false);
    expect(rec.textContent).toBe("Recommended batch 2: batch 2 is within 5% of the best throughput");
    const rows = Array.from(get(panel.root, "sweep-table").querySelectorAll("tr"));
    expect(rows[1].className).toContain("recommended");
    expect(rows[3].className).toContain("failed");
    expect(get<HTMLButtonElement>(panel.root, "run-sweep").disabled).toBe(false);
    panel.root.remove();
  });

  it("a stopped sweep says why first, then what its points already say", async () => {
    const b = mockBackend({
      snapshot: snapshot({
        running: false,
        status: "interrupted",
        points: [point(1, 900, 2 ** 20), point(2, 1700, 2 ** 21)],
        summary: { recommended_batch: 2, reason: "best so far" } as never,
        error: { code: "cancelled", message: "cancelled from the app after 2 point(s)" },
      }),
    });
    const panel = sweepPanel(b);
    await panel.restore();
    const rec = get(panel.root, "sweep-recommendation");
    expect(rec.hidden).toBe(false);
    expect(rec.dataset.state).toBe("stopped");
    expect(rec.textContent).toBe(
      "cancelled from the app after 2 point(s) — from the points measured, batch 2 is the best choice so far",
    );
    expect(get(panel.root, "sweep-status").dataset.state).toBe("interrupted");
  });

  it("cancel asks the backend, and a refused start is shown", async () => {
    const b = mockBackend({ startError: { code: "busy", message: "a sweep is already running" } });
    const panel = sweepPanel(b);
    document.body.append(panel.root);
    get<HTMLButtonElement>(panel.root, "run-sweep").click();
    await flush();
    expect(get(panel.root, "sweep-status").textContent).toBe("cannot start: a sweep is already running");
    get<HTMLButtonElement>(panel.root, "cancel-sweep").disabled = false;
    get<HTMLButtonElement>(panel.root, "cancel-sweep").click();
    expect(b.calls).toContain("cancelSweep");
    panel.root.remove();
  });

  it("Escape in the panel cancels the running sweep, and does nothing once none runs", async () => {
    const b = mockBackend({});
    const panel = sweepPanel(b);
    document.body.append(panel.root);
    const field = panel.root.querySelector<HTMLInputElement>("form input")!;
    field.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));
    expect(b.calls).not.toContain("cancelSweep");
    // Enter in a field submits the form (the browser's own behaviour): the sweep starts.
    panel.root.querySelector("form")!.requestSubmit();
    await flush();
    expect(b.calls).toContain("startSweep");
    expect(get<HTMLButtonElement>(panel.root, "cancel-sweep").disabled).toBe(false);
    field.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));
    expect(b.calls).toContain("cancelSweep");
    expect(get<HTMLButtonElement>(panel.root, "cancel-sweep").disabled).toBe(true);
    panel.root.remove();
  });

  it("started from Run sweep by the keyboard, the focus moves to Cancel and Escape on the page's body still cancels", async () => {
    const b = mockBackend({});
    const panel = sweepPanel(b);
    document.body.append(panel.root);
    const run = get<HTMLButtonElement>(panel.root, "run-sweep");
    run.focus();
    panel.root.querySelector("form")!.requestSubmit(run);
    await flush();
    const cancel = get<HTMLButtonElement>(panel.root, "cancel-sweep");
    expect(cancel.disabled).toBe(false);
    expect(document.activeElement).toBe(cancel);
    // The focus lost to the body (a click elsewhere): Escape is still heard while the panel shows.
    cancel.blur();
    document.body.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));
    expect(b.calls).toContain("cancelSweep");
    // Hidden (another tab), the panel does not take the key.
    const again = mockBackend({});
    const hidden = sweepPanel(again);
    document.body.append(hidden.root);
    hidden.root.querySelector("form")!.requestSubmit();
    await flush();
    hidden.root.hidden = true;
    document.body.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));
    expect(again.calls).not.toContain("cancelSweep");
    panel.root.remove();
    hidden.root.remove();
  });

  it("a start refused as busy offers Cancel; any other refusal does not", async () => {
    for (const [code, cancellable] of [["busy", true], ["invalid_input", false]] as const) {
      const b = mockBackend({ startError: { code, message: "refused" } });
      const panel = sweepPanel(b);
      document.body.append(panel.root);
      get<HTMLButtonElement>(panel.root, "run-sweep").click();
      await flush();
      expect(get<HTMLButtonElement>(panel.root, "cancel-sweep").disabled).toBe(!cancellable);
      panel.root.remove();
    }
  });

  it("a popover opened mid-run draws the sweep from the snapshot", async () => {
    const b = mockBackend({ snapshot: snapshot({ points: [point(1, 900, 2 ** 20)] }) });
    const panel = sweepPanel(b, 60_000);
    await panel.restore();
    expect(get(panel.root, "sweep-table").querySelectorAll("tr")).toHaveLength(1);
    expect(get<HTMLButtonElement>(panel.root, "cancel-sweep").disabled).toBe(false);
  });

  it("follows a sweep started elsewhere (the Remote panel) until it ends", async () => {
    const seq = [
      snapshot({ host: "box", points: [point(1, 900, 2 ** 20)] }),
      snapshot({ host: "box", points: [point(1, 900, 2 ** 20), point(2, 1700, 2 ** 20)] }),
      snapshot({
        host: "box",
        running: false,
        status: "complete",
        points: [point(1, 900, 2 ** 20), point(2, 1700, 2 ** 20), point(4, 3000, 2 ** 20)],
      }),
    ];
    const b = { ...mockBackend({}), sweepSnapshot: async () => seq.shift() ?? null };
    const panel = sweepPanel(b, 1);
    await panel.restore();
    const status = get(panel.root, "sweep-status");
    expect(status.textContent).toContain("(host box)");
    expect(status.dataset.state).toBe("running");
    for (let i = 0; i < 50 && status.dataset.state === "running"; i++) await new Promise((r) => setTimeout(r, 5));
    expect(status.dataset.state).toBe("complete");
    expect(get(panel.root, "sweep-table").querySelectorAll("tr")).toHaveLength(3);
    expect(seq).toHaveLength(0);
  });
});

describe("warnings", () => {
  it("lists what makes the figures less sure beside the chart, and nothing when there is none", async () => {
    const b = mockBackend({});
    const panel = sweepPanel(b);
    document.body.append(panel.root);
    await panel.restore();
    get<HTMLButtonElement>(panel.root, "run-sweep").click();
    await flush();
    const list = get<HTMLUListElement>(panel.root, "sweep-warnings");
    b.push(snapshot({ points: [point(16, 900, 2 ** 20)] }));
    expect(list.hidden).toBe(true);
    const w = "batch 64 was timed while zoom.us used 1.4 cores, other processes 1.6 cores in all: its throughput may read low; measure again when the machine is quieter";
    b.push(snapshot({ running: false, status: "complete", warnings: [w] }));
    expect(list.hidden).toBe(false);
    expect(list.querySelectorAll("li")).toHaveLength(1);
    expect(list.textContent).toContain("zoom.us used 1.4 cores");
    // One line, the list folded behind it.
    const line = get<HTMLElement>(panel.root, "sweep-warnings-line");
    expect(line.textContent).toBe("Read with care: batch 64 was timed while zoom.us used 1.4 cores, other processes 1.6…");
    expect((list as unknown as HTMLDetailsElement).open).toBe(false);
    const noisy = (b: number, pct: number) =>
      `batch ${b}'s throughput is known only within ±${pct} % (its 137 timed steps varied by 115 %, p95/p50 4.44): read it as a rough figure`;
    b.push(snapshot({ running: false, status: "complete", warnings: [noisy(16, 19.3), noisy(64, 11.2), w] }));
    expect(get<HTMLElement>(panel.root, "sweep-warnings-line").textContent).toBe("3 cautions, e.g. batch 16's throughput is known only within ±19.3 % (show all)");
    expect(list.querySelectorAll("li")).toHaveLength(3);
    // The core's line for them, while the sweep still runs.
    const said = "2 of 7 points noisy (±11–19 %): timed beside other work; 1 other warning";
    b.push(snapshot({ running: true, warnings: [noisy(16, 19.3), noisy(64, 11.2), w], caution_line: said }));
    expect(get<HTMLElement>(panel.root, "sweep-warnings-line").textContent).toBe(said);
    panel.root.remove();
  });

  it("a fresh panel says what to do instead of drawing an empty table", async () => {
    const b = mockBackend({});
    const panel = sweepPanel(b);
    document.body.append(panel.root);
    await panel.restore();
    const empty = get<HTMLElement>(panel.root, "sweep-empty");
    const results = get<HTMLElement>(panel.root, "sweep-results");
    expect(empty.hidden).toBe(false);
    expect(empty.textContent).toContain("No sweep yet");
    expect(results.hidden).toBe(true);
    get<HTMLButtonElement>(panel.root, "run-sweep").click();
    await flush();
    b.push(snapshot({ points: [point(16, 900, 2 ** 20)] }));
    expect(empty.hidden).toBe(true);
    expect(results.hidden).toBe(false);
    panel.root.remove();
  });

  it("opens with the answer in one line with its doubt, why folded below, and the cautions in the core's one line", async () => {
    const b = mockBackend({});
    const panel = sweepPanel(b);
    document.body.append(panel.root);
    await panel.restore();
    get<HTMLButtonElement>(panel.root, "run-sweep").click();
    await flush();
    const rec = get(panel.root, "sweep-recommendation");
    const reason = "batch 64 gives the highest throughput measured, 10.0 k samples/s, peaking at 665 MiB of a 20.1 GiB budget";
    const done = (extra: Record<string, unknown>, warnings: string[] = []) =>
      snapshot({
        running: false,
        status: "complete",
        warnings,
        summary: { recommended_batch: 64, reason, uncertain: null, ...extra } as never,
      });
    // A summary recorded before the one-line answer was written: its reason in the line.
    b.push(done({}));
    expect(rec.textContent).toBe(`Recommended batch 64: ${reason}`);
    // The core's headline: figures as people read them, the doubt tag last.
    const headline = "batch 64 · 10.0 k samples/s · 665 MiB · ±17 %, machine busy";
    const uncertain = "the answer rests on batch 32 and 64 (the recommended 64 among them), timed beside other work";
    const noisy = (b: number, pct: number) =>
      `batch ${b}'s throughput is known only within ±${pct} % (its 137 timed steps varied by 115 %, p95/p50 4.44): read it as a rough figure`;
    const caution_line = "5 of 7 points noisy (±10–19 %): timed beside other work";
    b.push(done({ headline, uncertain, caution_line }, [noisy(16, 19.3), noisy(64, 16.7)]));
    expect(get(panel.root, "sweep-answer").textContent).toBe(`Recommended ${headline}`);
    expect(get(panel.root, "sweep-answer").textContent).not.toMatch(/\d\.\d{2,}|\d{4,}/);
    const why = get<HTMLDetailsElement>(panel.root, "sweep-why");
    expect(why.open).toBe(false);
    expect(why.textContent).toBe(`WhyBatch 64 gives the highest throughput measured, 10.0 k samples/s, peaking at 665 MiB of a 20.1 GiB budget. Uncertain: ${uncertain}.`);
    expect(get(panel.root, "sweep-warnings-line").textContent).toBe(caution_line);
    expect(get(panel.root, "sweep-warnings").querySelectorAll("li")).toHaveLength(2);
    // Summary first: the answer, then the cautions' line, then the chart and the table.
    const order = ["sweep-recommendation", "sweep-warnings", "sweep-chart", "sweep-results"].map((id) =>
      [...panel.root.querySelectorAll("[data-testid]")].findIndex((e) => (e as HTMLElement).dataset.testid === id),
    );
    expect(order).toEqual([...order].sort((x, y) => x - y));
    // Where the machine gave its power, the energy trade is said with the why.
    const text = "on battery, batch 32 gives 91 % of batch 64's speed for 70 % of its energy per sample (30.3 samples/J against 21.3)";
    b.push(done({ headline: "batch 64 · 10.0 k samples/s · 665 MiB", energy: { text } }));
    expect(get(panel.root, "sweep-answer").textContent).toBe("Recommended batch 64 · 10.0 k samples/s · 665 MiB");
    expect(get(panel.root, "sweep-why").textContent).toContain(`. Energy: ${text}.`);
    expect(get(panel.root, "sweep-why").textContent).not.toContain("Uncertain");
    panel.root.remove();
  });
});
