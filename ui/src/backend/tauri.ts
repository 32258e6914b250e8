// The real backend: Tauri commands and a Channel for sweep progress.
import { Channel, invoke } from "@tauri-apps/api/core";
import { listen } from "@tauri-apps/api/event";

import type { Backend } from "./index";
import type {
  About,
  CheckReport,
  Comparison,
  EpochsForm,
  HostProfile,
  KeyInfo,
  MemorySnapshot,
  MigrationCommands,
  OverviewSnapshot,
  ProcessInfo,
  Report,
  RunRecord,
  RunReport,
  SweepForm,
  SweepSnapshot,
} from "./ipc";

export function tauriBackend(): Backend {
  return {
    readiness: () => invoke<Report>("readiness"),
    lastReadiness: () => invoke<Report | null>("last_readiness"),
    startSweep(form: SweepForm, onUpdate: (s: SweepSnapshot) => void) {
      const channel = new Channel<SweepSnapshot>();
      channel.onmessage = onUpdate;
      return invoke<SweepSnapshot>("start_sweep", { form, onUpdate: channel });
    },
    cancelSweep: () => invoke<boolean>("cancel_sweep"),
    sweepSnapshot: () => invoke<SweepSnapshot | null>("sweep_snapshot"),
    listRuns: (limit?: number) => invoke<RunRecord[]>("list_runs", { limit: limit ?? null }),
    chartForRun: (runId: number) => invoke<string>("chart_for_run", { runId }),
    runReport: (runId: number) => invoke<RunReport>("run_report", { runId }),
    exportRuns: (runIds: number[], format: string) => invoke<string[]>("export_runs", { runIds, format }),
    compareRuns: (a: number, b: number) => invoke<Comparison>("compare_runs", { a, b }),
    startEpochs(form: EpochsForm, onUpdate: (s: MemorySnapshot) => void) {
      const channel = new Channel<MemorySnapshot>();
      channel.onmessage = onUpdate;
      return invoke<MemorySnapshot>("start_epochs", { form, onUpdate: channel });
    },
    listProcesses: () => invoke<ProcessInfo[]>("list_processes"),
    startWatch(pid: number, onUpdate: (s: MemorySnapshot) => void) {
      const channel = new Channel<MemorySnapshot>();
      channel.onmessage = onUpdate;
      return invoke<MemorySnapshot>("start_watch", { pid, onUpdate: channel });
    },
    stopMemory: () => invoke<boolean>("stop_memory"),
    memorySnapshot: () => invoke<MemorySnapshot | null>("memory_snapshot"),
    overview: () => invoke<OverviewSnapshot>("overview"),
    listHosts: () => invoke<HostProfile[]>("list_hosts"),
    addHost: (profile: HostProfile, replace: boolean) => invoke<HostProfile>("add_host", { profile, replace }),
    removeHost: (name: string) => invoke<boolean>("remove_host", { name }),
    listKeys: () => invoke<KeyInfo[]>("list_keys"),
    makeKey: () => invoke<KeyInfo>("make_key"),
    checkHost: (name: string) => invoke<CheckReport>("check_host", { name }),
    migration: (name: string) => invoke<MigrationCommands>("migration", { name, project: null }),
    openVnc: (name: string) => invoke<string>("open_vnc", { name }),
    closeVnc: () => invoke<boolean>("close_vnc"),
    about: () => invoke<About>("about"),
    onOverview(f: (s: OverviewSnapshot) => void) {
      void listen<OverviewSnapshot>("headroom://overview", (e) => f(e.payload));
    },
    onNavigate(f: (panel: string) => void) {
      void listen<string>("headroom://navigate", (e) => f(e.payload));
    },
  };
}
