// The About panel: Headroom's version and commit, and the `headroom` the app starts its workers
// from, with the libtorch that binary carries (in a bundle, the one installed beside the app).
import type { About, Backend } from "../backend";
import { asAppError } from "../backend";
import { el } from "../format";

/** The rows the panel shows, in order: [label, value, test id]. */
export function aboutRows(a: About): [string, string, string][] {
  const rows: [string, string, string][] = [
    ["Headroom", a.version, "about-version"],
    ["Built from commit", a.commit, "about-commit"],
    ["libtorch", a.libtorch ?? "unknown", "about-libtorch"],
    ["Worker", a.worker ?? "not found", "about-worker"],
  ];
  if (a.worker_version) rows.push(["Worker says", a.worker_version, "about-worker-version"]);
  return rows;
}

export function aboutPanel(backend: Backend): { root: HTMLElement; load(): Promise<void> } {
  const root = el("section", "panel about");
  root.dataset.testid = "panel-about";
  const status = el("div", "status", "");
  status.dataset.testid = "about-status";
  const table = el("table", "facts");
  root.append(el("h2", undefined, "About Headroom"), table, status);
  async function load(): Promise<void> {
    status.textContent = "asking the worker…";
    status.classList.remove("error");
    try {
      const a = await backend.about();
      table.replaceChildren();
      for (const [label, value, id] of aboutRows(a)) {
        const tr = el("tr");
        const td = el("td", undefined, value);
        td.dataset.testid = id;
        tr.append(el("th", undefined, label), td);
        table.append(tr);
      }
      if (a.worker_error) {
        status.textContent = a.worker_error;
        status.classList.add("error");
      } else {
        status.textContent = "";
      }
    } catch (e) {
      status.textContent = asAppError(e).message;
      status.classList.add("error");
    }
  }
  return { root, load };
}
