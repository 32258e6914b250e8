// Generated from the Rust types by src-tauri/src/ipc.rs (ts-rs). Do not edit:
// run `HEADROOM_BLESS=1 cargo test -p headroom-app` after changing them.
// Byte counts are u64 in Rust and plain numbers in JSON (all far below 2^53).

export type Report = { machine: MachineFacts, conditions: Conditions, libtorch: LibtorchFacts | null, 
/**
 * Why Headroom's libtorch could not be asked (its worker crashed or hung).
 */
libtorch_error: string | null, pythons: Array<PythonReport>, 
/**
 * Index into `pythons` of the interpreter the lights judge.
 */
primary: number | null, lights: Array<Light>, 
/**
 * Facts worth a line that are not a light (version drift, …).
 */
notes: Array<string>, };

export type MachineFacts = { 
/**
 * `linux` or `macos`.
 */
os: string, os_name: string | null, os_version: string | null, kernel: string | null, cpu: string | null, cpu_cores: number | null, 
/**
 * The hardware's architecture (`arm64` on Apple Silicon even when this process is translated).
 */
arch: string, 
/**
 * The architecture this `headroom` binary was built for.
 */
process_arch: string, apple_silicon: boolean, 
/**
 * This process runs under Rosetta (macOS `sysctl.proc_translated`); `None` where there is no
 * such thing (Linux, Intel Macs).
 */
translated: boolean | null, memory_total_bytes: number | null, gpus: Array<GpuFacts>, 
/**
 * Running inside the macOS App Sandbox, which hides other environments' files.
 */
sandboxed: boolean, 
/**
 * Linux: the container or VM this runs in (none found: `None`).
 */
isolation: Isolation | null, };

export type GpuFacts = { name: string, 
/**
 * GPU cores (Apple Silicon reports them).
 */
cores: number | null, memory_bytes: number | null, driver: string | null, 
/**
 * Which command or file said so.
 */
source: string, };

export type Isolation = { 
/**
 * `Docker`, `Podman`, `Kubernetes`, `LXC`, `containerd`.
 */
container: string | null, 
/**
 * `Apple Virtualization`, `QEMU`, `Docker Desktop (LinuxKit)`, `VMware`, `VirtualBox`,
 * `Hyper-V`, `Parallels`, `Xen`, `a hypervisor` (the CPU's flag alone).
 */
vm: string | null, 
/**
 * Folders shared from the host: where they are mounted and through what (`virtiofs`,
 * `9p`, `fuse.grpcfuse`, …).
 */
shared_folders: Array<SharedFolder>, 
/**
 * The files that said so, for the reader who doubts it.
 */
evidence: Array<string>, };

export type SharedFolder = { path: string, fs_type: string, };

export type Conditions = { 
/**
 * `None` when the OS exposes no power supply (servers, VMs).
 */
power_source: PowerSource | null, battery: BatteryFacts | null, 
/**
 * `None` when the OS does not say.
 */
low_power_mode: boolean | null, 
/**
 * Whether the OS exposes any thermal state at all.
 */
thermal_exposed: boolean, 
/**
 * Recorded thermal or performance warnings (throttling).
 */
thermal_warnings: Array<string>, 
/**
 * Linux cpufreq governor of CPU 0.
 */
cpu_governor: string | null, };

export type PowerSource = "ac" | "battery" | "ups" | "unknown";

export type BatteryFacts = { percent: number | null, 
/**
 * `charging`, `discharging`, `AC attached; not charging`, …
 */
state: string | null, 
/**
 * Time left as the OS estimates it (`3:06`).
 */
remaining: string | null, };

export type LibtorchFacts = { version: string, cuda_devices: number, has_mps: boolean, threads: number, devices: Array<DeviceCheck>, };

export type DeviceCheck = { device: string, name: string, memory_total_bytes: number, matmul_ok: boolean, matmul_ms: number | null, 
/**
 * Where the result tensor lives (proves the GPU ran it, not the CPU).
 */
result_device: string | null, error: string | null, };

