// The popover: six tabs over one backend, opening on the Overview; About sits behind a small
// button in the header (and the tray menu).
import type { Backend } from "./backend";
import { el } from "./format";
import { aboutPanel } from "./panels/about";
import { memoryPanel } from "./panels/memory";
import { overviewPanel } from "./panels/overview";
import { projectBar } from "./panels/projects";
import { readinessPanel } from "./panels/readiness";
import { remotePanel } from "./panels/remote";
import { runsPanel } from "./panels/runs";
import { settingsPanel } from "./panels/settings";
import { sweepPanel } from "./panels/sweep";

export type Tab = "overview" | "readiness" | "sweep" | "memory" | "runs" | "remote" | "settings" | "about";
const TABS: Tab[] = ["overview", "readiness", "sweep", "memory", "runs", "remote", "settings", "about"];
/** Tabs behind a header link, not in the tab row. */
const CORNER: Tab[] = ["settings", "about"];

export function mount(root: HTMLElement, backend: Backend): { show(tab: Tab): void } {
  const overview = overviewPanel(backend, () => show("remote"));
  const readiness = readinessPanel(backend);
  let sweeping = false;
  let watching = false;
  const sweep = sweepPanel(backend, 500, (r) => {
    sweeping = r;
    bar.busy(sweeping, watching);
  });
  const memory = memoryPanel(backend, (r) => {
    watching = r;
    bar.busy(sweeping, watching);
  });
  // The user's training, at the top: every job on it shows in its panel.
  const bar = projectBar(backend, {
    sweep(name, devices) {
      show("sweep");
      sweep.runProject(name, devices);
    },
    watch(name, batch, device, release, profileWindow, numerics) {
      show("memory");
      memory.watchProject(name, batch, device, release, profileWindow, numerics);
    },
  });
  const runs = runsPanel(backend);
  const remote = remotePanel(backend, (t) => show(t));
  const about = aboutPanel(backend);
  const settings = settingsPanel(backend);
  const panels: Record<Tab, HTMLElement> = {
    overview: overview.root,
    readiness: readiness.root,
    sweep: sweep.root,
    memory: memory.root,
    runs: runs.root,
    remote: remote.root,
    settings: settings.root,
    about: about.root,
  };
  const nav = el("nav", "tabs");
  const buttons = new Map<Tab, HTMLButtonElement>();
  const titles: Record<Tab, string> = { overview: "Overview", readiness: "Readiness", sweep: "Sweep", memory: "Memory", runs: "Ledger", remote: "Remote", settings: "Settings", about: "About" };
  const main = el("main");
  const aboutButton = el("button", "about-link", "About");
  aboutButton.dataset.testid = "tab-about";
  aboutButton.addEventListener("click", () => show("about"));
  const settingsButton = el("button", "about-link", "Settings");
  settingsButton.dataset.testid = "tab-settings";
  settingsButton.addEventListener("click", () => show("settings"));
  for (const tab of TABS) {
    const b = tab === "about" ? aboutButton : tab === "settings" ? settingsButton : el("button", "tab", titles[tab]);
    if (!CORNER.includes(tab)) {
      b.dataset.testid = `tab-${tab}`;
      b.addEventListener("click", () => show(tab));
      nav.append(b);
    }
    buttons.set(tab, b);
    panels[tab].hidden = true;
    main.append(panels[tab]);
  }
  const header = el("header");
  const title = el("div", "title-row");
  const links = el("div", "corner-links");
  links.append(settingsButton, aboutButton);
  title.append(el("h1", undefined, "Headroom"), links);
  header.append(title, bar.root, nav);
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
    if (tab === "about") void about.load();
    if (tab === "settings") void settings.load();
  }
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") show(current);
  });
  void bar.load();
  // The verdict stands on a readiness check: run one at start, then open on the Overview.
  void readiness.load(false);
  checkedAt = Date.now();
  show("overview");
  // After the Overview: a popover made to open on a panel goes there at once.
  backend.onNavigate((p) => {
    if ((TABS as string[]).includes(p)) show(p as Tab);
  });
  return { show };
}
