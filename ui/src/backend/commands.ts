// Generated from the IPC contract by src-tauri/src/contract.rs. Do not edit:
// run `HEADROOM_BLESS=1 cargo test -p headroom-app` after changing the contract.
import { Channel, invoke } from "@tauri-apps/api/core";

import type { About, CheckReport, Comparison, EpochsForm, HostProfile, KeyInfo, MemorySnapshot, Migration, OverviewSnapshot, ProcessInfo, Project, RemoteRun, Report, RunRecord, RunReport, Setting, Step, SweepForm, SweepSnapshot } from "./ipc";

/** The events the app emits. */
export const EVENTS = { overview: "headroom://overview", navigate: "headroom://navigate" } as const;

/** Every command the UI may call, by its Rust name in camelCase. */
export const commands = {
  /** `commands::readiness` */
  readiness: (): Promise<Report> => invoke<Report>("readiness"),
  /** `commands::last_readiness` */
  lastReadiness: (): Promise<Report | null> => invoke<Report | null>("last_readiness"),
  /** `commands::start_sweep` */
  startSweep: (form: SweepForm, onUpdate: Channel<SweepSnapshot>): Promise<SweepSnapshot> => invoke<SweepSnapshot>("start_sweep", { form, onUpdate }),
  /** `commands::cancel_sweep` */
  cancelSweep: (): Promise<boolean> => invoke<boolean>("cancel_sweep"),
  /** `commands::sweep_snapshot` */
  sweepSnapshot: (): Promise<SweepSnapshot | null> => invoke<SweepSnapshot | null>("sweep_snapshot"),
  /** `commands::list_runs` */
  listRuns: (limit: number | null): Promise<Array<RunRecord>> => invoke<Array<RunRecord>>("list_runs", { limit }),
  /** `commands::chart_for_run` */
  chartForRun: (runId: number): Promise<string> => invoke<string>("chart_for_run", { runId }),
  /** `ledger::run_report` */
  runReport: (runId: number): Promise<RunReport> => invoke<RunReport>("run_report", { runId }),
  /** `ledger::export_runs` */
  exportRuns: (runIds: Array<number>, format: string): Promise<Array<string>> => invoke<Array<string>>("export_runs", { runIds, format }),
  /** `ledger::compare_runs` */
  compareRuns: (a: number, b: number): Promise<Comparison> => invoke<Comparison>("compare_runs", { a, b }),
  /** `memory::start_epochs` */
  startEpochs: (form: EpochsForm, onUpdate: Channel<MemorySnapshot>): Promise<MemorySnapshot> => invoke<MemorySnapshot>("start_epochs", { form, onUpdate }),
  /** `memory::list_processes` */
  listProcesses: (): Promise<Array<ProcessInfo>> => invoke<Array<ProcessInfo>>("list_processes"),
  /** `memory::start_watch` */
  startWatch: (pid: number, onUpdate: Channel<MemorySnapshot>): Promise<MemorySnapshot> => invoke<MemorySnapshot>("start_watch", { pid, onUpdate }),
  /** `memory::stop_memory` */
  stopMemory: (): Promise<boolean> => invoke<boolean>("stop_memory"),
  /** `memory::memory_snapshot` */
  memorySnapshot: (): Promise<MemorySnapshot | null> => invoke<MemorySnapshot | null>("memory_snapshot"),
  /** `memory::last_wrapped_run` */
  lastWrappedRun: (): Promise<MemorySnapshot | null> => invoke<MemorySnapshot | null>("last_wrapped_run"),
  /** `memory::watch_project` */
  watchProject: (name: string, batch: number | null, device: string | null, release: string | null, profileWindow: number | null, numerics: string | null, onUpdate: Channel<MemorySnapshot>): Promise<MemorySnapshot> => invoke<MemorySnapshot>("watch_project", { name, batch, device, release, profileWindow, numerics, onUpdate }),
  /** `overview::overview` */
  overview: (): Promise<OverviewSnapshot> => invoke<OverviewSnapshot>("overview"),
  /** `remote::list_hosts` */
  listHosts: (): Promise<Array<HostProfile>> => invoke<Array<HostProfile>>("list_hosts"),
  /** `remote::add_host` */
  addHost: (profile: HostProfile, replace: boolean): Promise<HostProfile> => invoke<HostProfile>("add_host", { profile, replace }),
  /** `remote::remove_host` */
  removeHost: (name: string): Promise<boolean> => invoke<boolean>("remove_host", { name }),
  /** `remote::list_keys` */
  listKeys: (): Promise<Array<KeyInfo>> => invoke<Array<KeyInfo>>("list_keys"),
  /** `remote::make_key` */
  makeKey: (): Promise<KeyInfo> => invoke<KeyInfo>("make_key"),
  /** `remote::check_host` */
  checkHost: (name: string): Promise<CheckReport> => invoke<CheckReport>("check_host", { name }),
  /** `remote::migration_state` */
  migrationState: (name: string, project: string): Promise<Migration> => invoke<Migration>("migration_state", { name, project }),
  /** `remote::run_migration_step` */
  runMigrationStep: (name: string, project: string, step: Step, password: string | null, remoteDir: string | null, alsoCopy: Array<string> | null, onUpdate: Channel<string>): Promise<Migration> => invoke<Migration>("run_migration_step", { name, project, step, password, remoteDir, alsoCopy, onUpdate }),
  /** `remote::open_vnc` */
  openVnc: (name: string): Promise<string> => invoke<string>("open_vnc", { name }),
  /** `remote::close_vnc` */
  closeVnc: (): Promise<boolean> => invoke<boolean>("close_vnc"),
  /** `remote::remote_runs` */
  remoteRuns: (name: string): Promise<Array<RemoteRun>> => invoke<Array<RemoteRun>>("remote_runs", { name }),
  /** `remote::start_remote_run` */
  startRemoteRun: (name: string, project: string, batch: number | null): Promise<RemoteRun> => invoke<RemoteRun>("start_remote_run", { name, project, batch }),
  /** `remote::stop_remote_run` */
  stopRemoteRun: (name: string, id: string): Promise<RemoteRun> => invoke<RemoteRun>("stop_remote_run", { name, id }),
  /** `about::about` */
  about: (): Promise<About> => invoke<About>("about"),
  /** `projects::list_projects` */
  listProjects: (): Promise<Array<Project>> => invoke<Array<Project>>("list_projects"),
  /** `projects::add_project` */
  addProject: (project: Project, replace: boolean): Promise<Project> => invoke<Project>("add_project", { project, replace }),
  /** `projects::select_project` */
  selectProject: (name: string | null): Promise<boolean> => invoke<boolean>("select_project", { name }),
  /** `projects::selected_project` */
  selectedProject: (): Promise<string | null> => invoke<string | null>("selected_project"),
  /** `projects::sweep_project` */
  sweepProject: (name: string, devices: string | null, onUpdate: Channel<SweepSnapshot>): Promise<SweepSnapshot> => invoke<SweepSnapshot>("sweep_project", { name, devices, onUpdate }),
  /** `settings::settings` */
  settings: (): Promise<Array<Setting>> => invoke<Array<Setting>>("settings"),
  /** `settings::set_setting` */
  setSetting: (key: string, value: string): Promise<Array<Setting>> => invoke<Array<Setting>>("set_setting", { key, value }),
  /** `desktop::pick_folder` */
  pickFolder: (start: string | null): Promise<string | null> => invoke<string | null>("pick_folder", { start }),
};
