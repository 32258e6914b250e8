// A backend without the app, for the UI's unit tests (and for working on the UI in a browser):
// it records calls and replays what a test gives it.
import type { Backend } from "./index";
import type {
  About,
  Project,
  RemoteRun,
  CheckReport,
  Comparison,
  EpochsForm,
  HostProfile,
  KeyInfo,
  MemorySnapshot,
  Migration,
  Step,
  StepResult,
  OverviewSnapshot,
  ProcessInfo,
  Report,
  RunKind,
  RunRecord,
  RunReport,
  Setting,
  SweepForm,
  SweepSnapshot,
} from "./ipc";

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
  /** What the backend's one check answers to the epochs form (as `start_epochs` would). */
  epochsError?: { code: string; message: string };
  /** The newest wrapped run the ledger would give. */
  wrapped?: MemorySnapshot;
  /** The memory job's state as the backend holds it (what `memorySnapshot` reads back). */
  memory?: MemorySnapshot;
  processes?: ProcessInfo[];
  overview?: OverviewSnapshot;
  hosts?: HostProfile[];
  keys?: KeyInfo[];
  check?: CheckReport;
  comparison?: Comparison;
  about?: About;
  settings?: Setting[];
  /** What the folder chooser answers (null: the user cancelled). */
  pickedFolder?: string | null;
  projects?: Project[];
  /** The project the app says is picked now (a page made again). */
  selectedProject?: string | null;
  /** How each migration step goes when run: passed, or failed with this detail and fix. */
  steps?: Partial<Record<Step, (password: string | null) => { passed: boolean; detail: string; fix?: string; runs?: number[] }>>;
  /** Progress lines a migration step sends while it runs. */
  progress?: Partial<Record<Step, string[]>>;
  /** Awaited after a step sent its progress and before it ends (a step still running). */
  stepGate?: () => Promise<void>;
  /** The detached runs on each host. */
  remoteRuns?: Record<string, RemoteRun[]>;
  /** What starting a run there answers instead of starting one. */
  remoteRunError?: { code: string; message: string };
}): MockBackend {
  const remote: Record<string, RemoteRun[]> = structuredClone(opts.remoteRuns ?? {});
  const projects: Project[] = [...(opts.projects ?? [])];
  let selected: string | null = opts.selectedProject ?? null;
  const hosts: HostProfile[] = [...(opts.hosts ?? [])];
  const migrations: Record<string, Migration> = {};
  let overviewListener: ((s: OverviewSnapshot) => void) | null = null;
  const settings: Setting[] = (opts.settings ?? []).map((x) => ({ ...x }));
  let memoryListener: ((s: MemorySnapshot) => void) | null = null;
  const memoryStart = (kind: RunKind, title: string): MemorySnapshot => ({
    running: true, kind, title, run_id: null, samples: [], joules_per_sample: [], readings: [], verdict: null, growth: null,
    crossed: false, message: "starting", status: "running", error: null, chart_svg: "", profile: null,
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
      if (opts.epochsError) throw opts.epochsError;
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
      return opts.memory ?? null;
    },
    async lastWrappedRun() {
      m.calls.push("lastWrappedRun");
      return opts.wrapped ?? null;
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
        host: form.host ?? null,
        device_name: null,
        budget_bytes: null,
        message: "starting the worker",
        points: [],
        summary: null,
        status: "running",
        error: null,
        chart_svg: "",
        comparison: null,
        warnings: [],
      };
      return first;
    },
    async listProjects() {
      m.calls.push("listProjects");
      return [...projects];
    },
    async addProject(project, replace) {
      m.calls.push("addProject");
      const at = projects.findIndex((p) => p.name === project.name);
      if (at >= 0 && !replace) throw { code: "bad_request", message: `a project named "${project.name}" exists already` };
      if (at >= 0) projects[at] = project;
      else projects.push(project);
      return project;
    },
    async selectProject(name) {
      m.calls.push(`selectProject:${name ?? ""}`);
      selected = name;
      return true;
    },
    async selectedProject() {
      m.calls.push("selectedProject");
      return selected;
    },
    async watchProject(name, batch, device, release, profileWindow, numerics, onUpdate) {
      m.calls.push(
        `watchProject:${name}:${batch ?? ""}:${device ?? ""}:${release ?? ""}${profileWindow ? `:profile ${profileWindow}` : ""}${numerics ? `:numerics ${numerics}` : ""}`,
      );
      const p = projects.find((x) => x.name === name);
      if (!p) throw { code: "bad_request", message: `no project named "${name}"` };
      memoryListener = onUpdate;
      return memoryStart("run", `${name}: ${p.command.join(" ")}`);
    },
    async sweepProject(name, devices, onUpdate) {
      m.calls.push(devices === null ? `sweepProject:${name}` : `sweepProject:${name}:${devices}`);
      listener = onUpdate;
      const p = projects.find((x) => x.name === name);
      if (!p) throw { code: "bad_request", message: `no project named "${name}"` };
      return {
        running: true, run_id: null, workload: p.command.join(" "), device: "script", host: null,
        device_name: null, budget_bytes: null, message: `starting ${name}`, points: [], summary: null,
        status: "running", error: null, chart_svg: "", comparison: null, warnings: [],
      };
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
    async runReport(id) {
      m.calls.push(`runReport ${id}`);
      const r = (opts.runs ?? []).find((x) => x.id === id);
      if (!r) throw { code: "not_found", message: `no run ${id} in the ledger` };
      const report: RunReport = {
        run_id: id,
        title: `run ${id}: ${r.kind} of ${r.workload} on ${r.device}`,
        facts: [
          { label: "libtorch", value: r.libtorch },
          { label: "host", value: r.host },
        ],
        charts: r.points > 0 ? ["<svg xmlns='http://www.w3.org/2000/svg'></svg>"] : [],
        recommendation: r.summary?.reason ?? null,
      };
      return report;
    },
    async exportRuns(ids, format) {
      m.calls.push(`exportRuns ${ids.join(",")} ${format}`);
      return ids.map((id) => `/reports/run-${id}.${format}`);
    },
    async compareRuns(a, b) {
      m.calls.push(`compareRuns ${a} ${b}`);
      return opts.comparison ?? { lines: [`run ${a} vs run ${b}`], chart_svg: null };
    },
    async overview() {
      m.calls.push("overview");
      if (!opts.overview) throw { code: "internal", message: "no overview in this mock" };
      return opts.overview;
    },
    async listHosts() {
      m.calls.push("listHosts");
      return [...hosts];
    },
    async addHost(profile, replace) {
      m.calls.push(`addHost ${profile.name}`);
      if (profile.host.includes(";")) throw { code: "invalid_input", message: `the host "${profile.host}" is refused` };
      const i = hosts.findIndex((h) => h.name === profile.name);
      if (i >= 0 && !replace) throw { code: "invalid_input", message: `a remote host named "${profile.name}" exists already; pick another name, or replace it (--replace; in the app, tick "replace a host of the same name")` };
      if (i >= 0) hosts.splice(i, 1);
      hosts.push(profile);
      return profile;
    },
    async removeHost(name) {
      m.calls.push(`removeHost ${name}`);
      return true;
    },
    async listKeys() {
      m.calls.push("listKeys");
      return opts.keys ?? [];
    },
    async makeKey() {
      m.calls.push("makeKey");
      return { path: "/home/ada/.ssh/headroom_ed25519", public_key: "ssh-ed25519 AAAAmock headroom" };
    },
    async checkHost(name) {
      m.calls.push(`checkHost ${name}`);
      if (!opts.check) throw { code: "internal", message: "no check in this mock" };
      return opts.check;
    },
    async migrationState(name, project) {
      m.calls.push(`migrationState ${name} ${project}`);
      return migrations[`${name}--${project}`] ?? { host: name, project, remote_dir: `headroom-projects/${project}`, also_copy: [], steps: {} };
    },
    async runMigrationStep(name, project, step, password, remoteDir, alsoCopy, onProgress) {
      m.calls.push(`runMigrationStep ${name} ${project} ${step}${password ? " with a password" : ""}`);
      const key = `${name}--${project}`;
      const mig: Migration = migrations[key] ?? { host: name, project, remote_dir: remoteDir || `headroom-projects/${project}`, also_copy: [], steps: {} };
      const order: Step[] = ["host", "key", "check", "headroom", "project", "training", "compare", "screen"];
      if (alsoCopy && alsoCopy.join(",") !== mig.also_copy.join(",")) {
        mig.also_copy = [...alsoCopy];
        m.calls.push(`alsoCopy ${alsoCopy.join(",")}`);
        for (const s of order.slice(order.indexOf("project"))) delete mig.steps[s];
      }
      const before = order.slice(0, order.indexOf(step)).find((s) => !mig.steps[s]?.passed);
      if (before) throw { code: "invalid_input", message: `step ${step} needs step ${before} to pass first` };
      for (const line of opts.progress?.[step] ?? []) onProgress(line);
      await opts.stepGate?.();
      const how = opts.steps?.[step]?.(password) ?? { passed: true, detail: `${step} done` };
      const r: StepResult = { step, passed: how.passed, detail: how.detail, fix: how.fix ?? null, at: "2026-12-02T05:00:00Z", seconds: 0.1, runs: how.runs ?? [] };
      mig.steps = { ...mig.steps, [step]: r };
      migrations[key] = mig;
      return structuredClone(mig);
    },
    async openVnc(name) {
      m.calls.push(`openVnc ${name}`);
      return "vnc://localhost:5999";
    },
    async closeVnc() {
      m.calls.push("closeVnc");
      return true;
    },
    async remoteRuns(name) {
      m.calls.push(`remoteRuns ${name}`);
      return structuredClone(remote[name] ?? []);
    },
    async startRemoteRun(name, project, batch) {
      m.calls.push(`startRemoteRun ${name} ${project} ${batch ?? ""}`);
      if (opts.remoteRunError) throw opts.remoteRunError;
      const run: RemoteRun = {
        id: `20261205-${(remote[name]?.length ?? 0) + 1}`, state: "running", summary: "0 steps · started now",
        last_line: null, command: `.venv/bin/python train.py (${project})`, ledger_run_id: 40 + (remote[name]?.length ?? 0),
      };
      remote[name] = [run, ...(remote[name] ?? [])];
      return structuredClone(run);
    },
    async stopRemoteRun(name, id) {
      m.calls.push(`stopRemoteRun ${name} ${id}`);
      const run = (remote[name] ?? []).find((r) => r.id === id);
      if (!run) throw { code: "invalid_input", message: `no detached run ${id} here` };
      run.state = "interrupted";
      return structuredClone(run);
    },
    async settings() {
      m.calls.push("settings");
      return settings;
    },
    async setSetting(key, value) {
      m.calls.push(`setSetting ${key}=${value}`);
      const s = settings.find((x) => x.key === key);
      if (!s) throw { code: "invalid_input", message: `config set ${key}: no such key` };
      if (key.startsWith("decide.") && !(Number(value) >= 0 && Number(value) <= 1)) {
        throw { code: "invalid_input", message: `${key} = ${value} must be a share between 0 and 1` };
      }
      s.value = value;
      return settings;
    },
    async pickFolder(start) {
      m.calls.push(`pickFolder ${start ?? ""}`);
      return opts.pickedFolder ?? null;
    },
    async about() {
      m.calls.push("about");
      if (!opts.about) throw { code: "internal", message: "no about in this mock" };
      return opts.about;
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
