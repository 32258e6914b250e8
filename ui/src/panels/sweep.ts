// The Sweep panel: a form, one click to run in the background worker, the chart and table
// filling in point by point, the recommendation above it at the end, and Cancel.
import type { Backend, Dtype, Mode, Point, SweepForm, SweepSnapshot, SweepSummary } from "../backend";
import { asAppError, DTYPES, MODES } from "../backend";
import { field, select } from "../controls";
import { chartHover, el, formatBytes, formatMs, formatRate, svgDataUrl } from "../format";

export const WORKLOADS = ["mlp", "cnn", "vit-tiny", "gpt-tiny", "matmul"];
export const DEVICES = ["auto", "cpu", "mps", "cuda"];
const TORCHSCRIPT = "torchscript";

function input(name: string, placeholder: string, value = ""): HTMLInputElement {
  const i = el("input");
  i.name = name;
  i.placeholder = placeholder;
  i.value = value;
  i.dataset.testid = `sweep-${name}`;
  return i;
}


/** Reads the form; `null` with a message when something is missing. */
export function readForm(f: {
  workload: string;
  path: string;
  shape: string;
  device: string;
  dtype: string;
  mode: string;
  budget: string;
  maxBatch: string;
  /** Run every doubling, no prediction (`sweep --no-predict`). */
  everyDoubling?: boolean;
}): { form: SweepForm } | { error: string } {
  // Only the text becomes the form's types here; what can run (a TorchScript file's path and
  // shape, a largest batch of 1 or more) is the backend's one check, the same as `headroom sweep`.
  const custom = f.workload === TORCHSCRIPT;
  let maxBatch: number | null = null;
  if (f.maxBatch.trim()) {
    const n = Number(f.maxBatch);
    if (!Number.isInteger(n) || n < 0) return { error: "the largest batch must be a whole number" };
    maxBatch = n;
  }
  return {
    form: {
      workload: custom ? f.path.trim() : f.workload,
      input_shape: custom && f.shape.trim() ? f.shape.trim() : null,
      device: f.device,
      // The selects offer only the generated enums' values.
      dtype: f.dtype as Dtype,
      mode: f.mode as Mode,
      budget: f.budget.trim() || "default",
      max_batch: maxBatch,
      ...(f.everyDoubling ? { every_doubling: true } : {}),
    },
  };
}

/** Samples per joule: the throughput over the mean power while the point was timed, where the
 * machine gave its energy (the most efficient batch is not always the fastest). */
export function samplesPerJoule(p: Point): number | null {
  const c = p.conditions;
  if (!c || !c.energy_j || c.energy_j <= 0 || c.seconds <= 0 || !p.samples_per_s) return null;
  return p.samples_per_s / (c.energy_j / c.seconds);
}

function pointRow(p: Point, recommended: number | null, energy: boolean): HTMLTableRowElement {
  const tr = el("tr");
  tr.dataset.testid = "sweep-point";
  if (p.batch === recommended) tr.className = "recommended";
  if (p.status !== "ok") tr.classList.add("failed");
  tr.append(
    el("td", "num", String(p.batch)),
    el("td", undefined, p.status.replace("_", " ")),
    el("td", "num", formatRate(p.samples_per_s)),
    el("td", "num", formatMs(p.step_ms_p50)),
    el("td", "num", formatBytes(p.peak_bytes ?? p.predicted_peak_bytes)),
  );
  if (energy) {
    const j = samplesPerJoule(p);
    const td = el("td", "num", j === null ? "–" : j.toFixed(1));
    td.dataset.testid = "sweep-point-energy";
    tr.append(td);
  }
  return tr;
}

