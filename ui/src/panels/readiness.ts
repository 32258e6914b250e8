// The Readiness panel: a traffic light per backend with its reason (and fix), then every
// Python environment found, then the machine.
import type { Backend, Light, PythonReport, Report } from "../backend";
import { asAppError } from "../backend";
import { el, formatBytes } from "../format";

const LABELS: Record<string, string> = {
  cpu: "CPU",
  mps: "MPS",
  cuda: "CUDA",
  mlx: "MLX",
  conditions: "Conditions",
};

/** A Python environment's own light: can it run torch, and where did the matmul land. */
export function pythonState(p: PythonReport): "green" | "yellow" | "red" {
  if (p.status !== "ok" || !p.facts) return p.status === "not_found" ? "yellow" : "red";
  const t = p.facts.torch;
  if (!t) return "yellow";
  return t.matmul_device ? "green" : "red";
}

function pythonDetail(p: PythonReport): string {
  if (!p.facts) return p.error ?? p.status;
  const f = p.facts;
  const parts = [`Python ${f.version} ${f.machine}`];
  if (p.binary_archs.length) parts.push(`binary ${p.binary_archs.join("+")}`);
  if (f.torch) {
    parts.push(`torch ${f.torch.version}`);
    parts.push(`MPS ${f.torch.mps_available ? "available" : f.torch.mps_built ? "built, unavailable" : "not built"}`);
    if (f.torch.cuda_available) parts.push(`CUDA ${f.torch.cuda_version ?? ""}`.trim());
    parts.push(f.torch.matmul_device ? `matmul on ${f.torch.matmul_device}` : `matmul failed: ${f.torch.matmul_error}`);
  } else {
    parts.push("no torch");
  }
  if (f.mlx) parts.push(`mlx ${f.mlx.version ?? ""} on ${f.mlx.default_device}`);
  return parts.join(" · ");
}

function lightRow(l: Light): HTMLElement {
  const row = el("div", `light-row state-${l.state}`);
  row.dataset.testid = `light-${l.backend}`;
  row.dataset.state = l.state;
  row.append(el("span", `dot dot-${l.state}`));
  const body = el("div", "light-body");
  body.append(el("div", "light-name", LABELS[l.backend] ?? l.backend));
  body.append(el("div", "light-reason", l.reason));
  if (l.fix) body.append(el("div", "light-fix", `Fix: ${l.fix}`));
  row.append(body);
  return row;
}

/** Draws `report` into `root` (replacing what was there). */
export function renderReport(root: HTMLElement, report: Report): void {
  root.replaceChildren();
  const lights = el("section", "lights");
  lights.dataset.testid = "lights";
  report.lights.forEach((l) => lights.append(lightRow(l)));
  root.append(lights);
  for (const n of report.notes) root.append(el("div", "note", n));

  root.append(el("h3", undefined, `Python environments (${report.pythons.length})`));
  const list = el("section", "pythons");
  // Those that can train first; those without torch folded into one line.
  const order = report.pythons.map((p, i) => ({ p, i }));
  const withTorch = order.filter(({ p }) => p.facts?.torch);
  const without = order.filter(({ p }) => !p.facts?.torch);
  const row = ({ p, i }: { p: (typeof report.pythons)[number]; i: number }): HTMLElement => {
    const row = el("div", "python-row");
    row.dataset.testid = "python-row";
    const state = pythonState(p);
    row.dataset.state = state;
    row.append(el("span", `dot dot-${state}`));
    const body = el("div", "python-body");
    const head = el("div", "python-path", p.path);
    head.title = p.path;
    body.append(head);
    body.append(el("div", "python-source", `${p.source}${i === report.primary ? " · judged above" : ""}`));
    body.append(el("div", "python-detail", pythonDetail(p)));
    row.append(body);
    return row;
  };
  withTorch.forEach((x) => list.append(row(x)));
  if (without.length > 0 && withTorch.length > 0) {
    const fold = el("details", "pythons-without-torch");
    fold.dataset.testid = "pythons-without-torch";
    fold.append(el("summary", undefined, `${without.length} more without torch`));
    without.forEach((x) => fold.append(row(x)));
    list.append(fold);
  } else {
    without.forEach((x) => list.append(row(x)));
  }
  root.append(list);

  const m = report.machine;
  const machine = el("section", "machine");
  machine.append(
    el(
      "div",
      undefined,
      `${m.os_name ?? m.os}${m.os_version ? " " + m.os_version : ""} · ${m.cpu ?? "CPU"} · ${m.arch} · ${formatBytes(m.memory_total_bytes)}`,
    ),
  );
  for (const g of m.gpus) machine.append(el("div", undefined, `GPU ${g.name}${g.cores ? ` · ${g.cores} cores` : ""}${g.memory_bytes ? ` · ${formatBytes(g.memory_bytes)}` : ""}`));
  if (report.libtorch) {
    machine.append(el("div", undefined, `Headroom's libtorch ${report.libtorch.version} · devices ${report.libtorch.devices.map((d) => d.device).join(", ")}`));
  } else if (report.libtorch_error) {
    machine.append(el("div", "error", `Headroom's libtorch: ${report.libtorch_error}`));
  }
  root.append(machine);
}

/** The panel: a refresh button, a status line, and the report. */
export function readinessPanel(backend: Backend): { root: HTMLElement; load(refresh: boolean): Promise<void> } {
  const root = el("div", "panel readiness");
  const bar = el("div", "panel-bar");
  const status = el("span", "status");
  status.dataset.testid = "readiness-status";
  const button = el("button", undefined, "Check again");
  button.dataset.testid = "refresh-readiness";
  bar.append(status, button);
  const body = el("div", "panel-body");
  root.append(bar, body);
  let busy = false;
  async function load(refresh: boolean): Promise<void> {
    if (busy) return;
    busy = true;
    button.disabled = true;
    try {
      const cached = refresh ? null : await backend.lastReadiness();
      if (cached) {
        renderReport(body, cached);
        status.textContent = "last check";
      } else {
        status.textContent = "checking Pythons and libtorch…";
        const started = Date.now();
        const report = await backend.readiness();
        renderReport(body, report);
        status.textContent = `checked in ${((Date.now() - started) / 1000).toFixed(1)} s`;
      }
    } catch (e) {
      const err = asAppError(e);
      status.textContent = `readiness failed: ${err.message}`;
      status.classList.add("error");
    } finally {
      busy = false;
      button.disabled = false;
    }
  }
  button.addEventListener("click", () => void load(true));
  return { root, load };
}
