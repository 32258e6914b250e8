// The Ledger panel: recorded runs, newest first, filtered by kind, workload, device and host; a
// click opens a run's report (facts and pictures); ticked runs are exported into Headroom's
// folder or, two of them, compared.
import type { Backend, Comparison, RunRecord, RunReport } from "../backend";
import { asAppError } from "../backend";
import { field, select } from "../controls";
import { el, formatBytes, svgDataUrl } from "../format";

/** `2026-11-30T12:21:05Z` → `11-30 12:21` (UTC, as stored). */
export function when(iso: string): string {
  const m = /^\d{4}-(\d\d-\d\d)T(\d\d:\d\d)/.exec(iso);
  return m ? `${m[1]} ${m[2]}` : iso;
}

/** What a run was, in a few words: a sweep's workload and device, else its note or device. */
export function what(r: RunRecord): string {
  const text = `${r.kind}: ${r.kind === "sweep" ? `${r.workload} · ${r.device}` : (r.note ?? r.device)}`;
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > 48 ? `${flat.slice(0, 47)}…` : flat;
}

export function runRow(r: RunRecord, ticked = false): HTMLTableRowElement {
  const tr = el("tr");
  tr.dataset.testid = "run-row";
  tr.dataset.kind = r.kind;
  tr.dataset.runId = String(r.id);
  const tick = el("input");
  tick.type = "checkbox";
  tick.checked = ticked;
  tick.dataset.testid = "run-tick";
  tick.title = `pick run ${r.id} to compare or export`;
  const box = el("td");
  box.append(tick);
  tr.append(
    box,
    el("td", "num", String(r.id)),
    el("td", undefined, when(r.started_at)),
    el("td", `run-status status-${r.status}`, r.status),
    el("td", "what", what(r)),
    el("td", "num", r.chosen_batch !== null ? String(r.chosen_batch) : "–"),
    el("td", "num", formatBytes(r.peak_bytes)),
  );
  return tr;
}

/** The filters: each field's chosen value, `""` for any. */
export interface Filters {
  kind: string;
  workload: string;
  device: string;
  host: string;
}

export function matches(r: RunRecord, f: Filters): boolean {
  return (
    (!f.kind || r.kind === f.kind) &&
    (!f.workload || r.workload === f.workload) &&
    (!f.device || r.device === f.device) &&
    (!f.host || r.host === f.host)
  );
}

const FORMATS = ["html", "md", "csv", "json", "png", "svg"];

