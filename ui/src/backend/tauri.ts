// The real backend: the generated command table (commands.ts, from the Rust contract) and
// Channels for progress. No command name is typed here.
import { Channel } from "@tauri-apps/api/core";
import { listen } from "@tauri-apps/api/event";

import { commands, EVENTS } from "./commands";
import type { Backend } from "./index";
import type { OverviewSnapshot } from "./ipc";

/** A Channel that hands every message to `f`. */
function channel<T>(f: (t: T) => void): Channel<T> {
  const c = new Channel<T>();
  c.onmessage = f;
  return c;
}

export function tauriBackend(): Backend {
  return {
    readiness: () => commands.readiness(),
    lastReadiness: () => commands.lastReadiness(),
    startSweep: (form, onUpdate) => commands.startSweep(form, channel(onUpdate)),
    cancelSweep: () => commands.cancelSweep(),
    sweepSnapshot: () => commands.sweepSnapshot(),
    listRuns: (limit?: number) => commands.listRuns(limit ?? null),
    chartForRun: (runId) => commands.chartForRun(runId),
    runReport: (runId) => commands.runReport(runId),
    exportRuns: (runIds, format) => commands.exportRuns(runIds, format),
    compareRuns: (a, b) => commands.compareRuns(a, b),
    startEpochs: (form, onUpdate) => commands.startEpochs(form, channel(onUpdate)),
    listProcesses: () => commands.listProcesses(),
    startWatch: (pid, onUpdate) => commands.startWatch(pid, channel(onUpdate)),
    stopMemory: () => commands.stopMemory(),
    memorySnapshot: () => commands.memorySnapshot(),
    lastWrappedRun: () => commands.lastWrappedRun(),
    overview: () => commands.overview(),
    listHosts: () => commands.listHosts(),
    addHost: (profile, replace) => commands.addHost(profile, replace),
    removeHost: (name) => commands.removeHost(name),
    listKeys: () => commands.listKeys(),
    makeKey: () => commands.makeKey(),
    checkHost: (name) => commands.checkHost(name),
    migrationState: (name, project) => commands.migrationState(name, project),
    runMigrationStep: (name, project, step, password, remoteDir, alsoCopy, onProgress) =>
      commands.runMigrationStep(name, project, step, password, remoteDir, alsoCopy, channel(onProgress)),
    openVnc: (name) => commands.openVnc(name),
    closeVnc: () => commands.closeVnc(),
    remoteRuns: (name) => commands.remoteRuns(name),
    startRemoteRun: (name, project, batch) => commands.startRemoteRun(name, project, batch),
    stopRemoteRun: (name, id) => commands.stopRemoteRun(name, id),
    about: () => commands.about(),
    settings: () => commands.settings(),
    setSetting: (key, value) => commands.setSetting(key, value),
    pickFolder: (start) => commands.pickFolder(start),
    listProjects: () => commands.listProjects(),
    addProject: (project, replace) => commands.addProject(project, replace),
    selectProject: (name) => commands.selectProject(name),
    selectedProject: () => commands.selectedProject(),
    sweepProject: (name, devices, onUpdate) => commands.sweepProject(name, devices, channel(onUpdate)),
    watchProject: (name, batch, device, release, profileWindow, numerics, onUpdate) =>
      commands.watchProject(name, batch, device, release, profileWindow, numerics, channel(onUpdate)),
    onOverview(f: (s: OverviewSnapshot) => void) {
      void listen<OverviewSnapshot>(EVENTS.overview, (e) => f(e.payload));
    },
    onNavigate(f: (panel: string) => void) {
      void listen<string>(EVENTS.navigate, (e) => f(e.payload));
      // A popover made to open on a panel is told so before its page starts.
      const start = (window as { __headroomPanel?: unknown }).__headroomPanel;
      if (typeof start === "string") f(start);
    },
  };
}
