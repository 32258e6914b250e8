// The project bar at the top of the popover: which training is the subject (the Overview is
// judged from its runs), a form to add one, and the three one-click jobs on it — Sweep my
// training (batch=auto), Watch my training (memory per epoch, live, with the leak verdict) and
// Compare with the CPU (the sweep over {device}). The jobs show in the Sweep and Memory panels.
import type { Backend, Project, PythonReport, Report } from "../backend";
import { asAppError } from "../backend";
import { field, select } from "../controls";
import { el } from "../format";

/** Splits a command line into arguments: spaces separate, quotes ('…' or "…") group. */
export function splitCommand(line: string): string[] {
  const out: string[] = [];
  let cur = "";
  let quote: string | null = null;
  let any = false;
  for (const c of line) {
    if (quote) {
      if (c === quote) quote = null;
      else cur += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      any = true;
    } else if (/\s/.test(c)) {
      if (cur || any) out.push(cur);
      cur = "";
      any = false;
    } else cur += c;
  }
  if (cur || any) out.push(cur);
  return out;
}

/** The interpreters doctor found that can run torch, best first (torch whose matmul ran). */
export function torchPythons(report: Report | null): PythonReport[] {
  const ok = (report?.pythons ?? []).filter((p) => p.status === "ok" && p.facts?.torch);
  const rank = (p: PythonReport) => (p.facts?.torch?.matmul_device ? 0 : 1);
  return [...ok].sort((a, b) => rank(a) - rank(b));
}

function pythonLabel(p: PythonReport): string {
  const t = p.facts?.torch;
  const where = t?.mps_available ? "MPS" : t?.cuda_available ? "CUDA" : "CPU";
  return `${p.path} · torch ${t?.version ?? "?"} · ${where} (${p.source})`;
}

const OTHER = "__other__";

function input(testid: string, placeholder: string, value = ""): HTMLInputElement {
  const i = el("input");
  i.placeholder = placeholder;
  i.value = value;
  i.dataset.testid = testid;
  return i;
}

function button(testid: string, text: string, title: string, primary = false): HTMLButtonElement {
  const b = el("button", primary ? "primary" : undefined, text);
  b.type = "button";
  b.dataset.testid = testid;
  b.title = title;
  return b;
}

export interface ProjectActions {
  /** Sweep the project (devices: null for batch=auto alone, "" for this machine's CPU and accelerator). */
  sweep(name: string, devices: string | null): void;
  /** Run it and watch its memory per epoch (batch: null for the one its last sweep chose;
   * release: gc, empty-cache or both at every epoch end, null for none; profileWindow: the
   * iterations torch.profiler records after the warm-up, null for none; numerics: the dtype the
   * model runs in against a CPU copy at its first iteration — f32, bf16 or f16 — null for
   * none). */
  watch(name: string, batch: number | null, device: string | null, release: string | null, profileWindow: number | null, numerics: string | null): void;
}