export type PythonReport = { path: string, source: string, 
/**
 * Named by `--python` or the active environment.
 */
explicit: boolean, status: ProbeStatus, 
/**
 * What went wrong and what to do, when status is not `ok`.
 */
error: string | null, 
/**
 * The architectures in the interpreter's binary (`x86_64` only on Apple Silicon means it
 * can only run under Rosetta); empty when unknown.
 */
binary_archs: Array<string>, facts: PythonFacts | null, seconds: number, };

export type ProbeStatus = "ok" | "not_found" | "timed_out" | "crashed" | "failed";

export type PythonFacts = { executable: string, version: string, implementation: string, 
/**
 * `platform.machine()`: `x86_64` in a Python translated by Rosetta on Apple Silicon.
 */
machine: string, platform: string, prefix: string, in_venv: boolean, torch: TorchFacts | null, torch_error: string | null, mlx: MlxFacts | null, mlx_error: string | null, };

export type TorchFacts = { version: string, cuda_version: string | null, mps_built: boolean, mps_available: boolean, cuda_available: boolean, cuda_devices: Array<string>, 
/**
 * Where a 64×64 matmul on the best available device put its result (`mps:0`, `cuda:0`, `cpu`).
 */
matmul_device: string | null, matmul_error: string | null, };

export type MlxFacts = { version: string | null, default_device: string, };

export type Light = { 
/**
 * `cpu`, `mps`, `cuda`, `mlx`, or `conditions` (what skews measurements).
 */
backend: string, state: LightState, reason: string, fix: string | null, };

export type LightState = "green" | "yellow" | "red" | "off";

export type Point = { batch: number, status: PointStatus, 
/**
 * Samples per second over the timed steps (batch / p50 step time is not used: this is
 * total samples over total timed wall time).
 */
samples_per_s: number | null, step_ms_p50: number | null, step_ms_p95: number | null, 
/**
 * Host preparation plus the copy to the device, per step.
 */
data_ms: number | null, 
/**
 * Forward pass and loss, per step.
 */
forward_ms: number | null, 
/**
 * Backward pass and optimizer step, per step (0 in `infer` mode).
 */
backward_ms: number | null, 
/**
 * Peak bytes held by live tensors on the accelerator (allocator stats), reset per point.
 */
peak_allocated_bytes: number | null, 
/**
 * Peak bytes the accelerator's caching allocator held, reset per point.
 */
peak_reserved_bytes: number | null, 
/**
 * Peak resident memory of the worker process during this point.
 */
peak_process_bytes: number | null, 
/**
 * The memory figure the budget applies to (reserved on accelerators, process on the CPU).
 */
peak_bytes: number | null, 
/**
 * What the planner predicted for `peak_bytes` before running, when it could.
 */
predicted_peak_bytes: number | null, warmup_steps: number, timed_steps: number, 
/**
 * Floating-point operations per sample of one step, where the workload knows them.
 */
flops_per_sample: number | null, 
/**
 * Why the point is not `ok`.
 */
message: string | null, 
/**
 * Mean accelerator utilisation (0–1) while the point ran, sampled by the supervisor
 * (NVML through `nvidia-smi`, macOS IOAccelerator "Device Utilization %"); `None` when
 * not sampled (CPU runs, older ledgers).
 */
gpu_busy?: number | null, 
/**
 * Seconds spent in every step the point ran: its first step at the new shape, warm-up,
 * timed and split steps. The rest of a sweep's wall time is the tool's own cost (start,
 * planning, making inputs, freeing memory between points). `None` from older workers.
 */
steps_s?: number | null, 
/**
 * Seconds of the point's first step, which allocates memory and picks kernels for the new
 * shape and is never timed.
 */
first_step_s?: number | null, 
/**
 * The spread of the timed steps: their coefficient of variation (0.05: 5 %).
 */
step_cv?: number | null, 
/**
 * What the rest of the machine did while the point was timed (local sweeps).
 */
load?: PointLoad | null, 
/**
 * The machine's state while its steps were timed: thermal, power source, power, energy
 * (local sweeps).
 */
conditions?: TimedConditions, 
/**
 * Seconds of its timed steps, and why timing stopped there.
 */
timed_s?: number | null, timed_until?: TimedUntil | null, 
/**
 * The samples/s this batch first measured, when that figure broke the curve's shape (a
 * drop between two rises) and the point was measured again; the point's figures are the
 * second measurement's.
 */
remeasured_from?: number | null, };