/** The cautions in one line: how many, and the first one's gist (its text up to the colon). */
export function cautionLine(warnings: string[]): string {
  if (warnings.length === 0) return "";
  const gist = warnings[0].split(/[:;(]/)[0].trim();
  // Cut at a word, not inside one.
  const first = gist.length > 70 ? `${gist.slice(0, 70).replace(/\s+\S*$/, "")}…` : gist;
  return warnings.length === 1 ? `Read with care: ${first}` : `${warnings.length} cautions, e.g. ${first} (show all)`;
}

/** The answer in one line ("Recommended batch 64 · 10.0 k samples/s · 665 MiB · ±17 %, machine
 * busy", the core's headline with its doubt tag), then why, folded: the reason, the energy trade
 * where the machine gave its power, and what makes it uncertain. A summary recorded before the
 * headline was written shows its reason in the line. */
export function answerParts(summary: SweepSummary): HTMLElement[] {
  const rec = summary.recommended_batch;
  const line = el(
    "div",
    "answer",
    rec === null
      ? `No recommendation: ${summary.reason}`
      : summary.headline
        ? `Recommended ${summary.headline}`
        : `Recommended batch ${rec}: ${summary.reason}`,
  );
  line.dataset.testid = "sweep-answer";
  if (rec === null || !summary.headline) return [line];
  const why = el("details", "why");
  why.dataset.testid = "sweep-why";
  const energy = summary.energy?.text ? ` Energy: ${summary.energy.text}.` : "";
  const uncertain = summary.uncertain ? ` Uncertain: ${summary.uncertain}.` : "";
  why.append(el("summary", undefined, "Why"), el("div", undefined, `${cap(summary.reason)}.${energy}${uncertain}`));
  return [line, why];
}

function cap(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** Draws a snapshot: status, chart, warnings, table, recommendation. */
export function renderSnapshot(
  parts: {
    status: HTMLElement;
    chart: HTMLImageElement;
    table: HTMLTableSectionElement;
    recommendation: HTMLElement;
    warnings?: HTMLElement;
    results?: HTMLElement;
    empty?: HTMLElement;
    hover?: { update(svg: string): void };
  },
  s: SweepSnapshot,
): void {
  if (parts.warnings) {
    // What makes the figures less sure, next to the chart they qualify: one line that opens
    // the list (a noisy laptop gives one caution per point).
    const all = s.warnings ?? [];
    const list = el("ul", "warnings");
    list.append(...all.map((w) => el("li", undefined, w)));
    // The core's line ("5 of 7 points noisy (±10–19 %): timed beside other work; 1 other
    // warning"), while the sweep runs too; a count and the first one's gist from a snapshot
    // without it.
    const line = el("summary", "warnings-line", s.caution_line ?? s.summary?.caution_line ?? cautionLine(all));
    line.dataset.testid = "sweep-warnings-line";
    parts.warnings.replaceChildren(line, list);
    parts.warnings.hidden = all.length === 0;
  }
  if (parts.results) parts.results.hidden = s.points.length === 0;
  if (parts.empty) parts.empty.hidden = s.points.length > 0 || s.running;
  const head = s.run_id !== null ? `run ${s.run_id} · ` : "";
  const where = s.host ? ` (host ${s.host})` : "";
  parts.status.textContent = `${head}${s.workload} on ${s.device_name ?? s.device}${where} · ${s.running ? s.message : s.status}`;
  parts.status.dataset.state = s.running ? "running" : s.status;
  if (s.chart_svg) {
    parts.chart.src = svgDataUrl(s.chart_svg);
    parts.chart.hidden = false;
    parts.hover?.update(s.chart_svg);
  }
  const rec = s.summary?.recommended_batch ?? null;
  // The samples/J column only where some point has its energy.
  const energy = s.points.some((p) => samplesPerJoule(p) !== null);
  const energyHead = parts.table.parentElement?.querySelector<HTMLElement>('[data-testid="sweep-energy-head"]');
  if (energyHead) energyHead.hidden = !energy;
  parts.table.replaceChildren(...s.points.map((p) => pointRow(p, rec, energy)));
  if (!s.running && s.error) {
    // Stopped early: why first, then what the finished points already say.
    const partial = rec !== null ? ` — from the points measured, batch ${rec} is the best choice so far` : "";
    parts.recommendation.textContent = `${s.error.message}${partial}`;
    parts.recommendation.dataset.state = "stopped";
    parts.recommendation.hidden = false;
  } else if (!s.running && s.summary) {
    parts.recommendation.replaceChildren(...answerParts(s.summary));
    parts.recommendation.dataset.state = "done";
    parts.recommendation.hidden = false;
  } else {
    parts.recommendation.hidden = true;
  }
}

/**
 * The Sweep panel. A sweep started elsewhere (the Remote panel, an earlier popover) is followed
 * by reading its snapshot every `followMs` while it runs.
 */
export function sweepPanel(
  backend: Backend,
  followMs = 500,
  onRunning: (running: boolean) => void = () => {},
): { root: HTMLElement; restore(): Promise<void>; runProject(name: string, devices: string | null): void } {
  const root = el("div", "panel sweep");
  const form = el("form", "sweep-form");
  const workload = select("sweep-workload", [...WORKLOADS, TORCHSCRIPT], "mlp", (o) =>
    o === TORCHSCRIPT ? "TorchScript file…" : o,
  );
  const path = input("path", "/path/to/model.pt");
  const shape = input("shape", "3x224x224");
  const device = select("sweep-device", DEVICES, "auto");
  const dtype = select("sweep-dtype", [...DTYPES], "f32");
  const mode = select("sweep-mode", [...MODES], "train");
  const budget = input("budget", "default (90% available), 12GiB or 80%");
  const maxBatch = input("max-batch", "default");
  const everyDoubling = el("input");
  everyDoubling.type = "checkbox";
  everyDoubling.dataset.testid = "sweep-every-doubling";
  const everyLabel = el("label", "check");
  everyLabel.title =
    "Run every doubling and find the limit by running it: no memory prediction, no ×4 strides " +
    "through the launch-bound range, no jump to the predicted limit. Slower; for comparing with " +
    "an older sweep or a model whose memory does not grow in a line.";
  everyLabel.append(everyDoubling, el("span", undefined, " Every doubling (no prediction)"));
  const custom = el("div", "custom-model");
  custom.append(field("Model file", path), field("Input shape", shape));
  custom.hidden = true;
  workload.addEventListener("change", () => (custom.hidden = workload.value !== TORCHSCRIPT));
  const run = el("button", "primary", "Run sweep");
  run.type = "submit";
  run.dataset.testid = "run-sweep";
  const cancel = el("button", undefined, "Cancel");
  cancel.type = "button";
  cancel.dataset.testid = "cancel-sweep";
  cancel.disabled = true;
  const grid = el("div", "form-grid");
  grid.append(
    field("Workload", workload),
    field("Device", device),
    field("Dtype", dtype),
    field("Mode", mode),
    field("Budget", budget),
    field("Largest batch", maxBatch),
  );
  const buttons = el("div", "buttons");
  buttons.append(run, cancel);
  form.append(grid, custom, everyLabel, buttons);

  const status = el("div", "status");
  status.dataset.testid = "sweep-status";
  const chart = el("img", "chart");
  chart.alt = "throughput and peak memory against batch size";
  chart.dataset.testid = "sweep-chart";
  chart.hidden = true;
  const table = el("table", "points");
  const thead = el("thead");
  const hr = el("tr");
  for (const h of ["batch", "status", "samples/s", "p50", "peak"]) hr.append(el("th", undefined, h));
  const energyHead = el("th", undefined, "samples/J");
  energyHead.dataset.testid = "sweep-energy-head";
  energyHead.hidden = true;
  hr.append(energyHead);
  thead.append(hr);
  const tbody = el("tbody");
  tbody.dataset.testid = "sweep-table";
  table.append(thead, tbody);
  const recommendation = el("div", "recommendation");
  recommendation.dataset.testid = "sweep-recommendation";
  recommendation.hidden = true;
  const results = el("div", "results");
  results.dataset.testid = "sweep-results";
  results.append(table);
  // No table before there is a point: what to do instead.
  results.hidden = true;
  const empty = el(
    "div",
    "empty-state",
    "No sweep yet — Sweep my training in the project bar above, or check this machine below.",
  );
  empty.dataset.testid = "sweep-empty";
  const speedup = el("div", "recommendation");
  speedup.dataset.testid = "sweep-speedup";
  speedup.hidden = true;
  const builtin = el("details", "check-machine");
  builtin.dataset.testid = "check-this-machine";
  builtin.open = true;
  builtin.append(el("summary", undefined, "Check this machine (built-in workloads)"), form);
  // Stop for a job started from the project bar, next to what it shows.
  const bar = el("div", "buttons");
  const stop = el("button", undefined, "Cancel");
  stop.type = "button";
  stop.dataset.testid = "cancel-my-training";
  stop.disabled = true;
  stop.hidden = true;
  bar.append(stop);
  // What runs (or ran) first, then the built-in workloads below it.
  const warnings = el("details", "cautions");
  warnings.dataset.testid = "sweep-warnings";
  warnings.hidden = true;
  const hover = chartHover(chart, "sweep-chart-tip");
  // The answer first (the recommendation, the speed-up, what to read with care), above the
  // fold; then the chart and the table it comes from.
  root.append(bar, status, recommendation, speedup, warnings, chart, hover.tip, empty, results, builtin);
  const parts = { status, chart, table: tbody, recommendation, warnings, results, empty, hover };

  function show(s: SweepSnapshot): void {
    renderSnapshot(parts, s);
    const c = s.comparison;
    speedup.hidden = !c;
    if (c) {
      // The core's sentence (figures as people read them); the CPU run it compares with.
      // (A comparison recorded before the sentence was written: its figures as they are.)
      const text =
        c.text ||
        `${formatMs(c.device_step_ms)} per step on ${c.device} against ${formatMs(c.cpu_step_ms)} on the CPU at batch ${c.batch}: ${c.speedup}× the speed`;
      speedup.textContent = `Speed-up: ${text}${c.cpu_run_id !== null ? ` (CPU run ${c.cpu_run_id})` : ""}`;
      speedup.dataset.state = "done";
    }
    run.disabled = s.running;
    cancel.disabled = !s.running;
    stop.disabled = !s.running;
    stop.hidden = !s.running;
    onRunning(s.running);
  }

  /** Sweeps a project (from the project bar): batch=auto, or over devices to compare. */
  function runProject(name: string, devices: string | null): void {
    status.textContent = devices === null ? `starting the sweep of ${name}` : `starting the comparison of ${name}`;
    status.dataset.state = "running";
    onRunning(true);
    backend
      .sweepProject(name, devices, show)
      .then(show)
      .catch((e) => {
        const err = asAppError(e);
        status.textContent = `cannot sweep ${name}: ${err.message}`;
        status.dataset.state = "error";
        onRunning(false);
        if (err.code === "busy") {
          stop.disabled = false;
          stop.hidden = false;
        }
      });
  }
  stop.addEventListener("click", () => {
    stop.disabled = true;
    void backend.cancelSweep();
  });

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const read = readForm({
      workload: workload.value,
      path: path.value,
      shape: shape.value,
      device: device.value,
      dtype: dtype.value,
      mode: mode.value,
      budget: budget.value,
      maxBatch: maxBatch.value,
      everyDoubling: everyDoubling.checked,
    });
    if ("error" in read) {
      status.textContent = read.error;
      status.dataset.state = "error";
      return;
    }
    // Started from the keyboard on Run sweep: the focus moves on to Cancel, not to the body.
    const fromRun = document.activeElement === run;
    run.disabled = true;
    let focused = false;
    const showAndFocus = (snap: SweepSnapshot): void => {
      show(snap);
      if (fromRun && !focused && snap.running) {
        focused = true;
        cancel.focus();
      }
    };
    backend
      .startSweep(read.form, showAndFocus)
      .then(showAndFocus)
      .catch((e) => {
        const err = asAppError(e);
        status.textContent = `cannot start: ${err.message}`;
        status.dataset.state = "error";
        run.disabled = false;
        // Another sweep holds the worker (started from the Remote panel or an earlier popover):
        // it can be cancelled from here.
        if (err.code === "busy") cancel.disabled = false;
      });
  });
  cancel.addEventListener("click", () => {
    cancel.disabled = true;
    void backend.cancelSweep();
  });
  // The keyboard: Enter in a field starts (the form's submit), Escape cancels what runs. The
  // key is heard on the document while this panel shows: Run sweep, disabled once the sweep
  // starts, drops the focus to the page's body, where a keydown never reaches the panel.
  document.addEventListener("keydown", (ev) => {
    if (ev.key !== "Escape" || root.hidden || !root.isConnected) return;
    const t = ev.target;
    if (t instanceof Node && t !== document.body && !root.contains(t)) return;
    const running = [cancel, stop].find((b) => !b.disabled && !b.hidden);
    if (running) {
      ev.preventDefault();
      running.click();
    }
  });

  let following = false;
  async function restore(): Promise<void> {
    const s = await backend.sweepSnapshot().catch(() => null);
    if (!s) return;
    show(s);
    if (s.running && !following) {
      following = true;
      const next = () =>
        setTimeout(() => {
          void backend
            .sweepSnapshot()
            .catch(() => null)
            .then((t) => {
              if (t) show(t);
              if (t?.running) next();
              else following = false;
            });
        }, followMs);
      next();
    }
  }
  return { root, restore, runProject };
}
