// The Overview: where to run this work now (CPU, MPS, MLX or a remote host) and why, the memory
// by app group that contention is judged on, and the symptom rows the rules matched. Pushed by
// the app's background loop; nothing here computes a verdict.
import type { Backend, ColumnVerdict, ContentionReport, Group, OverviewSnapshot } from "../backend";
import { asAppError } from "../backend";
import { el, formatBytes } from "../format";

const STATUS: Record<string, string> = {
  recommended: "recommended",
  viable: "viable",
  risky: "risky",
  blocked: "blocked",
};
const COLUMN: Record<string, string> = { cpu: "CPU", mps: "MPS", mlx: "MLX", remote: "Remote" };
const GROUP: Record<Group, string> = {
  conferencing: "Calls",
  ide: "IDEs",
  browser: "Browsers",
  local_llm: "Local LLMs",
  training: "Training",
  headroom: "Headroom",
  other: "Other",
};

function card(c: ColumnVerdict): HTMLElement {
  const box = el("div", `column-card status-${c.status}`);
  box.dataset.testid = `column-${c.column}`;
  box.dataset.status = c.status;
  const head = el("div", "column-head");
  head.append(el("span", "column-name", COLUMN[c.column] ?? c.column), el("span", `chip chip-${c.status}`, STATUS[c.status]));
  box.append(head);
  for (const s of c.strengths) box.append(el("div", "strength", `+ ${s}`));
  for (const r of c.risks) box.append(el("div", "risk", `− ${r}`));
  for (const r of c.reasons) {
    const line = el("div", "reason", r.text);
    line.dataset.rule = r.rule;
    box.append(line);
  }
  return box;
}

/** Memory by group as one stacked bar over the machine's RAM, with the available share. */
export function memoryBar(c: ContentionReport): HTMLElement {
  const wrap = el("div", "membar-wrap");
  const bar = el("div", "membar");
  bar.dataset.testid = "memory-bar";
  const total = Math.max(c.system.total_bytes, 1);
  const legend = el("div", "membar-legend");
  for (const g of c.groups) {
    if (g.bytes <= 0) continue;
    const seg = el("div", `seg seg-${g.group}`);
    seg.style.width = `${Math.min(100, (100 * g.bytes) / total).toFixed(2)}%`;
    seg.title = `${GROUP[g.group]} ${formatBytes(g.bytes)}`;
    seg.dataset.group = g.group;
    bar.append(seg);
    const item = el("span", "legend-item");
    item.dataset.testid = `group-${g.group}`;
    const apps = g.apps
      .filter((a) => a.name !== GROUP[g.group])
      .slice(0, 2)
      .map((a) => a.name)
      .join(", ");
    item.append(el("span", `swatch seg-${g.group}`), document.createTextNode(`${GROUP[g.group]} ${formatBytes(g.bytes)}${apps ? ` (${apps})` : ""}`));
    legend.append(item);
  }
  const s = c.system;
  const facts = [
    `${formatBytes(s.available_bytes)} of ${formatBytes(s.total_bytes)} available`,
    `swap ${formatBytes(s.swap_used_bytes)}`,
    `pressure ${s.pressure ?? "unknown"}`,
  ];
  if (c.need) facts.push(`training needs ${formatBytes(c.need.bytes)}`);
  wrap.append(bar, legend, el("div", "membar-facts", facts.join(" · ")));
  return wrap;
}

export function renderOverview(root: HTMLElement, s: OverviewSnapshot, openRemote?: () => void): void {
  const d = s.decision;
  const head = el("div", "verdict-headline", d.headline);
  head.dataset.testid = "verdict-headline";
  head.dataset.verdict = d.verdict ?? "none";
  root.replaceChildren(head);
  if (d.verdict === "remote" && openRemote) {
    const go = el("button", "primary", "Move the work: open the Remote panel");
    go.dataset.testid = "go-remote";
    go.addEventListener("click", openRemote);
    root.append(go);
  }
  if (s.contention.raised) {
    const banner = el("div", "contention-banner");
    banner.dataset.testid = "contention-banner";
    banner.append(el("strong", undefined, "Memory contention"));
    for (const r of s.contention.reasons) banner.append(el("div", undefined, r));
    root.append(banner);
  }
  if (s.problem) root.append(el("div", "note", s.problem));
  const cards = el("div", "column-grid");
  for (const c of d.columns) cards.append(card(c));
  root.append(el("h3", undefined, "Memory now"), memoryBar(s.contention), el("h3", undefined, "Where to run"), cards);
  if (d.symptoms.length) {
    root.append(el("h3", undefined, "Symptom → hypothesis → action"));
    const table = el("table", "symptoms");
    for (const sym of d.symptoms) {
      const tr = el("tr");
      tr.dataset.testid = "symptom-row";
      tr.dataset.rule = sym.rule;
      const cell = el("td");
      cell.append(el("div", "symptom", sym.symptom), el("div", "hypothesis", `→ ${sym.hypothesis}`), el("div", "action", `→ ${sym.action}`), el("div", "observe", `observe: ${sym.observe}`));
      tr.append(cell);
      table.append(tr);
    }
    root.append(table);
  }
  const when = s.taken_at.slice(11, 19);
  const judged = el(
    "div",
    "machine",
    s.project
      ? `judged from project ${s.project}'s runs and this machine's checks`
      : "judged from every run on this machine (pick a project in Sweep to judge yours)",
  );
  judged.dataset.testid = "overview-project";
  root.append(judged);
  root.append(el("div", "machine", `updated ${when} UTC · every ${s.interval_s} s · ${s.contention.processes} processes sampled in ${s.contention.sample_ms.toFixed(1)} ms`));
}

export function overviewPanel(
  backend: Backend,
  openRemote?: () => void,
): { root: HTMLElement; load(): Promise<void> } {
  const root = el("div", "panel overview");
  const body = el("div");
  const status = el("div", "status", "deciding…");
  status.dataset.testid = "overview-status";
  root.append(status, body);
  const show = (s: OverviewSnapshot) => {
    status.textContent = "";
    renderOverview(body, s, openRemote);
  };
  backend.onOverview(show);
  async function load(): Promise<void> {
    try {
      show(await backend.overview());
    } catch (e) {
      status.textContent = `cannot decide: ${asAppError(e).message}`;
      status.dataset.state = "error";
    }
  }
  return { root, load };
}