export type PointStatus = "ok" | "oom" | "over_budget" | "error";

export type SweepSummary = { 
/**
 * The batch with the highest samples/s.
 */
best_batch: number | null, best_samples_per_s: number | null, 
/**
 * Smallest batch within [`crate::summary::KNEE_SHARE`] of the best throughput.
 */
knee_batch: number | null, 
/**
 * Largest measured batch that stayed within the budget.
 */
max_fit_batch: number | null, 
/**
 * Smallest batch that failed (OOM or over budget), bounding `max_fit_batch` from above.
 */
first_failing_batch: number | null, 
/**
 * The largest batch the memory line puts within the budget, where no start ran it: the
 * knee was found below it and the batch past it was refused on its prediction (a sweep
 * over the user's script, [`crate::planner::Planner::unverified_fit`]).
 */
predicted_fit_batch?: number, 
/**
 * What stopped the search: `oom`, `budget`, `max_batch`, `list`, `error`.
 */
limit: string, 
/**
 * The batch Headroom recommends.
 */
recommended_batch: number | null, 
/**
 * Why, in one sentence with the numbers.
 */
reason: string, peak_bytes_at_recommended: number | null, 
/**
 * The throughput was still rising at the largest batch measured: no knee is known (the
 * curve's top is not one), and the largest batch is recommended only as the best so far.
 */
still_rising: boolean, 
/**
 * Why the answer is uncertain, when points it rests on were measured beside other work or
 * stayed noisy (their warnings name the cause).
 */
uncertain?: string | null, 
/**
 * The most energy-efficient batch against the recommended one, where the points carry
 * their energy.
 */
energy?: EnergyTradeoff, 
/**
 * The answer in one line with its doubt: "batch 64 · 10.0 k samples/s · 665 MiB · ±17 %,
 * machine busy" ([`crate::summary::headline`]); `None` without a recommendation, and in
 * summaries recorded before it was written.
 */
headline?: string, 
/**
 * The per-point cautions in one line: "5 of 7 points noisy (±10–19 %): timed beside other
 * work" ([`crate::summary::caution_line`]); `None` when no point carries one.
 */
caution_line?: string, };

export type EnergyTradeoff = { 
/**
 * The batch with the fewest joules per sample.
 */
efficient_batch: number, efficient_samples_per_joule: number, 
/**
 * The batch chosen for speed, and its samples per joule.
 */
chosen_batch: number, chosen_samples_per_joule: number, 
/**
 * The efficient batch's throughput over the chosen one's (1: the same batch).
 */
speed_share: number, 
/**
 * The efficient batch's joules per sample over the chosen one's.
 */
energy_share: number, 
/**
 * A point was timed on battery power.
 */
on_battery: boolean, 
/**
 * [`EnergyTradeoff::sentence`], for the app and other readers of the JSON.
 */
text: string, };

export type DetachedState = "running" | "complete" | "failed" | "interrupted";

export type RemoteRun = { id: string, state: DetachedState, 
/**
 * Its epoch, steps, samples/s, memory and start, in one line.
 */
summary: string, last_line: string | null, command: string, 
/**
 * Its row in this ledger (mirrored under the host's name).
 */
ledger_run_id: number | null, };

