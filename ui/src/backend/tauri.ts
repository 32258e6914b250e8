// The real backend: Tauri commands and a Channel for sweep progress.
import { Channel, invoke } from "@tauri-apps/api/core";
import { listen } from "@tauri-apps/api/event";

import type { Backend } from "./index";
import type { Report, RunRecord, SweepForm, SweepSnapshot } from "./ipc";

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
    onNavigate(f: (panel: string) => void) {
      void listen<string>("headroom://navigate", (e) => f(e.payload));
    },
  };
}
