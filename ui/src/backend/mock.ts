// A backend without the app, for the UI's unit tests (and for working on the UI in a browser):
// it records calls and replays what a test gives it.
import type { Backend } from "./index";
import type { EpochsForm, MemorySnapshot, OverviewSnapshot, ProcessInfo, Report, RunRecord, SweepForm, SweepSnapshot } from "./ipc";

export interface MockBackend extends Backend {
  calls: string[];
  forms: SweepForm[];
  epochForms: EpochsForm[];
  /** Sends a snapshot to the running memory job's listener. */
  pushMemory(s: MemorySnapshot): void;
  /** Sends a snapshot to the running sweep's listener, as the Channel would. */
  push(s: SweepSnapshot): void;
  navigate(panel: string): void;
  /** Sends a decision table as the background loop would. */
  pushOverview(s: OverviewSnapshot): void;
}

export function mockBackend(opts: {
  report?: Report;
  readinessError?: { code: string; message: string };
  runs?: RunRecord[];
  snapshot?: SweepSnapshot | null;
  startError?: { code: string; message: string };
  processes?: ProcessInfo[];
  overview?: OverviewSnapshot;
}): MockBackend {
  let overviewListener: ((s: OverviewSnapshot) => void) | null = null;
  let memoryListener: ((s: MemorySnapshot) => void) | null = null;
  const memoryStart = (kind: string, title: string): MemorySnapshot => ({
    running: true, kind, title, run_id: null, samples: [], readings: [], verdict: null, growth: null,
    crossed: false, message: "starting", status: "running", error: null, chart_svg: "",
  });
  let listener: ((s: SweepSnapshot) => void) | null = null;
  let navigate: ((p: string) => void) | null = null;
  let last: Report | null = null;
  const m: MockBackend = {
    calls: [],
    forms: [],
    epochForms: [],
    async startEpochs(form, onUpdate) {
      m.calls.push("startEpochs");
      m.epochForms.push(form);
      memoryListener = onUpdate;
      return memoryStart("epochs", `${form.workload} batch ${form.batch} on ${form.device}`);
    },
    async listProcesses() {
      m.calls.push("listProcesses");
      return opts.processes ?? [];
    },
    async startWatch(pid, onUpdate) {
      m.calls.push(`startWatch ${pid}`);
      memoryListener = onUpdate;
      return memoryStart("watch", `process ${pid}`);
    },
    async stopMemory() {
      m.calls.push("stopMemory");
      return true;
    },
    async memorySnapshot() {
      m.calls.push("memorySnapshot");
      return null;
    },
    pushMemory(s) {
      memoryListener?.(s);
    },
    async readiness() {
      m.calls.push("readiness");
      if (opts.readinessError) throw opts.readinessError;
      if (!opts.report) throw { code: "internal", message: "no report in this mock" };
      last = opts.report;
      return opts.report;
    },
    async lastReadiness() {
      m.calls.push("lastReadiness");
      return last;
    },
    async startSweep(form, onUpdate) {
      m.calls.push("startSweep");
      m.forms.push(form);
      if (opts.startError) throw opts.startError;
      listener = onUpdate;
      const first: SweepSnapshot = {
        running: true,
        run_id: null,
        workload: form.workload,
        device: form.device,
        device_name: null,
        budget_bytes: null,
        message: "starting the worker",
        points: [],
        summary: null,
        status: "running",
        error: null,
        chart_svg: "",
      };
      return first;
    },
    async cancelSweep() {
      m.calls.push("cancelSweep");
      return true;
    },
    async sweepSnapshot() {
      m.calls.push("sweepSnapshot");
      return opts.snapshot ?? null;
    },
    async listRuns() {
      m.calls.push("listRuns");
      return opts.runs ?? [];
    },
    async chartForRun(id) {
      m.calls.push(`chartForRun ${id}`);
      return "<svg xmlns='http://www.w3.org/2000/svg'></svg>";
    },
    async overview() {
      m.calls.push("overview");
      if (!opts.overview) throw { code: "internal", message: "no overview in this mock" };
      return opts.overview;
    },
    onOverview(f) {
      overviewListener = f;
    },
    pushOverview(s) {
      overviewListener?.(s);
    },
    onNavigate(f) {
      navigate = f;
    },
    push(s) {
      listener?.(s);
    },
    navigate(p) {
      navigate?.(p);
    },
  };
  return m;
}
