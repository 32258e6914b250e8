// The popover: three tabs over one backend.
import type { Backend } from "./backend";
import { el } from "./format";
import { memoryPanel } from "./panels/memory";
import { readinessPanel } from "./panels/readiness";
import { runsPanel } from "./panels/runs";
import { sweepPanel } from "./panels/sweep";

export type Tab = "readiness" | "sweep" | "memory" | "runs";

export function mount(root: HTMLElement, backend: Backend): { show(tab: Tab): void } {
  const readiness = readinessPanel(backend);
  const sweep = sweepPanel(backend);
  const memory = memoryPanel(backend);
  const runs = runsPanel(backend);
  const panels: Record<Tab, HTMLElement> = {
    readiness: readiness.root,
    sweep: sweep.root,
    memory: memory.root,
    runs: runs.root,
  };
  const nav = el("nav", "tabs");
  const buttons = new Map<Tab, HTMLButtonElement>();
  const titles: Record<Tab, string> = { readiness: "Readiness", sweep: "Sweep", memory: "Memory", runs: "Runs" };
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
  let current: Tab = "readiness";
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
    if (tab === "sweep") void sweep.restore();
    if (tab === "memory") void memory.restore();
    if (tab === "runs") void runs.load();
  }
  backend.onNavigate((p) => {
    if (p === "readiness" || p === "sweep" || p === "memory" || p === "runs") show(p);
  });
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") show(current);
  });
  show("readiness");
  return { show };
}