export type Hello = { protocol: number, headroom_version: string, libtorch: string, 
/**
 * The resolved device, e.g. `cuda:0`.
 */
device: string, 
/**
 * A human name for it, e.g. the GPU model or the CPU brand.
 */
device_name: string, 
/**
 * Total memory of the device (RAM for the CPU).
 */
capacity_bytes: number, 
/**
 * Memory available to the run when it started.
 */
available_bytes: number, 
/**
 * The budget in bytes after resolving the request's spec.
 */
budget_bytes: number, threads: number, workload: string, input_shape: Array<number>, parameters: number, pid: number, };

export type Phase = "setup" | "warmup" | "timed" | "split";

export type Update = { "kind": "worker_started", pid: number, } | { "kind": "started", run_id: number, hello: Hello, } | { "kind": "progress", batch: number, phase: Phase, step: number, of: number, } | { "kind": "point", point: Point, } | { "kind": "warning", message: string, };

export type JobError = { code: ErrorCode, message: string, };

export type RunRecord = { id: number, kind: RunKind, started_at: string, finished_at: string | null, status: RunStatus, host: string, device: string, device_name: string, workload: string, 
/**
 * The precision it ran in; none for runs that have none (doctor, a wrapped command).
 */
dtype: Dtype | null, 
/**
 * Training or inference; none for runs that have none.
 */
mode: Mode | null, libtorch: string, git_commit: string | null, git_dirty: boolean | null, budget_bytes: number | null, chosen_batch: number | null, peak_bytes: number | null, fallback: boolean | null, points: number, summary: SweepSummary | null, 
/**
 * The whole report of a run that is not a sweep (a `doctor` run's facts and lights).
 */
report?: unknown, note: string | null, };

export type RunStatus = "running" | "complete" | "interrupted" | "failed";

export type RunKind = "doctor" | "sweep" | "epochs" | "profile" | "run" | "watch" | "mlx-compare" | "remote-check" | "numerics" | "other";

export type JobStatus = "running" | "complete" | "interrupted" | "failed" | "error";

export type SweepSnapshot = { running: boolean, run_id: number | null, workload: string, device: string, 
/**
 * The remote host profile the worker runs on; this machine when absent.
 */
host: string | null, device_name: string | null, budget_bytes: number | null, 
/**
 * What the worker is doing now, in words.
 */
message: string, points: Array<Point>, summary: SweepSummary | null, 
/**
 * `running`, then how the run ended (`error` when it could not start).
 */
status: JobStatus, error: JobError | null, 
/**
 * The throughput and memory chart (SVG), redrawn at every point.
 */
chart_svg: string, 
/**
 * The accelerator against the CPU at the recommended batch ("Compare with the CPU").
 */
comparison: SpeedComparison | null, 
/**
 * What makes the figures less sure: a point timed under load or still noisy at its cap.
 */
warnings: Array<string>, 
/**
 * [`Self::warnings`] in one line ([`headroom_model::summary::warnings_line`]), as they
 * stand now (while the sweep runs too).
 */
caution_line?: string, };

export type SweepForm = { 
/**
 * A built-in workload or the path of a TorchScript file.
 */
workload: string, 
/**
 * One sample's shape without the batch (`3x224x224`), for a TorchScript file.
 */
input_shape: string | null, device: string, 
/**
 * Typed as the enum for the UI; checked by the core's one parser (the same message as the
 * CLI's for a value the UI could not have sent).
 */
dtype: Dtype, 
/**
 * A size (`12GiB`), a share (`80%`), or `default`.
 */
budget: string, max_batch: number | null, mode: Mode, 
/**
 * A remote host profile to run the worker on (over ssh); this machine when absent.
 */
host?: string, 
/**
 * Every doubling, each point run (no memory prediction, no ×4 strides, no jump to the
 * predicted limit): slower, for comparing with an older sweep or a model whose memory does
 * not grow in a line (`sweep --no-predict`).
 */
every_doubling?: boolean, };

export type AppError = { code: ErrorCode, message: string, };

export type ErrorCode = "invalid_input" | "not_found" | "busy" | "ledger" | "worker" | "io" | "keygen" | "no_ssh" | "opener" | "tunnel" | "internal" | "bad_request" | "bad_device" | "bad_workload" | "bad_shape" | "bad_model" | "no_memory_info" | "allocator" | "torch" | "no_worker" | "interrupted" | "cancelled" | "over_budget";

