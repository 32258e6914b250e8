// The one door to the app's backend. Only this folder imports @tauri-apps; panels get a
// `Backend` and never know whether it is the real app or the mock their tests use.
import { ERROR_CODES } from "./ipc";
import type {
  About,
  AppError,
  ErrorCode,
  Comparison,
  EpochsForm,
  CheckReport,
  HostProfile,
  KeyInfo,
  MemorySnapshot,
  Migration, Step,
  RemoteRun,
  OverviewSnapshot,
  ProcessInfo,
  Project,
  Report,
  RunRecord,
  RunReport,
  Setting,
  SweepForm,
  SweepSnapshot,
} from "./ipc";

export type * from "./ipc";
// The enums' values, generated from Rust: the forms' option lists and the error codes.
export { DTYPES, ERROR_CODES, MODES, RELEASES } from "./ipc";

export interface Backend {
  /** Runs doctor now (seconds), records it, repaints the tray. */
  readiness(): Promise<Report>;
  /** The last report of this session, without running anything. */
  lastReadiness(): Promise<Report | null>;
  /** Starts a sweep; `onUpdate` gets the whole snapshot at every change. */
  startSweep(form: SweepForm, onUpdate: (s: SweepSnapshot) => void): Promise<SweepSnapshot>;
  cancelSweep(): Promise<boolean>;
  sweepSnapshot(): Promise<SweepSnapshot | null>;
  listRuns(limit?: number): Promise<RunRecord[]>;
  chartForRun(runId: number): Promise<string>;
  /** A run's facts and pictures, as `headroom ledger export` writes them. */
  runReport(runId: number): Promise<RunReport>;
  /** Writes the runs' reports into Headroom's `reports` folder; returns the files. */
  exportRuns(runIds: number[], format: string): Promise<string[]>;
  /** Two runs compared, as `headroom ledger compare`, with their curves side by side. */
  compareRuns(a: number, b: number): Promise<Comparison>;
  /** Trains one batch for several epochs and judges memory growth. */
  startEpochs(form: EpochsForm, onUpdate: (s: MemorySnapshot) => void): Promise<MemorySnapshot>;
  /** Python processes that may be watched, largest first. */
  listProcesses(): Promise<ProcessInfo[]>;
  startWatch(pid: number, onUpdate: (s: MemorySnapshot) => void): Promise<MemorySnapshot>;
  stopMemory(): Promise<boolean>;
  memorySnapshot(): Promise<MemorySnapshot | null>;
  /** The newest `headroom run` of the user's own training, shown as a memory job (none: null). */
  lastWrappedRun(): Promise<MemorySnapshot | null>;
  /** The latest decision table (computed now when the background loop has none yet). */
  overview(): Promise<OverviewSnapshot>;
  /** Calls `f` with every decision table the background loop computes. */
  onOverview(f: (s: OverviewSnapshot) => void): void;
  listHosts(): Promise<HostProfile[]>;
  addHost(profile: HostProfile, replace: boolean): Promise<HostProfile>;
  removeHost(name: string): Promise<boolean>;
  listKeys(): Promise<KeyInfo[]>;
  /** Makes ~/.ssh/headroom_ed25519 unless it exists; returns it. */
  makeKey(): Promise<KeyInfo>;
  /** Checks a host over ssh (seconds) and records it. */
  checkHost(name: string): Promise<CheckReport>;
  /** The saved migration of a project to a host (every step pending when there is none). */
  migrationState(name: string, project: string): Promise<Migration>;
  /** Runs one migration step (only after the ones before it passed); the password, for the key
   * step, is used once and never kept. */
  /** `onProgress` gets the step's progress lines while it runs (rsync's running total, pip's lines). */
  runMigrationStep(
    name: string,
    project: string,
    step: Step,
    password: string | null,
    remoteDir: string | null,
    alsoCopy: string[] | null,
    onProgress: (line: string) => void,
  ): Promise<Migration>;
  /** Opens the SSH tunnel to the host's screen and the OS viewer; returns the vnc:// URL. */
  openVnc(name: string): Promise<string>;
  closeVnc(): Promise<boolean>;
  /** The detached runs on a host (each mirrored into the ledger under the host's name). */
  remoteRuns(name: string): Promise<RemoteRun[]>;
  /** Starts a project's training on a host, detached: it goes on when this Mac sleeps. */
  startRemoteRun(name: string, project: string, batch: number | null): Promise<RemoteRun>;
  /** Ends a run on a host and its whole process group there. */
  stopRemoteRun(name: string, id: string): Promise<RemoteRun>;
  /** The app's version and commit, and the `headroom` it runs (its version and libtorch). */
  about(): Promise<About>;
  /** The configuration's settable keys ([app], [epochs], [contention], [decide]) with their
   * defaults and what the app made of them. */
  settings(): Promise<Setting[]>;
  /** Sets one key as `headroom config set` does; the settings after it. */
  setSetting(key: string, value: string): Promise<Setting[]>;
  /** The native folder chooser (opened at `start`); null when the user cancels. */
  pickFolder(start: string | null): Promise<string | null>;
  /** The user's projects (folder, Python, command with {batch}/{device}). */
  listProjects(): Promise<Project[]>;
  addProject(project: Project, replace: boolean): Promise<Project>;
  /** Picks the project the Overview is judged from (null: every run). */
  selectProject(name: string | null): Promise<boolean>;
  /** The project picked now (null: none yet): a page made again opens on it. */
  selectedProject(): Promise<string | null>;
  /** "Sweep my training": batch=auto on the project, live like a built-in sweep; with devices
   * ("Compare with the CPU": "cpu,mps", or "" for this machine's pair) over its {device}. */
  sweepProject(name: string, devices: string | null, onUpdate: (s: SweepSnapshot) => void): Promise<SweepSnapshot>;
  /** "Watch my training": runs the project and shows its memory per epoch live (batch null:
   * the one its last sweep chose; device null: this machine's accelerator). */
  watchProject(
    name: string,
    batch: number | null,
    device: string | null,
    release: string | null,
    profileWindow: number | null,
    numerics: string | null,
    onUpdate: (s: MemorySnapshot) => void,
  ): Promise<MemorySnapshot>;
  /** Calls `f` with a panel name when the tray asks for one. */
  onNavigate(f: (panel: string) => void): void;
}

/** Errors cross as `{code, message}`; anything else is wrapped into that shape (an unknown
 * code becomes `internal`, so a panel may branch on every code of the union). */
export function asAppError(e: unknown): AppError {
  if (e && typeof e === "object" && "code" in e && "message" in e) {
    const code = String((e as AppError).code);
    const known = (ERROR_CODES as readonly string[]).includes(code);
    return { code: known ? (code as ErrorCode) : "internal", message: String((e as AppError).message) };
  }
  return { code: "internal", message: e instanceof Error ? e.message : String(e) };
}
