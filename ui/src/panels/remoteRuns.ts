// Training on the selected host that keeps going without this Mac (`headroom remote run`): a
// project started there detached, its runs listed with where each stands and its last output
// line, a running one stopped with its whole process group. Every list is mirrored into the
// ledger under the host's name by the backend, as `headroom remote runs` does.
import type { Backend, Project, RemoteRun } from "../backend";
import { asAppError } from "../backend";
import { field } from "../controls";
import { el } from "../format";

/** One run's row: its state, where it stands, its last line, and Stop while it runs. */
export function runRow(r: RemoteRun, stop: (id: string) => void): HTMLElement {
  const row = el("div", "remote-run");
  row.dataset.testid = "remote-run";
  row.dataset.state = r.state;
  const head = el("div", "remote-run-head");
  head.append(el("strong", undefined, r.state), el("span", "machine", ` ${r.summary}`));
  row.append(head, el("div", "python-path", r.command));
  if (r.last_line) {
    const last = el("pre", "command", r.last_line);
    last.dataset.testid = "remote-run-last";
    row.append(last);
  }
  if (r.state === "running") {
    const b = el("button", undefined, "Stop");
    b.dataset.testid = "stop-remote-run";
    b.addEventListener("click", () => stop(r.id));
    row.append(b);
  }
  if (r.ledger_run_id !== null) row.title = `run ${r.id} there · run ${r.ledger_run_id} in this ledger`;
  return row;
}

export function remoteRunsSection(backend: Backend): {
  root: HTMLElement;
  show(host: string): Promise<void>;
} {
  const root = el("div", "remote-runs");
  const project = el("select");
  project.dataset.testid = "remote-run-project";
  const batch = el("input");
  batch.dataset.testid = "remote-run-batch";
  batch.placeholder = "the project's, when its command takes {batch}";
  const start = el("button", "primary", "Train there (keeps going without this Mac)");
  start.dataset.testid = "start-remote-run";
  const refresh = el("button", undefined, "Refresh");
  refresh.dataset.testid = "refresh-remote-runs";
  const status = el("div", "status");
  status.dataset.testid = "remote-runs-status";
  const list = el("div", "remote-run-list");
  list.dataset.testid = "remote-run-list";
  const buttons = el("div", "wizard-buttons");
  buttons.append(start, refresh);
  const form = el("div", "form-grid");
  form.append(field("Project", project), field("Batch", batch));
  root.append(
    el("div", "machine", "Runs under `headroom run` there, in its own session (on a Mac under caffeinate): closing the lid, losing Wi-Fi or quitting Headroom leaves it training. Each run lands in this ledger under the host's name."),
    form,
    buttons,
    status,
    list,
  );
  let host: string | null = null;

  function say(text: string, state = ""): void {
    status.textContent = text;
    status.dataset.state = state;
  }

  function draw(runs: RemoteRun[]): void {
    list.replaceChildren(...runs.map((r) => runRow(r, (id) => void stop(id))));
    if (!runs.length) list.append(el("div", "machine", "No runs there yet."));
    const running = runs.filter((r) => r.state === "running").length;
    say(`${runs.length} run(s) on ${host}, ${running} running`);
  }

  async function reload(): Promise<void> {
    if (!host) return;
    say(`asking ${host}…`);
    try {
      draw(await backend.remoteRuns(host));
    } catch (e) {
      say(asAppError(e).message, "error");
    }
  }

  async function stop(id: string): Promise<void> {
    if (!host) return;
    say(`stopping ${id} on ${host}…`);
    try {
      const r = await backend.stopRemoteRun(host, id);
      await reload();
      say(`run ${r.id} ${r.state}`);
    } catch (e) {
      say(asAppError(e).message, "error");
    }
  }

  start.addEventListener("click", () => {
    if (!host || !project.value) return;
    const b = batch.value.trim();
    if (b && !(Number.isInteger(Number(b)) && Number(b) > 0)) {
      say(`batch ${b}: give a whole number of 1 or more`, "error");
      return;
    }
    start.disabled = true;
    say(`starting ${project.value} on ${host}…`);
    backend
      .startRemoteRun(host, project.value, b ? Number(b) : null)
      .then(async (r) => {
        await reload();
        say(`started run ${r.id} on ${host}${r.ledger_run_id !== null ? `; recorded here as run ${r.ledger_run_id}` : ""}`);
      })
      .catch((e) => say(asAppError(e).message, "error"))
      .finally(() => (start.disabled = false));
  });
  refresh.addEventListener("click", () => void reload());

  async function show(h: string): Promise<void> {
    host = h;
    const ps: Project[] = await backend.listProjects().catch(() => []);
    const chosen = project.value;
    project.replaceChildren(...ps.map((p) => el("option", undefined, p.name)));
    if (ps.some((p) => p.name === chosen)) project.value = chosen;
    start.disabled = !ps.length;
    await reload();
  }

  return { root, show };
}