export type Dtype = "f32" | "f16" | "bf16";

export type Mode = "train" | "infer";

export type Release = "none" | "gc" | "empty-cache" | "both";

export type MemorySnapshot = { running: boolean, 
/**
 * `epochs` or `watch` (what it records in the ledger).
 */
kind: RunKind, title: string, run_id: number | null, samples: Array<EpochSample>, 
/**
 * Joules per sample of each epoch in `samples`, where the machine gives its power.
 */
joules_per_sample: Array<number | null>, readings: Array<MemoryReading>, verdict: EpochVerdict | null, 
/**
 * Growth of the watched tree since watching began (watch only).
 */
growth: number | null, 
/**
 * The watched process crossed the leak threshold.
 */
crossed: boolean, message: string, 
/**
 * `running`, then how the job ended (`error` when it could not start).
 */
status: JobStatus, error: JobError | null, chart_svg: string, 
/**
 * A wrapped run's profiler window (`Profile N iterations`), read for people.
 */
profile: ProfileView | null, 
/**
 * A numerics check (`Check numerics`): the model against a CPU copy, read for people.
 */
numerics?: NumericsView, };

export type ProfileView = { headline: string, 
/**
 * What the shares are of: "of the device time" or "of the window".
 */
of: string, top: Array<OpShare>, waits: Array<OpShare>, trace: string | null, error: string | null, };

export type NumericsView = { verdict: string, within: boolean, rows: Array<NumericsRow>, };

export type NumericsRow = { name: string, 
/**
 * `layer`, `output` or `gradient`.
 */
what: string, 
/**
 * The largest difference over the reference's largest magnitude, and absolute.
 */
rel: string, abs: string, over: boolean, };

export type TimedConditions = { 
/**
 * Readings in the span and the seconds it lasted.
 */
samples: number, seconds: number, 
/**
 * The worst thermal state read.
 */
thermal_worst?: ThermalState | null, 
/**
 * The share of readings that found the machine throttled.
 */
throttled_share?: number | null, 
/**
 * On battery at any reading; Low Power Mode at any reading.
 */
on_battery?: boolean | null, low_power?: boolean | null, battery_percent?: Span | null, cpu_watts?: Span | null, gpu_watts?: Span | null, gpu_util?: Span | null, temp_c?: Span | null, 
/**
 * Joules used over the span: the counter's difference where there is one, else the
 * sampled power integrated over time.
 */
energy_j?: number | null, 
/**
 * Where the energy came from ("NVML energy counter", "power × time").
 */
energy_source?: string | null, 
/**
 * Why a span read with a counter has no energy (too short for the counter's updates).
 */
energy_note?: string | null, 
/**
 * What this machine could not read (said once per job).
 */
unavailable?: Array<string>, 
/**
 * When the span began, in seconds since the Unix epoch: to line a point up with another
 * tool's readings (`nvidia-smi`'s power, a script's own stamps).
 */
from_unix?: number | null, };

export type Span = { min: number, mean: number, max: number, };

export type ThermalState = "nominal" | "fair" | "serious" | "critical";

export type OpShare = { name: string, calls: number, 
/**
 * Milliseconds over the window: device time for a device run's top operators, host time
 * otherwise.
 */
ms: number, 
/**
 * Of the device's busy time (a device run's top), else of the window's wall time.
 */
share: number, wait?: WaitKind, };

export type WaitKind = "sync" | "launch" | "host";

export type EpochsForm = { workload: string, device: string, batch: number, epochs: number, steps_per_epoch: number, 
/**
 * Typed as the enum for the UI; checked by the core's one parser.
 */
release: Release, leak_demo: boolean, };

export type ProcessInfo = { pid: number, command: string, rss_bytes: number, };

