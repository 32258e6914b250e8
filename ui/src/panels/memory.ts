// The Memory panel: epochs on a workload, or a running Python process watched from outside; the
// memory chart with its leak threshold line, the verdict, and the numbers per epoch.
import type { Backend, EpochsForm, MemorySnapshot, ProcessInfo, Release } from "../backend";
import { asAppError, RELEASES } from "../backend";
import { field, select } from "../controls";
import { el, formatBytes, formatJoules, formatRate, svgDataUrl } from "../format";
import { DEVICES, WORKLOADS } from "./sweep";

/** The epochs the table lists (the newest). */
export const MAX_EPOCH_ROWS = 12;

const VERDICTS: Record<string, string> = {
  leak_suspected: "Leak suspected",
  cache_growth: "Cache growth",
  stable: "Stable",
  too_short: "Too short to judge",
};

/** The verdict line, or the watch's growth line. */
export function verdictText(s: MemorySnapshot): string {
  if (s.kind === "watch") {
    const g = s.growth === null ? "" : ` (${s.growth >= 0 ? "+" : ""}${(s.growth * 100).toFixed(0)} % since watching began)`;
    return s.crossed ? `Leak suspected: memory grew past the threshold${g}` : `Watching${g}`;
  }
  if (!s.verdict) return s.message;
  return `${VERDICTS[s.verdict.kind] ?? s.verdict.kind}: ${s.verdict.reason}`;
}


