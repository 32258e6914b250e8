// Previous runs from the ledger, newest first; a sweep's chart on click.
import type { Backend, RunRecord } from "../backend";
import { asAppError } from "../backend";
import { el, formatBytes, svgDataUrl } from "../format";

/** `2026-11-30T12:21:05Z` → `11-30 12:21` (UTC, as stored). */
export function when(iso: string): string {
  const m = /^\d{4}-(\d\d-\d\d)T(\d\d:\d\d)/.exec(iso);
  return m ? `${m[1]} ${m[2]}` : iso;
}

export function runRow(r: RunRecord): HTMLTableRowElement {
  const tr = el("tr");
  tr.dataset.testid = "run-row";
  tr.dataset.kind = r.kind;
  tr.dataset.runId = String(r.id);
  tr.append(
    el("td", "num", String(r.id)),
    el("td", undefined, when(r.started_at)),
    el("td", undefined, r.kind),
    el("td", `run-status status-${r.status}`, r.status),
    el("td", undefined, r.kind === "sweep" ? `${r.workload} · ${r.device}` : r.note ?? r.device),
    el("td", "num", r.chosen_batch !== null ? String(r.chosen_batch) : "–"),
    el("td", "num", formatBytes(r.peak_bytes)),
  );
  return tr;
}

export function runsPanel(backend: Backend): { root: HTMLElement; load(): Promise<void> } {
  const root = el("div", "panel runs");
  const status = el("div", "status");
  const table = el("table", "runs-table");
  const head = el("tr");
  for (const h of ["run", "started (UTC)", "kind", "status", "what", "batch", "peak"]) head.append(el("th", undefined, h));
  const thead = el("thead");
  thead.append(head);
  const tbody = el("tbody");
  tbody.dataset.testid = "runs-table";
  table.append(thead, tbody);
  const chart = el("img", "chart");
  chart.hidden = true;
  chart.alt = "the chart of the selected sweep";
  root.append(status, table, chart);
  tbody.addEventListener("click", (ev) => {
    const row = (ev.target as HTMLElement).closest("tr");
    if (!row || row.dataset.kind !== "sweep") return;
    backend
      .chartForRun(Number(row.dataset.runId))
      .then((svg) => {
        chart.src = svgDataUrl(svg);
        chart.hidden = false;
      })
      .catch((e) => (status.textContent = asAppError(e).message));
  });
  async function load(): Promise<void> {
    try {
      const runs = await backend.listRuns(30);
      tbody.replaceChildren(...runs.map(runRow));
      status.textContent = runs.length ? `${runs.length} newest runs` : "no runs yet";
    } catch (e) {
      status.textContent = `cannot read the ledger: ${asAppError(e).message}`;
    }
  }
  return { root, load };
}