export type EpochSample = { 
/**
 * 1-based.
 */
epoch: number, 
/**
 * Bytes held by live tensors on the device (allocator's allocated bytes); `None` where the
 * device keeps no statistics (the CPU).
 */
live_bytes: number | null, 
/**
 * Bytes the allocator keeps cached beyond the live ones (reserved − allocated).
 */
cache_bytes: number | null, 
/**
 * The process footprint: `phys_footprint` on macOS (what the OS kills on), RSS on Linux.
 */
footprint_bytes: number | null, seconds: number, samples_per_s: number | null, 
/**
 * With a release at the epoch's end (`run --release`): the allocator's cache before it,
 * so that `cache_bytes` against it is what the release gave back.
 */
cache_before_bytes?: number, };

export type EpochVerdict = { kind: EpochVerdictKind, live: Trend | null, cache: Trend | null, footprint: Trend | null, throughput: Trend | null, 
/**
 * Throughput fell by more than the slowdown threshold from the first to the last epoch.
 */
slowing: boolean, 
/**
 * One line for people.
 */
reason: string, };

export type EpochVerdictKind = "leak_suspected" | "cache_growth" | "stable" | "too_short";

export type Trend = { first: number, last: number, 
/**
 * (last − first) / first.
 */
growth: number, 
/**
 * Least-squares slope, units per epoch.
 */
slope_per_epoch: number, 
/**
 * The slope carried over the threshold's epoch count, relative to the first value: the
 * number compared with the leak threshold, so runs of any length are judged alike.
 */
projected_growth: number, };

export type MemoryReading = { 
/**
 * Seconds since watching began.
 */
t: number, 
/**
 * The process's own resident (Linux) or footprint (macOS) bytes.
 */
process_bytes: number, 
/**
 * The sum over the process and its descendants.
 */
tree_bytes: number, 
/**
 * The tree's proportional set size (shared pages split, Linux), when readable.
 */
tree_pss_bytes: number | null, processes: number, 
/**
 * The descendants' own memory (PSS where the OS gives it, so pages shared with the
 * parent after a fork count once; else resident bytes): DataLoader workers, mostly.
 */
children_bytes?: number, 
/**
 * The most memory the process has held since it started, where the OS keeps it (Linux's
 * `VmHWM`, macOS's lifetime peak footprint): a peak between two readings (a step's
 * activations, freed before the next reading) is not missed.
 */
process_peak_bytes?: number, };

export type OverviewSnapshot = { 
/**
 * The project whose runs judged it (none: every run of this machine).
 */
project: string | null, decision: Decision, contention: ContentionReport, taken_at: string, 
/**
 * The configuration could not be read (the defaults were used) or the ledger failed.
 */
problem: string | null, 
/**
 * Seconds until the next sample.
 */
interval_s: number, };

export type Decision = { 
/**
 * Where to run now; `None` when something must be fixed first (a Rosetta Python), or when
 * the user's run trained on an accelerator no column names (CUDA).
 */
verdict: Column | null, headline: string, columns: Array<ColumnVerdict>, 
/**
 * Every reason, in the order the rules fired.
 */
reasons: Array<Reason>, 
/**
 * The symptom rows whose rules fired.
 */
symptoms: Array<Symptom>, };

export type Column = "cpu" | "mps" | "mlx" | "remote";

export type Status = "recommended" | "viable" | "risky" | "blocked";

export type Rule = "rosetta" | "not_available" | "data_pipeline" | "near_one" | "faster" | "leak" | "leak_persists" | "oom" | "fast_then_slow" | "slow_layer" | "fallback" | "llm_inference" | "cuda_parity" | "contention" | "no_remote" | "remote_down" | "unmeasured" | "mlx_faster" | "within_noise" | "your_run" | "cache_growth" | "mixed_precision" | "checkpointing" | "rescale" | "loader_hang" | "sync_points" | "energy" | "numerics";

export type Reason = { rule: Rule, column: Column, text: string, };

export type ColumnVerdict = { column: Column, status: Status, strengths: Array<string>, risks: Array<string>, reasons: Array<Reason>, };

