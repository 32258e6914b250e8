// The Remote panel: moving the work to a rented Mac step by step — add the host (with a key
// Headroom made or yours), then the migration wizard moves a project there (the same steps as
// `headroom remote migrate`: the key installed, the check, Headroom, the project, the training,
// the comparison, the screen). A check without a project, the built-in sweep there, the decision
// table and the screen sit in "More for this host". Every step calls the same code as
// `headroom remote`.
import type { Backend, CheckReport, HostProfile, KeyInfo } from "../backend";
import { asAppError } from "../backend";
import { field } from "../controls";
import { el, formatBytes } from "../format";
import { migrationWizard } from "./migrate";
import { remoteRunsSection } from "./remoteRuns";

function input(testid: string, placeholder = ""): HTMLInputElement {
  const i = el("input");
  i.dataset.testid = testid;
  i.placeholder = placeholder;
  return i;
}

function step(n: number, title: string): { box: HTMLElement; body: HTMLElement } {
  const box = el("section", "step");
  box.dataset.testid = `step-${n}`;
  box.append(el("h3", undefined, `${n} · ${title}`));
  const body = el("div", "step-body");
  box.append(body);
  return { box, body };
}

function command(text: string, testid: string): HTMLElement {
  const pre = el("pre", "command", text);
  pre.dataset.testid = testid;
  return pre;
}

/** The check's result in words. */
export function checkText(r: CheckReport): string {
  if (r.failure) return `${r.failure.message}. Fix: ${r.failure.fix}`;
  const parts = [
    `reachable, key accepted, host key known`,
    r.rtt_ms === null ? "" : `RTT ${r.rtt_ms.toFixed(1)} ms`,
    `${r.os ?? "?"} ${r.arch ?? "?"}`,
    r.memory_bytes === null ? "" : `${formatBytes(r.memory_bytes)} memory`,
    r.headroom ?? "headroom not installed there",
  ];
  if (r.doctor_lights.length) parts.push(`doctor: ${r.doctor_lights.join(", ")}`);
  return parts.filter(Boolean).join(" · ");
}