export function memoryPanel(
  backend: Backend,
  onRunning: (running: boolean) => void = () => {},
): {
  root: HTMLElement;
  restore(): Promise<void>;
  watchProject(name: string, batch: number | null, device: string | null, release: string | null, profileWindow?: number | null, numerics?: string | null): void;
} {
  const root = el("div", "panel memory");
  // Epochs form.
  const form = el("form", "sweep-form");
  const workload = select("epochs-workload", WORKLOADS, "mlp");
  const device = select("epochs-device", DEVICES, "auto");
  const release = select("epochs-release", [...RELEASES], "none");
  const num = (id: string, value: string) => {
    const i = el("input");
    i.dataset.testid = id;
    i.value = value;
    i.inputMode = "numeric";
    return i;
  };
  const batch = num("epochs-batch", "32");
  const epochs = num("epochs-count", "10");
  const steps = num("epochs-steps", "20");
  const leak = el("input");
  leak.type = "checkbox";
  leak.dataset.testid = "epochs-leak-demo";
  const grid = el("div", "form-grid");
  grid.append(
    field("Workload", workload),
    field("Device", device),
    field("Batch", batch),
    field("Epochs", epochs),
    field("Steps per epoch", steps),
    field("Release at epoch end", release),
  );
  const leakRow = el("label", "check");
  leakRow.append(leak, el("span", undefined, "Leak demo (retain 64 MiB per epoch)"));
  const run = el("button", "primary", "Run epochs");
  run.type = "submit";
  run.dataset.testid = "run-epochs";
  const stop = el("button", undefined, "Stop");
  stop.type = "button";
  stop.dataset.testid = "stop-memory";
  stop.disabled = true;
  const buttons = el("div", "buttons");
  buttons.append(run, stop);
  form.append(grid, leakRow, buttons);

  // Watch a process.
  const watchHead = el("div", "panel-bar");
  const refresh = el("button", undefined, "Find Python processes");
  refresh.type = "button";
  refresh.dataset.testid = "list-processes";
  watchHead.append(el("h3", undefined, "Or watch a running process"), refresh);
  // Your own training, as `headroom run -- python train.py` recorded it.
  const mineHead = el("div", "panel-bar");
  const mine = el("button", undefined, "Show my last run");
  mine.type = "button";
  mine.dataset.testid = "last-wrapped-run";
  mine.title = "the newest `headroom run -- python train.py …`: its epochs with device and process memory, and the leak verdict";
  mineHead.append(el("h3", undefined, "Or your own training (headroom run)"), mine);
  const list = el("div", "process-list");
  list.dataset.testid = "process-list";

  // Output.
  const status = el("div", "status");
  status.dataset.testid = "memory-status";
  const verdict = el("div", "recommendation");
  verdict.dataset.testid = "memory-verdict";
  verdict.hidden = true;
  const chart = el("img", "chart");
  chart.alt = "memory per epoch with the leak threshold";
  chart.dataset.testid = "memory-chart";
  chart.hidden = true;
  const table = el("table", "points");
  const tbody = el("tbody");
  tbody.dataset.testid = "memory-table";
  table.append(tbody);
  // A wrapped run's profiler window: its top operators and its waits.
  const profile = el("section", "profile-window");
  profile.dataset.testid = "memory-profile";
  profile.hidden = true;
  // A numerics check: the verdict, then the tensors that matter most.
  const numerics = el("section", "numerics");
  numerics.dataset.testid = "memory-numerics";
  numerics.hidden = true;
  // What runs (or ran) first, then the ways to start one.
  root.append(status, numerics, verdict, chart, table, profile, form, watchHead, list, mineHead);

  // Bumped whenever a job of this panel shows itself or starts: a restore that was waiting on
  // the backend meanwhile must not draw an older run over it (the e2e's Watch after a sweep).
  let generation = 0;

  function show(s: MemorySnapshot): void {
    generation++;
    // A finished run of the user's command says what was observed, not only how it ended.
    const ended = s.kind === "run" && s.message ? `${s.status} · ${s.message}` : s.status;
    status.textContent = `${s.title} · ${s.running ? s.message : ended}`;
    status.dataset.state = s.running ? "running" : s.status;
    run.disabled = s.running;
    stop.disabled = !s.running;
    onRunning(s.running);
    if (s.chart_svg) {
      chart.src = svgDataUrl(s.chart_svg);
      chart.hidden = false;
    }
    const done = !s.running && (s.verdict !== null || s.kind === "watch");
    verdict.hidden = !(done || s.crossed);
    verdict.textContent = verdictText(s);
    verdict.dataset.kind = s.kind;
    verdict.dataset.state = s.verdict?.kind === "leak_suspected" || s.crossed ? "stopped" : "done";
    const head = el("tr");
    const rows: HTMLTableRowElement[] = [];
    if (s.kind === "epochs" || s.kind === "run") {
      // Energy per sample where the machine gives its power (a column only then).
      const energy = s.joules_per_sample.some((j) => j !== null);
      const headers = ["epoch", "live", "cache", "footprint", "samples/s", ...(energy ? ["J/sample"] : [])];
      for (const h of headers) head.append(el("th", undefined, h));
      // The newest epochs only: a long run's table would push the buttons below it down at
      // every epoch (and off the popover); the chart above shows them all.
      const from = Math.max(0, s.samples.length - MAX_EPOCH_ROWS);
      if (from > 0) {
        const more = el("tr");
        more.dataset.testid = "memory-earlier";
        const td = el("td", "machine", `${from} earlier epoch${from === 1 ? "" : "s"} in the chart`);
        td.colSpan = headers.length;
        more.append(td);
        rows.push(more);
      }
      s.samples.slice(from).forEach((e, k) => {
        const i = from + k;
        const tr = el("tr");
        tr.dataset.testid = "memory-row";
        tr.append(
          el("td", "num", String(e.epoch)),
          el("td", "num", formatBytes(e.live_bytes)),
          el("td", "num", formatBytes(e.cache_bytes)),
          el("td", "num", formatBytes(e.footprint_bytes)),
          el("td", "num", formatRate(e.samples_per_s)),
        );
        if (energy) tr.append(el("td", "num", formatJoules(s.joules_per_sample[i] ?? null)));
        rows.push(tr);
      });
    } else {
      for (const h of ["seconds", "process", "tree"]) head.append(el("th", undefined, h));
      for (const r of s.readings.slice(-10)) {
        const tr = el("tr");
        tr.dataset.testid = "memory-row";
        tr.append(el("td", "num", r.t.toFixed(1)), el("td", "num", formatBytes(r.process_bytes)), el("td", "num", formatBytes(r.tree_bytes)));
        rows.push(tr);
      }
    }
    tbody.replaceChildren(head, ...rows);
    showProfile(s.profile);
    showNumerics(s.numerics);
  }

  const WAITS: Record<string, string> = {
    sync: "a sync: the host waited for the device",
    launch: "the host feeding the device (launches)",
    host: "host only: unsupported on the device, or host work",
  };

  function showNumerics(n: MemorySnapshot["numerics"]): void {
    numerics.hidden = !n;
    if (!n) {
      numerics.replaceChildren();
      return;
    }
    const head = el("div", "recommendation", n.verdict);
    head.dataset.testid = "memory-numerics-verdict";
    head.dataset.state = n.within ? "done" : "stopped";
    const t = el("table", "points");
    const body = el("tbody");
    const hr = el("tr");
    for (const h of ["compared", "", "relative", "absolute"]) hr.append(el("th", undefined, h));
    body.append(hr);
    for (const r of n.rows) {
      const tr = el("tr");
      tr.dataset.testid = "memory-numerics-row";
      if (r.over) tr.className = "failed";
      tr.append(el("td", undefined, r.name), el("td", undefined, r.what), el("td", "num", r.rel), el("td", "num", r.abs));
      body.append(tr);
    }
    t.append(body);
    numerics.replaceChildren(head, t);
  }

  function showProfile(p: MemorySnapshot["profile"]): void {
    profile.hidden = !p;
    if (!p) {
      profile.replaceChildren();
      return;
    }
    const title = el("h3", undefined, "Profiler window");
    const head = el("div", "status", p.error ? `no profile: ${p.error}` : p.headline);
    head.dataset.testid = "memory-profile-headline";
    const t = el("table", "points");
    const body = el("tbody");
    const hr = el("tr");
    for (const h of ["operator", "calls", "ms", p.of]) hr.append(el("th", undefined, h));
    body.append(hr);
    for (const o of p.top) {
      const tr = el("tr");
      tr.dataset.testid = "memory-profile-op";
      tr.append(el("td", undefined, o.name), el("td", "num", String(o.calls)), el("td", "num", o.ms.toFixed(1)), el("td", "num", `${(o.share * 100).toFixed(0)} %`));
      body.append(tr);
    }
    t.append(body);
    const parts: HTMLElement[] = [title, head, t];
    if (p.waits.length > 0) {
      const w = el("ul", "profile-waits");
      w.dataset.testid = "memory-profile-waits";
      for (const o of p.waits) {
        w.append(el("li", undefined, `${o.name}: ${(o.share * 100).toFixed(0)} % of the window — ${WAITS[o.wait ?? "host"] ?? o.wait}`));
      }
      parts.push(el("div", undefined, "Long on the host, short on the device:"), w);
    }
    if (p.trace) {
      const tr = el("div", "status", `Chrome trace: ${p.trace} (open it in ui.perfetto.dev)`);
      tr.dataset.testid = "memory-profile-trace";
      parts.push(tr);
    }
    profile.replaceChildren(...parts);
  }

  function fail(e: unknown): void {
    status.textContent = `cannot start: ${asAppError(e).message}`;
    status.dataset.state = "error";
    run.disabled = false;
    onRunning(false);
  }

  /** "Watch my training" (from the project bar): the project's run, its epochs live. */
  function watchProject(
    name: string,
    batch: number | null,
    device: string | null,
    release: string | null,
    profileWindow: number | null = null,
    numerics: string | null = null,
  ): void {
    generation++;
    status.textContent = `starting ${name}`;
    status.dataset.state = "running";
    onRunning(true);
    backend.watchProject(name, batch, device, release, profileWindow, numerics, show).then(show).catch(fail);
  }

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    // Only the text becomes a number here; which numbers can run is the backend's one check
    // (headroom_core::requests, the same as `headroom epochs`).
    const n = (i: HTMLInputElement) => Number(i.value);
    const bad = [batch, epochs, steps].find((i) => !Number.isInteger(n(i)) || n(i) < 0);
    if (bad) {
      status.textContent = "batch, epochs and steps per epoch must be whole numbers";
      status.dataset.state = "error";
      return;
    }
    const f: EpochsForm = {
      workload: workload.value,
      device: device.value,
      batch: n(batch),
      epochs: n(epochs),
      steps_per_epoch: n(steps),
      release: release.value as Release,
      leak_demo: leak.checked,
    };
    run.disabled = true;
    backend.startEpochs(f, show).then(show).catch(fail);
  });
  stop.addEventListener("click", () => {
    stop.disabled = true;
    void backend.stopMemory();
    // The job's own updates say when it has ended; should that last one not arrive, the job's
    // state is read back, so that the panel never stays "running" after a Stop.
    const poll = window.setInterval(() => {
      if (status.dataset.state !== "running") {
        window.clearInterval(poll);
        return;
      }
      void backend
        .memorySnapshot()
        .then((s) => {
          if (s && !s.running && status.dataset.state === "running") show(s);
        })
        .catch(() => undefined);
    }, 2000);
  });
  refresh.addEventListener("click", () => {
    backend
      .listProcesses()
      .then((ps: ProcessInfo[]) => {
        list.replaceChildren(
          ...(ps.length ? ps : []).map((p) => {
            const row = el("div", "process-row");
            row.dataset.testid = "process-row";
            row.dataset.pid = String(p.pid);
            const b = el("button", undefined, "Watch");
            b.type = "button";
            b.addEventListener("click", () => backend.startWatch(p.pid, show).then(show).catch(fail));
            const text = el("span", "python-path", `${p.pid} · ${formatBytes(p.rss_bytes)} · ${p.command}`);
            text.title = p.command;
            row.append(b, text);
            return row;
          }),
        );
        if (!ps.length) list.append(el("div", "status", "no Python process is running"));
      })
      .catch((e) => (list.textContent = asAppError(e).message));
  });

  function showWrapped(s: MemorySnapshot | null): void {
    if (s) {
      show(s);
    } else {
      status.textContent = "no `headroom run` recorded yet: run your training as headroom run -- python train.py";
      status.dataset.state = "";
    }
  }
  mine.addEventListener("click", () => {
    backend
      .lastWrappedRun()
      .then(showWrapped)
      .catch((e) => {
        status.textContent = `cannot read your runs: ${asAppError(e).message}`;
        status.dataset.state = "error";
      });
  });

  /** The panel's job of this session, else the user's newest wrapped run. */
  async function restore(): Promise<void> {
    const at = generation;
    const s = await backend.memorySnapshot().catch(() => null);
    if (generation !== at) return;
    if (s) {
      show(s);
      return;
    }
    const w = await backend.lastWrappedRun().catch(() => null);
    if (w && generation === at) showWrapped(w);
  }
  return { root, restore, watchProject };
}
