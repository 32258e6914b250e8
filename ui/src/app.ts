// The popover: six tabs over one backend, opening on the Overview.
import type { Backend } from "./backend";
import { el } from "./format";
import { memoryPanel } from "./panels/memory";
import { overviewPanel } from "./panels/overview";
import { readinessPanel } from "./panels/readiness";
import { remotePanel } from "./panels/remote";
import { runsPanel } from "./panels/runs";
import { sweepPanel } from "./panels/sweep";

export type Tab = "overview" | "readiness" | "sweep" | "memory" | "runs" | "remote";

export function mount(root: HTMLElement, backend: Backend): { show(tab: Tab): void } {
  const overview = overviewPanel(backend, () => show("remote"));
  const readiness = readinessPanel(backend);
  const sweep = sweepPanel(backend);
  const memory = memoryPanel(backend);
  const runs = runsPanel(backend);
  const remote = remotePanel(backend, (t) => show(t));
  const panels: Record<Tab, HTMLElement> = {
    overview: overview.root,
    readiness: readiness.root,
    sweep: sweep.root,
    memory: memory.root,
    runs: runs.root,
    remote: remote.root,
  };
  const nav = el("nav", "tabs");
  const buttons = new Map<Tab, HTMLButtonElement>();
  const titles: Record<Tab, string> = { overview: "Overview", readiness: "Readiness", sweep: "Sweep", memory: "Memory", runs: "Ledger", remote: "Remote" };
  const main = el("main");
  for (const tab of Object.keys(panels) as Tab[]) {
    const b = el("button", "tab", titles[tab]);
    b.dataset.testid = `tab-${tab}`;
    b.addEventListener("click", () => show(tab));
    buttons.set(tab, b);
    nav.append(b);
    panels[tab].hidden = true;
    main.append(panels[tab]);
  }
  const header = el("header");
  header.append(el("h1", undefined, "Headroom"), nav);
  root.replaceChildren(header, main);
  // Readiness refreshes when shown (the popover opening) unless checked in the last minute.
  let checkedAt = 0;
  let current: Tab = "overview";
  function show(tab: Tab): void {
    current = tab;
    for (const [t, b] of buttons) {
      b.classList.toggle("active", t === tab);
      panels[t].hidden = t !== tab;
    }
    if (tab === "readiness") {
      const stale = Date.now() - checkedAt > 60_000;
      void readiness.load(stale && checkedAt > 0);
      checkedAt = Date.now();
    }
    if (tab === "overview") void overview.load();
    if (tab === "sweep") void sweep.restore();
    if (tab === "memory") void memory.restore();
    if (tab === "runs") void runs.load();
    if (tab === "remote") void remote.load();
  }
  backend.onNavigate((p) => {
    if (p === "overview" || p === "readiness" || p === "sweep" || p === "memory" || p === "runs" || p === "remote") show(p);
  });
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") show(current);
  });
  // The verdict stands on a readiness check: run one at start, then open on the Overview.
  void readiness.load(false);
  checkedAt = Date.now();
  show("overview");
  return { show };
}