export function remotePanel(
  backend: Backend,
  go: (tab: "sweep" | "overview") => void,
): { root: HTMLElement; load(): Promise<void> } {
  const root = el("div", "panel remote");
  const status = el("div", "status");
  status.dataset.testid = "remote-status";
  let selected: string | null = null;

  // 1 · the host: everything `remote add` takes, with the keys Headroom knows.
  const s1 = step(1, "Add the rented host");
  const name = input("host-name", "rented-m4");
  const host = input("host-host", "m4.example.com");
  const port = input("host-port", "22");
  const user = input("host-user", "you");
  const identity = input("host-identity", "~/.ssh/id_ed25519");
  const jump = input("host-jump", "user@bastion:22 (optional)");
  const vnc = input("host-vnc", "5900");
  const store = input("host-artifact-store", "nas.local:445 or https://… (optional)");
  const headroomPath = input("host-headroom", "headroom");
  const grid = el("div", "form-grid");
  grid.append(
    field("Name", name),
    field("Host", host),
    field("Port", port),
    field("User", user),
    field("Key file", identity),
    field("Jump host", jump),
    field("VNC port", vnc),
    field("Artifact store", store),
    field("headroom there (when not on its PATH)", headroomPath),
  );
  const keys = el("div", "keys");
  const make = el("button", undefined, "Make a key for Headroom");
  make.dataset.testid = "make-key";
  const replace = el("input");
  replace.type = "checkbox";
  replace.dataset.testid = "host-replace";
  const replaceLabel = el("label", "inline");
  replaceLabel.append(replace, el("span", undefined, " replace a host of the same name"));
  const add = el("button", "primary", "Add host");
  add.dataset.testid = "add-host";
  const list = el("div", "host-list");
  // The hosts first; the form folds away once there is one, so that the wizard (the work)
  // comes up above the fold.
  const form = el("details", "add-host-form");
  form.dataset.testid = "add-host-form";
  form.open = true;
  form.append(el("summary", undefined, "Add a host…"), grid, keys, make, replaceLabel, add);
  s1.body.append(list, form);

  // 2 · the project moved by the wizard: the key installed (password once), the check, Headroom,
  // the project, the training, the comparison and the screen.
  const s2 = step(2, "Move a project there, step by step");
  const wizard = migrationWizard(backend);
  s2.body.append(wizard.root);

  // 3 · training there that outlives this Mac's connection.
  const s3 = step(3, "Train there, detached: it keeps going when this Mac sleeps");
  const runs = remoteRunsSection(backend);
  s3.body.append(runs.root);

  // Tools for the selected host outside the wizard: a check without a project, the built-in
  // sweep there, the decision table, the screen.
  const tools = el("details", "step host-tools");
  tools.dataset.testid = "host-tools";
  tools.append(el("summary", undefined, "More for this host: check, built-in sweep, screen"));
  const check = el("button", undefined, "Check the connection");
  check.dataset.testid = "check-host";
  const result = el("div", "check-result");
  result.dataset.testid = "check-result";
  const sweep = el("button", undefined, "Run the built-in sweep there");
  sweep.dataset.testid = "remote-sweep";
  const compare = el("button", undefined, "Open the decision table");
  compare.dataset.testid = "open-overview";
  const openVnc = el("button", undefined, "Open VNC");
  openVnc.dataset.testid = "open-vnc";
  const closeVnc = el("button", undefined, "Close tunnel");
  closeVnc.dataset.testid = "close-vnc";
  const vncUrl = el("div", "machine");
  vncUrl.dataset.testid = "vnc-url";
  const toolRow = el("div", "wizard-buttons");
  toolRow.append(check, sweep, compare, openVnc, closeVnc);
  tools.append(
    toolRow,
    result,
    el("div", "machine", "The built-in sweep is mlp with its worker on the host over ssh; its points land in this machine's ledger under the host's name. Your own training there is the wizard's step 6."),
    vncUrl,
  );
  const later: HTMLElement[] = [s2.box, s3.box, tools];
  root.append(status, s1.box, ...later);

  function fail(e: unknown): void {
    status.textContent = asAppError(e).message;
    status.dataset.state = "error";
  }

  function drawKeys(ks: KeyInfo[]): void {
    keys.replaceChildren();
    if (!ks.length) keys.append(el("div", "machine", "No key yet: make one below, or name yours. The wizard's key step installs it on the host (the password is asked for once, never stored)."));
    for (const k of ks) {
      const row = el("div", "key-row");
      row.dataset.testid = "key-row";
      const use = el("button", undefined, "Use");
      use.addEventListener("click", () => (identity.value = k.path));
      use.dataset.testid = "use-key";
      const path = el("span", "python-path key-path", k.path);
      path.dataset.testid = "key-path";
      // The whole path on hover where it is cut short.
      path.title = k.path;
      row.append(use, path, command(k.public_key, "public-key"));
      keys.append(row);
    }
  }

  async function select(h: string): Promise<void> {
    selected = h;
    for (const s of later) s.hidden = false;
    for (const r of list.querySelectorAll<HTMLElement>(".host-row")) r.classList.toggle("active", r.dataset.name === h);
    status.textContent = `host ${h}`;
    status.dataset.state = "";
    result.textContent = "";
    await wizard.show(h).catch(fail);
    await runs.show(h).catch(fail);
  }

  function drawHosts(hs: HostProfile[]): void {
    list.replaceChildren();
    for (const h of hs) {
      const row = el("div", "host-row");
      row.dataset.testid = "host-row";
      row.dataset.name = h.name;
      const use = el("button", undefined, "Select");
      use.dataset.testid = "select-host";
      use.addEventListener("click", () => void select(h.name));
      row.append(use, el("span", "python-path", `${h.name} · ${h.user ? `${h.user}@` : ""}${h.host}:${h.port ?? 22}`));
      list.append(row);
    }
  }

  add.addEventListener("click", () => {
    const num = (i: HTMLInputElement) => (i.value.trim() ? Number(i.value) : null);
    const p: HostProfile = {
      name: name.value.trim(),
      host: host.value.trim(),
      port: num(port),
      user: user.value.trim() || null,
      identity: identity.value.trim() || null,
      jump: jump.value.trim() || null,
      vnc_port: num(vnc) ?? 5900,
      headroom_path: headroomPath.value.trim() || null,
      notes: "",
      ...(store.value.trim() ? { artifact_store: store.value.trim() } : {}),
    };
    backend
      .addHost(p, replace.checked)
      .then(async () => {
        replace.checked = false;
        form.open = false;
        drawHosts(await backend.listHosts());
        await select(p.name);
      })
      .catch(fail);
  });
  make.addEventListener("click", () => {
    backend
      .makeKey()
      .then(async (k) => {
        identity.value = k.path;
        drawKeys(await backend.listKeys());
      })
      .catch(fail);
  });
  check.addEventListener("click", () => {
    if (!selected) return;
    check.disabled = true;
    result.textContent = "checking…";
    result.dataset.ok = "";
    backend
      .checkHost(selected)
      .then((r) => {
        result.textContent = checkText(r);
        result.dataset.ok = String(r.ok);
      })
      .catch(fail)
      .finally(() => (check.disabled = false));
  });
  sweep.addEventListener("click", () => {
    if (!selected) return;
    const host = selected;
    backend
      .startSweep(
        { workload: "mlp", input_shape: null, device: "auto", dtype: "f32", budget: "default", max_batch: null, mode: "train", host },
        () => {},
      )
      .then(() => go("sweep"))
      .catch(fail);
  });
  compare.addEventListener("click", () => go("overview"));
  openVnc.addEventListener("click", () => {
    if (!selected) return;
    backend
      .openVnc(selected)
      .then((u) => (vncUrl.textContent = `${u} (tunnel open)`))
      .catch(fail);
  });
  closeVnc.addEventListener("click", () => {
    void backend.closeVnc().then(() => (vncUrl.textContent = "tunnel closed"));
  });

  let loaded = false;
  async function load(): Promise<void> {
    try {
      const hs = await backend.listHosts();
      drawHosts(hs);
      // Open for the first host; folded when the popover opens with hosts already there.
      if (!loaded) form.open = hs.length === 0;
      loaded = true;
      if (!selected) for (const s of later) s.hidden = true;
      drawKeys(await backend.listKeys().catch(() => []));
      if (!selected && hs.length) await select(hs[0].name);
    } catch (e) {
      fail(e);
    }
  }
  return { root, load };
}
