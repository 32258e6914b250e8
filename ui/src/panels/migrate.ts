// The migration wizard in the Remote panel: one project moved to the selected host step by step
// (host, key, check, Headroom there, the project, your training, side by side, the screen). Each
// step runs the same code as `headroom remote migrate`; its state lives in Headroom's folder, so
// the wizard opens where the CLI or an earlier popover stopped. Next waits for the step to pass;
// every step can be run again; a failure shows its fix.
import type { Backend, Migration, Project, Step } from "../backend";
import { asAppError } from "../backend";
import { field } from "../controls";
import { el, svgDataUrl } from "../format";

const STEPS: { step: Step; title: string }[] = [
  { step: "host", title: "The host profile" },
  { step: "key", title: "A key that opens it" },
  { step: "check", title: "Reachable, with room in the remote folder" },
  { step: "headroom", title: "Headroom there" },
  { step: "project", title: "Your project there, verified, with its environment" },
  { step: "training", title: "Your training there" },
  { step: "compare", title: "Here and there side by side" },
  { step: "screen", title: "The remote screen" },
];

export function migrationWizard(backend: Backend): { root: HTMLElement; show(host: string): Promise<void> } {
  const root = el("div", "wizard");
  root.dataset.testid = "wizard";
  const project = el("select");
  project.dataset.testid = "wizard-project";
  const remoteDir = el("input");
  remoteDir.dataset.testid = "wizard-remote-dir";
  remoteDir.placeholder = "headroom-projects/PROJECT";
  // What the project step leaves out (git-ignored, environment folders) but should copy.
  const alsoCopy = el("input");
  alsoCopy.dataset.testid = "wizard-also-copy";
  alsoCopy.placeholder = "data, checkpoints (optional)";
  const top = el("div", "form-grid");
  const alsoField = field("Also copy (paths the project step leaves out, comma-separated)", alsoCopy);
  alsoField.classList.add("wide");
  top.append(field("Project", project), field("Folder there", remoteDir), alsoField);
  const rail = el("ol", "wizard-rail");
  const card = el("div", "wizard-card");
  const title = el("h4");
  title.dataset.testid = "wizard-title";
  const detail = el("div", "wizard-detail");
  detail.dataset.testid = "wizard-detail";
  // The running step's latest progress line (what it does now, rsync's total, pip's lines).
  const progress = el("div", "wizard-progress");
  progress.dataset.testid = "wizard-progress";
  progress.hidden = true;
  // Side by side: the two runs' figures as bars (the Runs panel's comparison chart).
  const chart = el("img", "chart");
  chart.dataset.testid = "wizard-chart";
  chart.alt = "the project's run here and there, side by side";
  chart.hidden = true;
  let charted = "";
  // The runs whose picture the image holds now.
  let drawn = "";
  // What the step printed on its last run here (kept per step until it runs again).
  const log = el("details", "wizard-log");
  log.dataset.testid = "wizard-log";
  const logSummary = el("summary");
  const logLines = el("pre");
  log.append(logSummary, logLines);
  const logs: Partial<Record<Step, string[]>> = {};
  const fix = el("div", "wizard-fix");
  fix.dataset.testid = "wizard-fix";
  const password = el("input");
  password.type = "password";
  password.autocomplete = "off";
  password.dataset.testid = "wizard-password";
  const passwordRow = field("Login password there (used once, never stored)", password);
  const back = el("button", undefined, "Back");
  back.dataset.testid = "wizard-back";
  const run = el("button", "primary", "Run this step");
  run.dataset.testid = "wizard-run";
  const next = el("button", undefined, "Next");
  next.dataset.testid = "wizard-next";
  const buttons = el("div", "wizard-buttons");
  buttons.append(back, run, next);
  card.append(title, detail, progress, fix, chart, log, passwordRow, buttons);
  const empty = el("div", "machine", "Add a project in the bar at the top first: the wizard moves one of your projects.");
  root.append(top, rail, card, empty);

  const paths = (text: string): string[] =>
    text
      .split(",")
      .map((p) => p.trim())
      .filter((p) => p.length > 0);

  let host: string | null = null;
  let state: Migration | null = null;
  let at = 0;

  const passed = (s: Step) => state?.steps[s]?.passed === true;

  function draw(): void {
    rail.replaceChildren(
      ...STEPS.map(({ step, title: t }, i) => {
        const r = state?.steps[step];
        const li = el("li", i === at ? "current" : undefined, `${r ? (r.passed ? "✓" : "✗") : "·"} ${i + 1} ${t}`);
        li.dataset.testid = "wizard-step";
        li.dataset.step = step;
        li.dataset.state = r ? (r.passed ? "passed" : "failed") : "pending";
        return li;
      }),
    );
    const { step, title: t } = STEPS[at];
    const r = state?.steps[step];
    title.textContent = `${at + 1} · ${t}`;
    detail.textContent = r ? r.detail : "Not run yet.";
    detail.dataset.state = r ? (r.passed ? "passed" : "failed") : "pending";
    fix.textContent = r?.fix ? `Fix: ${r.fix}` : "";
    fix.hidden = !r?.fix;
    passwordRow.hidden = step !== "key";
    // The sweep there as a curve; here and there side by side.
    drawChart((step === "compare" || step === "training") && r?.passed ? (r.runs ?? []) : []);
    const lines = logs[step] ?? [];
    log.hidden = lines.length === 0;
    logSummary.textContent = `What it printed (${lines.length} line${lines.length === 1 ? "" : "s"})`;
    logLines.textContent = lines.join("\n");
    back.disabled = at === 0;
    // Next only once this step passed; the first step not passed is as far as it goes.
    next.disabled = at === STEPS.length - 1 || !passed(step);
  }

  function drawChart(runs: number[]): void {
    const key = runs.join("-");
    if (runs.length !== 1 && runs.length !== 2) {
      chart.hidden = true;
      charted = "";
      return;
    }
    if (key === charted) {
      chart.hidden = drawn !== key;
      return;
    }
    charted = key;
    chart.hidden = true;
    const svg =
      runs.length === 1
        ? backend.chartForRun(runs[0])
        : backend.compareRuns(runs[0], runs[1]).then((c) => c.chart_svg ?? "");
    svg
      .then((text) => {
        if (charted !== key || !text) return;
        chart.src = svgDataUrl(text);
        drawn = key;
        chart.hidden = false;
      })
      .catch(() => {
        // The figures are in the detail; the picture is a help, not the answer.
        chart.hidden = true;
      });
  }

  async function load(): Promise<void> {
    if (!host || !project.value) return;
    state = await backend.migrationState(host, project.value);
    remoteDir.value = state.remote_dir;
    alsoCopy.value = state.also_copy.join(", ");
    const first = STEPS.findIndex(({ step }) => !passed(step));
    at = first < 0 ? STEPS.length - 1 : first;
    draw();
  }

  function fail(e: unknown): void {
    detail.textContent = asAppError(e).message;
    detail.dataset.state = "failed";
  }

  run.addEventListener("click", () => {
    if (!host || !project.value) return;
    const { step } = STEPS[at];
    run.disabled = true;
    detail.textContent = `running step ${at + 1}…`;
    detail.dataset.state = "running";
    const pw = step === "key" && password.value ? password.value : null;
    fix.hidden = true;
    progress.textContent = "";
    const kept: string[] = [];
    logs[step] = kept;
    log.hidden = true;
    const shown = (line: string): void => {
      progress.textContent = line;
      progress.hidden = false;
      // pip can print thousands of lines: the last 200 are kept.
      kept.push(line);
      if (kept.length > 200) kept.shift();
    };
    backend
      .runMigrationStep(host, project.value, step, pw, remoteDir.value.trim() || null, paths(alsoCopy.value), shown)
      .then((m) => {
        state = m;
        draw();
      })
      .catch(fail)
      .finally(() => {
        // Typed once: gone from the page whatever happened.
        password.value = "";
        run.disabled = false;
        progress.hidden = true;
      });
  });
  next.addEventListener("click", () => {
    if (at < STEPS.length - 1 && passed(STEPS[at].step)) at += 1;
    draw();
  });
  back.addEventListener("click", () => {
    if (at > 0) at -= 1;
    draw();
  });
  project.addEventListener("change", () => void load().catch(fail));
  // A new list of paths to copy takes effect in the project step: the wizard goes back to it.
  alsoCopy.addEventListener("change", () => {
    const changed = paths(alsoCopy.value).join(",") !== (state?.also_copy ?? []).join(",");
    const projectAt = STEPS.findIndex(({ step }) => step === "project");
    if (changed && at > projectAt) {
      at = projectAt;
      draw();
    }
  });

  async function show(h: string): Promise<void> {
    host = h;
    const ps: Project[] = await backend.listProjects().catch(() => []);
    const keep = project.value;
    project.replaceChildren(...ps.map((p) => el("option", undefined, p.name)));
    if (ps.some((p) => p.name === keep)) project.value = keep;
    const none = ps.length === 0;
    empty.hidden = !none;
    card.hidden = none;
    rail.hidden = none;
    top.hidden = none;
    if (!none) await load().catch(fail);
  }

  return { root, show };
}