export type Symptom = { rule: Rule, symptom: string, hypothesis: string, action: string, 
/**
 * Observability: what to measure to confirm it, and with what.
 */
observe: string, };

export type ContentionReport = { groups: Array<GroupMemory>, system: SystemSide, need: Need | null, 
/**
 * Swap growth since the previous sample, when there was one.
 */
swap_growth_bytes: number | null, raised: boolean, 
/**
 * Why contention is raised (empty when it is not), each with its figures and threshold.
 */
reasons: Array<string>, 
/**
 * What this sample cost: wall time and processes read.
 */
sample_ms: number, processes: number, };

export type GroupMemory = { group: Group, bytes: number, processes: number, apps: Array<AppMemory>, };

export type AppMemory = { name: string, bytes: number, processes: number, };

export type Group = "conferencing" | "ide" | "browser" | "local_llm" | "training" | "headroom" | "other";

export type SystemSide = { total_bytes: number, available_bytes: number, swap_used_bytes: number | null, pressure: Pressure | null, 
/**
 * Where the pressure level came from, with its raw figures.
 */
pressure_detail: string, };

export type Pressure = "normal" | "warn" | "critical";

export type Need = { bytes: number, source: string, };

export type HostProfile = { name: string, host: string, port: number | null, user: string | null, 
/**
 * Private key file (the agent is used too); passwords are never stored.
 */
identity: string | null, 
/**
 * A jump host, `[user@]host[:port]`, as OpenSSH's `ProxyJump`.
 */
jump: string | null, 
/**
 * The VNC (Screen Sharing) port on the remote, reached through an SSH tunnel.
 */
vnc_port: number, 
/**
 * Where `headroom` is on the remote, when it is not on the login shell's PATH.
 */
headroom_path: string | null, notes: string, 
/**
 * Where checkpoints and data live (`host:port` or a URL): runs on this host record the
 * round trip to it, measured from the host.
 */
artifact_store?: string, };

export type Project = { 
/**
 * Its name (letters, digits, `-`, `_`, `.`), filled in from the table's key.
 */
name: string, 
/**
 * The folder it runs in (absolute).
 */
dir: string, 
/**
 * The interpreter that runs `python`/`python3` in the command; none: the one on PATH.
 */
python?: string | null, 
/**
 * The command, one argument per item, with `{batch}` and `{device}`.
 */
command: Array<string>, };

export type CheckReport = { name: string, target: string, ok: boolean, failure: Failure | null, 
/**
 * Median round trip through an open session, ms.
 */
rtt_ms: number | null, rtt_samples_ms: Array<number>, 
/**
 * Seconds until the first answer (connection, key exchange, authentication, a shell).
 */
connect_s: number | null, os: string | null, arch: string | null, memory_bytes: number | null, 
/**
 * `headroom --version` on the remote, when it is installed.
 */
headroom: string | null, 
/**
 * The remote doctor's lights, `backend: state`.
 */
doctor_lights: Array<string>, doctor_error: string | null, };

export type Failure = { kind: FailureKind, message: string, fix: string, };

export type FailureKind = "refused" | "timeout" | "unknown_host" | "auth" | "host_key_changed" | "not_ssh" | "no_ssh" | "other";

export type KeyInfo = { 
/**
 * The private key's path (what `--identity` takes).
 */
path: string, public_key: string, };

export type Migration = { host: string, project: string, 
/**
 * The project's folder on the remote (relative paths start at the login folder).
 */
remote_dir: string, 
/**
 * Paths the project step would leave out (what git ignores, environment folders) that the
 * user asked to copy all the same, as the step's detail names them (`data`, `.venv`).
 */
also_copy: Array<string>, steps: { [key in Step]?: StepResult }, };

export type StepResult = { step: Step, passed: boolean, 
/**
 * What it found or did, with the figures.
 */
detail: string, 
/**
 * What to do about a failure.
 */
fix: string | null, at: string, seconds: number, 
/**
 * The ledger runs the step made or compared (training: the one recorded here; compare:
 * here's, then there's), for the app to draw.
 */
runs: Array<number>, };