export function runsPanel(backend: Backend): { root: HTMLElement; load(): Promise<void> } {
  const root = el("div", "panel runs");
  const status = el("div", "status");
  status.dataset.testid = "ledger-status";
  let runs: RunRecord[] = [];
  const ticked = new Set<number>();
  const filters: Filters = { kind: "", workload: "", device: "", host: "" };

  const filterRow = el("div", "form-row ledger-filters");
  const selects: Record<keyof Filters, HTMLSelectElement> = {
    kind: select("filter-kind", [""], ""),
    workload: select("filter-workload", [""], ""),
    device: select("filter-device", [""], ""),
    host: select("filter-host", [""], ""),
  };
  for (const k of Object.keys(selects) as (keyof Filters)[]) {
    selects[k].addEventListener("change", () => {
      filters[k] = selects[k].value;
      render();
    });
    filterRow.append(field(k, selects[k]));
  }

  const table = el("table", "runs-table");
  const head = el("tr");
  for (const h of ["", "run", "UTC", "status", "what", "batch", "peak"]) head.append(el("th", undefined, h));
  const thead = el("thead");
  thead.append(head);
  const tbody = el("tbody");
  tbody.dataset.testid = "runs-table";
  table.append(thead, tbody);

  const actions = el("div", "form-row ledger-actions");
  const compare = el("button", undefined, "Compare");
  compare.dataset.testid = "ledger-compare";
  const format = select("export-format", FORMATS, "html");
  const exportBtn = el("button", undefined, "Export");
  exportBtn.dataset.testid = "ledger-export";
  actions.append(compare, field("format", format), exportBtn);

  const detail = el("div", "ledger-detail");
  detail.dataset.testid = "ledger-detail";
  const scroller = el("div", "table-scroll");
  scroller.append(table);
  root.append(status, filterRow, scroller, actions, detail);

  let opened: number | null = null;

  function options(s: HTMLSelectElement, values: string[], keep: string): void {
    const all = ["", ...Array.from(new Set(values)).sort()];
    s.replaceChildren(
      ...all.map((v) => {
        const o = el("option", undefined, v || "any");
        o.value = v;
        return o;
      }),
    );
    s.value = all.includes(keep) ? keep : "";
  }

  function render(): void {
    const shown = runs.filter((r) => matches(r, filters));
    tbody.replaceChildren(...shown.map((r) => runRow(r, ticked.has(r.id))));
    refresh(shown.length);
  }

  /** The buttons and the status line, after a tick (the rows stay as they are). */
  function refresh(shown = tbody.children.length): void {
    compare.disabled = ticked.size !== 2;
    exportBtn.disabled = ticked.size === 0 && opened === null;
    status.textContent = runs.length
      ? `${shown} of ${runs.length} newest runs${ticked.size ? ` · ${ticked.size} picked` : ""}`
      : "no runs yet";
  }

  function showReport(r: RunReport): void {
    const title = el("h3", undefined, r.title);
    const parts: HTMLElement[] = [title];
    if (r.recommendation) parts.push(el("p", "recommendation", r.recommendation));
    for (const svg of r.charts) {
      const img = el("img", "chart");
      img.src = svgDataUrl(svg);
      img.alt = `a chart of run ${r.run_id}`;
      img.dataset.testid = "report-chart";
      parts.push(img);
    }
    const facts = el("table", "facts");
    facts.dataset.testid = "report-facts";
    for (const f of r.facts) {
      const tr = el("tr");
      tr.append(el("th", undefined, f.label), el("td", undefined, f.value));
      facts.append(tr);
    }
    parts.push(facts);
    detail.replaceChildren(...parts);
  }

  function showComparison(a: number, b: number, c: Comparison): void {
    const parts: HTMLElement[] = [el("h3", undefined, `run ${a} vs run ${b}`)];
    if (c.chart_svg) {
      const img = el("img", "chart");
      img.src = svgDataUrl(c.chart_svg);
      img.alt = `runs ${a} and ${b} side by side`;
      img.dataset.testid = "compare-chart";
      parts.push(img);
    }
    const pre = el("pre", "compare-lines", c.lines.join("\n"));
    pre.dataset.testid = "compare-lines";
    parts.push(pre);
    detail.replaceChildren(...parts);
  }

  tbody.addEventListener("click", (ev) => {
    const target = ev.target as HTMLElement;
    const row = target.closest("tr");
    if (!row) return;
    const id = Number(row.dataset.runId);
    if (target instanceof HTMLInputElement && target.type === "checkbox") {
      if (target.checked) ticked.add(id);
      else ticked.delete(id);
      refresh();
      return;
    }
    opened = id;
    exportBtn.disabled = false;
    detail.replaceChildren(el("div", "status", `opening run ${id}…`));
    backend
      .runReport(id)
      .then(showReport)
      .catch((e) => detail.replaceChildren(el("div", "error", asAppError(e).message)));
  });

  compare.addEventListener("click", () => {
    const [a, b] = Array.from(ticked).sort((x, y) => x - y);
    if (a === undefined || b === undefined) return;
    detail.replaceChildren(el("div", "status", `comparing runs ${a} and ${b}…`));
    backend
      .compareRuns(a, b)
      .then((c) => showComparison(a, b, c))
      .catch((e) => detail.replaceChildren(el("div", "error", asAppError(e).message)));
  });

  exportBtn.addEventListener("click", () => {
    const ids = ticked.size ? Array.from(ticked).sort((x, y) => x - y) : opened !== null ? [opened] : [];
    if (!ids.length) return;
    status.textContent = `exporting ${ids.length} run(s) as ${format.value}…`;
    backend
      .exportRuns(ids, format.value)
      .then((files) => {
        status.textContent = `wrote ${files.length} file(s)`;
        const list = el("ul", "export-files");
        list.dataset.testid = "export-files";
        for (const f of files) list.append(el("li", undefined, f));
        detail.replaceChildren(el("h3", undefined, "exported"), list);
      })
      .catch((e) => (status.textContent = `cannot export: ${asAppError(e).message}`));
  });

  async function load(): Promise<void> {
    try {
      runs = await backend.listRuns(200);
      status.classList.remove("error");
      const present = new Set(runs.map((r) => r.id));
      for (const id of Array.from(ticked)) if (!present.has(id)) ticked.delete(id);
      options(selects.kind, runs.map((r) => r.kind), filters.kind);
      options(selects.workload, runs.map((r) => r.workload).filter((w) => !/\s/.test(w)), filters.workload);
      options(selects.device, runs.map((r) => r.device), filters.device);
      options(selects.host, runs.map((r) => r.host), filters.host);
      for (const k of Object.keys(selects) as (keyof Filters)[]) filters[k] = selects[k].value;
      render();
    } catch (e) {
      status.textContent = `cannot read the ledger: ${asAppError(e).message}`;
      status.classList.add("error");
    }
  }
  return { root, load };
}