export function projectBar(
  backend: Backend,
  actions: ProjectActions,
): { root: HTMLElement; load(): Promise<void>; busy(sweeping: boolean, watching: boolean): void } {
  const root = el("section", "projects");
  root.dataset.testid = "projects";
  const picker = el("select");
  picker.dataset.testid = "project-picker";
  const sweep = button("sweep-my-training", "Sweep my training", "batch=auto on your command: the largest batch that fits, the knee, verified; each start stops once its steps settle", true);
  const watch = button("watch-my-training", "Watch my training", "run your command and show its memory per epoch as it goes, with the leak verdict");
  const compare = button("compare-with-cpu", "Compare with the CPU", "sweep {device} on the accelerator, then the CPU once at the recommended batch: the speed-up the decision uses");
  const note = el("div", "status");
  note.dataset.testid = "project-status";

  // Options of the jobs.
  const options = el("details", "project-options");
  const batch = input("project-watch-batch", "from the last sweep");
  batch.inputMode = "numeric";
  const device = input("project-watch-device", "this machine's accelerator");
  const devices = input("project-compare-devices", "cpu and the accelerator, e.g. cpu,mps");
  // The runbook's release at each epoch end: a leak that survives it is a leak.
  const release = select("project-watch-release", ["none", "gc", "empty-cache", "both"], "none", (o) =>
    o === "none" ? "none" : o === "gc" ? "gc.collect()" : o === "empty-cache" ? "empty_cache()" : "gc.collect() and empty_cache()",
  );
  // The runbook's profiler window: N iterations after the warm-up, its top operators.
  const profileN = input("project-watch-profile", "none (e.g. 20)");
  profileN.inputMode = "numeric";
  profileN.title = "torch.profiler over this many training iterations after 10 of warm-up: the top operators, the syncs, a Chrome trace";
  // The model on its device against a CPU copy, layer by layer, then the run stops.
  const numerics = select("project-numerics", ["off", "f32", "bf16", "f16"], "off", (o) =>
    o === "off" ? "off" : o === "f32" ? "f32 against a CPU copy" : `${o} autocast against a CPU copy`,
  );
  numerics.title = "Watch then checks the numerics instead: one forward and backward on the device (or in bf16/f16) against a CPU copy in f32, layer by layer, and stops after three iterations";
  const optGrid = el("div", "form-grid");
  optGrid.append(
    field("Watch at batch", batch),
    field("Watch on device", device),
    field("Release at each epoch end", release),
    field("Profile iterations", profileN),
    field("Check numerics", numerics),
    field("Compare devices", devices),
  );
  options.append(el("summary", undefined, "Options"), optGrid);

  // The add form.
  const add = el("details", "add-project");
  add.dataset.testid = "add-project-form";
  const name = input("project-name", "resnet-cifar");
  const dir = input("project-dir", "/Users/you/code/project");
  const python = el("select");
  python.dataset.testid = "project-python-pick";
  const otherPython = input("project-python", "/Users/you/code/project/.venv/bin/python");
  const command = input("project-command", "python train.py --batch-size {batch} --device {device}");
  const choose = button("choose-project-dir", "Choose…", "pick the folder in the system's folder chooser");
  const dirRow = el("div", "input-with-button");
  dirRow.append(dir, choose);
  const folderField = field("Folder", dirRow);
  folderField.classList.add("wide");
  const save = button("add-project", "Add project", "check the folder, the Python and the command, and save it in Headroom's config");
  const grid = el("div", "form-grid");
  grid.append(field("Name", name), folderField, field("Python", python), field("Other Python", otherPython), field("Command", command));
  add.append(el("summary", undefined, "Add a project…"), grid, save);

  // Compact, so that each tab's decision and its primary action stay above the fold: the
  // project, its options and the add form on one line (an open one takes a line of its own),
  // the three jobs on the next, the status on one line (an error wraps in full).
  const label = el("label", "project-label", "Your training");
  label.append(picker);
  const head = el("div", "project-head");
  head.append(label, options, add);
  const jobRow = el("div", "buttons");
  jobRow.append(sweep, watch, compare);
  root.append(head, jobRow, note);

  let projects: Project[] = [];
  let sweeping = false;
  let watching = false;
  const say = (text: string, state: string) => {
    note.textContent = text;
    note.title = text;
    note.dataset.state = state;
  };
  function enable(): void {
    const none = projects.length === 0;
    // Without a project only the add form and its one line show: the tabs and the decision
    // stay above the fold for someone who has not added one.
    label.hidden = none;
    jobRow.hidden = none;
    options.hidden = none;
    sweep.disabled = none || sweeping;
    compare.disabled = none || sweeping;
    watch.disabled = none || watching;
  }

  function fill(selected?: string): void {
    picker.replaceChildren(
      ...projects.map((p) => {
        const o = el("option", undefined, p.name);
        o.value = p.name;
        o.title = `${p.command.join(" ")} in ${p.dir}`;
        return o;
      }),
    );
    if (selected) picker.value = selected;
    enable();
    if (projects.length === 0) say("No project yet: add the folder and the command that trains.", "idle");
    else if (note.dataset.state === "idle") say(describe(picker.value), "");
  }
  function describe(n: string): string {
    const p = projects.find((x) => x.name === n);
    return p ? `${p.command.join(" ")} in ${p.dir}` : "";
  }

  /** The Python choices: the interpreters doctor found with torch, then "other". */
  function fillPythons(report: Report | null): void {
    const found = torchPythons(report);
    const keep = python.value;
    python.replaceChildren(
      ...found.map((p) => {
        const o = el("option", undefined, pythonLabel(p));
        o.value = p.path;
        return o;
      }),
      Object.assign(el("option", undefined, found.length ? "Other…" : "Other (doctor found no Python with torch)"), { value: OTHER }),
    );
    if (keep && [...python.options].some((o) => o.value === keep)) python.value = keep;
    otherPython.parentElement!.hidden = python.value !== OTHER;
  }
  python.addEventListener("change", () => (otherPython.parentElement!.hidden = python.value !== OTHER));
  add.addEventListener("toggle", () => {
    if (add.open) void backend.lastReadiness().catch(() => null).then(fillPythons);
  });

  async function load(): Promise<void> {
    projects = await backend.listProjects().catch(() => []);
    // A page made again (the popover closed and opened) opens on the project picked before.
    const chosen = picker.value || (await backend.selectedProject().catch(() => null));
    fill(chosen && projects.some((p) => p.name === chosen) ? chosen : projects[0]?.name);
    if (picker.value) void backend.selectProject(picker.value).catch(() => false);
  }
  picker.addEventListener("change", () => {
    say(describe(picker.value), "");
    void backend.selectProject(picker.value || null).catch((e) => say(asAppError(e).message, "error"));
  });
  choose.addEventListener("click", () => {
    choose.disabled = true;
    backend
      .pickFolder(dir.value.trim() || null)
      .then((picked) => {
        if (picked === null) return;
        dir.value = picked;
        // A fresh form names the project after its folder.
        if (name.value.trim() === "") name.value = picked.split("/").filter(Boolean).pop() ?? "";
      })
      .catch((e) => say(`cannot open the folder chooser: ${asAppError(e).message}; type the folder instead`, "error"))
      .finally(() => {
        choose.disabled = false;
      });
  });
  save.addEventListener("click", () => {
    const chosen = python.value === OTHER || python.value === "" ? otherPython.value.trim() : python.value;
    const p: Project = { name: name.value.trim(), dir: dir.value.trim(), python: chosen || null, command: splitCommand(command.value) };
    backend
      .addProject(p, false)
      .then(async (added) => {
        add.open = false;
        say(`Project ${added.name} added: ${added.command.join(" ")}`, "done");
        projects = await backend.listProjects().catch(() => [...projects, added]);
        fill(added.name);
        await backend.selectProject(added.name).catch(() => false);
      })
      .catch((e) => say(`cannot add the project: ${asAppError(e).message}`, "error"));
  });
  sweep.addEventListener("click", () => {
    if (!picker.value) return;
    say(`Sweeping ${picker.value}: each start stops once its steps settle.`, "running");
    actions.sweep(picker.value, null);
  });
  compare.addEventListener("click", () => {
    if (!picker.value) return;
    say(`Comparing ${picker.value}: the accelerator swept, then the CPU at the recommended batch.`, "running");
    actions.sweep(picker.value, devices.value.trim());
  });
  watch.addEventListener("click", () => {
    if (!picker.value) return;
    const text = batch.value.trim();
    const n = Number(text);
    if (text && (!Number.isInteger(n) || n < 1)) {
      say("the batch to watch at must be a whole number of 1 or more (or empty: the last sweep's)", "error");
      return;
    }
    const ptext = profileN.value.trim();
    const pn = Number(ptext);
    if (ptext && (!Number.isInteger(pn) || pn < 1)) {
      say("the iterations to profile must be a whole number of 1 or more (or empty: none)", "error");
      return;
    }
    const check = numerics.value === "off" ? null : numerics.value;
    say(
      check
        ? `Checking ${picker.value}'s numerics (${check} against a CPU copy) in the Memory panel.`
        : `Watching ${picker.value}: memory per epoch in the Memory panel.`,
      "running",
    );
    actions.watch(picker.value, text ? n : null, device.value.trim() || null, release.value === "none" ? null : release.value, ptext ? pn : null, check);
  });
  return {
    root,
    load,
    busy(s: boolean, w: boolean) {
      // A job started here has ended: the line says which project is picked again (its
      // panel says how the job went).
      const ended = (sweeping || watching) && !s && !w && note.dataset.state === "running";
      sweeping = s;
      watching = w;
      enable();
      if (ended) say(describe(picker.value), "");
    },
  };
}