export type Step = "host" | "key" | "check" | "headroom" | "project" | "training" | "compare" | "screen";

export type Fact = { label: string, value: string, };

export type RunReport = { run_id: number, title: string, facts: Array<Fact>, 
/**
 * The run's pictures as SVG: throughput and memory against batch, memory per epoch.
 */
charts: Array<string>, recommendation: string | null, };

export type Comparison = { 
/**
 * `ledger compare`'s lines: figures at common batches, then the facts that differ.
 */
lines: Array<string>, 
/**
 * Both runs' curves in one picture, when both have points.
 */
chart_svg: string | null, };

export type SpeedComparison = { batch: number, device: string, device_step_ms: number, cpu_step_ms: number, 
/**
 * CPU step time over device step time (2.0: twice as fast).
 */
speedup: number, 
/**
 * How much less time a step takes on the device: (cpu − device) / cpu.
 */
faster: number, cpu_run_id: number | null, 
/**
 * [`Comparison::sentence`], for the app and other readers of the JSON.
 */
text: string, };

export type PointLoad = { 
/**
 * Cores' worth of CPU the other processes used on average (1.0: one core all the time).
 */
other_cores: number, 
/**
 * The busiest other process, by name, and its cores.
 */
busiest: string | null, busiest_cores: number, 
/**
 * Seconds the reading spans.
 */
seconds: number, 
/**
 * The OS's memory pressure, the worse of the point's start and end, with its figures.
 */
pressure?: Pressure | null, pressure_detail?: string | null, 
/**
 * How much swap grew while the point was timed (bytes; negative: it shrank).
 */
swap_growth_bytes?: number | null, 
/**
 * Other processes on the accelerator the point ran on.
 */
accel_others?: Array<AccelUser>, };

export type AccelUser = { 
/**
 * Its pid as the tool reported it (`None` when only a count could be told).
 */
pid: number | null, name: string, 
/**
 * Device memory it held (NVIDIA).
 */
bytes: number | null, 
/**
 * The share of readings in which it was the last to submit GPU work (Apple GPUs).
 */
share: number | null, };

export type TimedUntil = "target" | "known" | "cap" | "steps";

export type About = { 
/**
 * The app's version (Cargo's, the same as the bundle's).
 */
version: string, 
/**
 * The commit the app was built from (`+dirty` when built from changed files).
 */
commit: string, 
/**
 * The `headroom` binary workers run from.
 */
worker: string | null, 
/**
 * Its `--version` line, as it printed it.
 */
worker_version: string | null, 
/**
 * The libtorch version that binary runs with.
 */
libtorch: string | null, 
/**
 * Why the binary could not be found or asked, with what to do.
 */
worker_error: string | null, };

export type Setting = { 
/**
 * `SECTION.KEY`, as `headroom config set` names it.
 */
key: string, 
/**
 * Its value now (lists comma-separated), as it would be typed back.
 */
value: string, default: string, 
/**
 * What the app made of it, where that is more than the value (the login entry's place, a
 * shortcut another app holds).
 */
note: string | null, };

export const DTYPES: readonly Dtype[] = ["f32", "f16", "bf16"];

export const MODES: readonly Mode[] = ["train", "infer"];

export const RELEASES: readonly Release[] = ["none", "gc", "empty-cache", "both"];

export const RUN_KINDS: readonly RunKind[] = ["doctor", "sweep", "epochs", "profile", "run", "watch", "mlx-compare", "remote-check", "numerics"];

export const ERROR_CODES: readonly ErrorCode[] = ["invalid_input", "not_found", "busy", "ledger", "worker", "io", "keygen", "no_ssh", "opener", "tunnel", "internal", "bad_request", "bad_device", "bad_workload", "bad_shape", "bad_model", "no_memory_info", "allocator", "torch", "no_worker", "interrupted", "cancelled", "over_budget"];
