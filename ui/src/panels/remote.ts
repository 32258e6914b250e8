// The Remote panel: moving the work to a rented Mac step by step — add the host, make or pick a
// key, check it, then the migration wizard moves a project there (the same steps as `headroom
// remote migrate`); the built-in sweep there, the Overview's comparison and the screen follow.
// Every step calls the same code as `headroom remote`.
import type { Backend, CheckReport, HostProfile, KeyInfo } from "../backend";
import { asAppError } from "../backend";
import { field } from "../controls";
import { el, formatBytes } from "../format";
import { migrationWizard } from "./migrate";

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

  // 1 · the host.
  const s1 = step(1, "Add the rented host");
  const name = input("host-name", "rented-m4");
  const host = input("host-host", "m4.example.com");
  const port = input("host-port", "22");
  const user = input("host-user", "you");
  const identity = input("host-identity", "~/.ssh/id_ed25519");
  const vnc = input("host-vnc", "5900");
  const headroomPath = input("host-headroom", "headroom");
  const grid = el("div", "form-grid");
  grid.append(
    field("Name", name),
    field("Host", host),
    field("Port", port),
    field("User", user),
    field("Key file", identity),
    field("VNC port", vnc),
    field("headroom there (when not on its PATH)", headroomPath),
  );
  const add = el("button", "primary", "Add host");
  add.dataset.testid = "add-host";
  const list = el("div", "host-list");
  s1.body.append(grid, add, list);

  // 2 · the key.
  const s2 = step(2, "Make or pick a key, and install it on the host");
  const keys = el("div", "keys");
  const make = el("button", undefined, "Make a key for Headroom");
  make.dataset.testid = "make-key";
  s2.body.append(keys, make);

  // 3 · check.
  const s3 = step(3, "Check the connection");
  const check = el("button", "primary", "Check");
  check.dataset.testid = "check-host";
  const result = el("div", "check-result");
  result.dataset.testid = "check-result";
  s3.body.append(check, result);

  // 4 · the project, moved by the wizard.
  const s4 = step(4, "Move a project there, step by step");
  const wizard = migrationWizard(backend);
  s4.body.append(wizard.root);

  // 5 · the same sweep there; 6 · compare; 7 · the screen.
  const s5 = step(5, "Run the sweep there");
  const sweep = el("button", "primary", "Run the sweep on this host");
  sweep.dataset.testid = "remote-sweep";
  s5.body.append(sweep, el("div", "machine", "mlp, the same search as the Sweep panel's default, with its worker on the host over ssh; its points land in this Mac's ledger under the host's name."));
  const s6 = step(6, "Compare");
  const compare = el("button", undefined, "Open the decision table");
  compare.dataset.testid = "open-overview";
  s6.body.append(el("div", "machine", "The Overview's remote column cites the host's check and sweep; Runs lists local and remote runs side by side."), compare);
  const s7 = step(7, "Open its screen");
  const openVnc = el("button", undefined, "Open VNC");
  openVnc.dataset.testid = "open-vnc";
  const closeVnc = el("button", undefined, "Close tunnel");
  closeVnc.dataset.testid = "close-vnc";
  const vncUrl = el("div", "machine");
  vncUrl.dataset.testid = "vnc-url";
  s7.body.append(openVnc, closeVnc, vncUrl);
  const later = [s2, s3, s4, s5, s6, s7];
  root.append(status, s1.box, ...later.map((s) => s.box));

  function fail(e: unknown): void {
    status.textContent = asAppError(e).message;
    status.dataset.state = "error";
  }

  function drawKeys(ks: KeyInfo[]): void {
    keys.replaceChildren();
    if (!ks.length) keys.append(el("div", "machine", "No key yet: make one below."));
    for (const k of ks) {
      const row = el("div", "key-row");
      row.dataset.testid = "key-row";
      const use = el("button", undefined, "Use");
      use.addEventListener("click", () => (identity.value = k.path));
      row.append(use, el("span", "python-path", k.path), command(k.public_key, "public-key"));
      if (selected) row.append(command(`ssh-copy-id -i ${k.path}.pub ${selected}`, "copy-id"));
      keys.append(row);
    }
  }

  async function select(h: string): Promise<void> {
    selected = h;
    for (const s of later) s.box.hidden = false;
    for (const r of list.querySelectorAll<HTMLElement>(".host-row")) r.classList.toggle("active", r.dataset.name === h);
    status.textContent = `host ${h}`;
    status.dataset.state = "";
    result.textContent = "";
    drawKeys(await backend.listKeys().catch(() => []));
    await wizard.show(h).catch(fail);
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
      jump: null,
      vnc_port: num(vnc) ?? 5900,
      headroom_path: headroomPath.value.trim() || null,
      notes: "",
    };
    backend
      .addHost(p, true)
      .then(async () => {
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

  async function load(): Promise<void> {
    try {
      const hs = await backend.listHosts();
      drawHosts(hs);
      if (!selected) for (const s of later) s.box.hidden = true;
      if (!selected && hs.length) await select(hs[0].name);
    } catch (e) {
      fail(e);
    }
  }
  return { root, load };
}
