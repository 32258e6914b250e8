import { describe, expect, it } from "vitest";

import type { CheckReport, HostProfile } from "../src/backend";
import { mockBackend } from "../src/backend/mock";
import { checkText, remotePanel } from "../src/panels/remote";

const flush = () => new Promise((r) => setTimeout(r, 0));

const ok: CheckReport = {
  name: "box", target: "ada@127.0.0.1:2222", ok: true, failure: null, rtt_ms: 0.1, rtt_samples_ms: [0.1],
  connect_s: 1.5, os: "Linux", arch: "x86_64", memory_bytes: 24 * 2 ** 30, headroom: "headroom 0.1.0",
  doctor_lights: ["cpu: green"], doctor_error: null,
};

function set(root: HTMLElement, testid: string, value: string): void {
  const i = root.querySelector<HTMLInputElement>(`[data-testid="${testid}"]`);
  if (!i) throw new Error(testid);
  i.value = value;
}

const q = (root: HTMLElement, testid: string) => root.querySelector<HTMLElement>(`[data-testid="${testid}"]`);

const click = (root: HTMLElement, testid: string) => root.querySelector<HTMLElement>(`[data-testid="${testid}"]`)?.click();

/** Runs the wizard's current step and goes on, `n` times; no card on the way has a chart. */
async function passSteps(root: HTMLElement, n: number, chart: HTMLImageElement): Promise<void> {
  for (let i = 0; i < n; i++) {
    click(root, "wizard-run");
    await flush();
    click(root, "wizard-next");
    expect(chart.hidden).toBe(true);
  }
}

describe("remote panel", () => {
  it("adds a host with every field, refuses a second of the same name unless replaced, and keeps the tools for it", async () => {
    const b = mockBackend({ check: ok, keys: [{ path: "/home/ada/.ssh/id_ed25519", public_key: "ssh-ed25519 AAAA ada" }] });
    const tabs: string[] = [];
    const p = remotePanel(b, (t) => tabs.push(t));
    await p.load();
    const form = q(p.root, "add-host-form") as HTMLDetailsElement;
    expect(form.open).toBe(true);
    expect(q(p.root, "host-tools")?.hidden).toBe(true);
    expect(p.root.querySelector('[data-testid="public-key"]')?.textContent).toBe("ssh-ed25519 AAAA ada");
    click(p.root, "use-key");
    expect(p.root.querySelector<HTMLInputElement>('[data-testid="host-identity"]')?.value).toBe("/home/ada/.ssh/id_ed25519");
    set(p.root, "host-name", "box");
    set(p.root, "host-host", "127.0.0.1");
    set(p.root, "host-port", "2222");
    set(p.root, "host-user", "ada");
    set(p.root, "host-jump", "ops@bastion:2200");
    set(p.root, "host-artifact-store", "nas.local:445");
    click(p.root, "add-host");
    await flush();
    await flush();
    expect(b.calls).toContain("addHost box");
    const added = (await b.listHosts()).find((h) => h.name === "box");
    expect(added?.jump).toBe("ops@bastion:2200");
    expect(added?.artifact_store).toBe("nas.local:445");
    expect(added?.identity).toBe("/home/ada/.ssh/id_ed25519");
    expect(p.root.querySelector('[data-testid="host-row"]')?.textContent).toContain("box · ada@127.0.0.1:2222");
    expect(q(p.root, "host-tools")?.hidden).toBe(false);
    expect(q(p.root, "step-2")?.hidden).toBe(false);
    // Added: the form folds away, the wizard comes up; a popover opened later starts folded.
    expect(form.open).toBe(false);
    const later = remotePanel(b, () => {});
    await later.load();
    expect((q(later.root, "add-host-form") as HTMLDetailsElement).open).toBe(false);
    form.open = true;
    // The same name again is refused and says how to replace it; ticked, it replaces.
    set(p.root, "host-host", "10.0.0.9");
    click(p.root, "add-host");
    await flush();
    await flush();
    expect(q(p.root, "remote-status")?.textContent).toContain("exists already");
    expect(q(p.root, "remote-status")?.textContent).toContain("replace a host of the same name");
    expect((await b.listHosts()).filter((h) => h.name === "box").map((h) => h.host)).toEqual(["127.0.0.1"]);
    p.root.querySelector<HTMLInputElement>('[data-testid="host-replace"]')!.checked = true;
    click(p.root, "add-host");
    await flush();
    await flush();
    expect((await b.listHosts()).filter((h) => h.name === "box").map((h) => h.host)).toEqual(["10.0.0.9"]);
    expect(p.root.querySelector<HTMLInputElement>('[data-testid="host-replace"]')?.checked).toBe(false);
    click(p.root, "check-host");
    await flush();
    const r = p.root.querySelector<HTMLElement>('[data-testid="check-result"]');
    expect(r?.dataset.ok).toBe("true");
    expect(r?.textContent).toContain("RTT 0.1 ms");
    click(p.root, "remote-sweep");
    await flush();
    expect(b.forms[0].host).toBe("box");
    expect(tabs).toEqual(["sweep"]);
    click(p.root, "open-vnc");
    await flush();
    expect(p.root.querySelector('[data-testid="vnc-url"]')?.textContent).toBe("vnc://localhost:5999 (tunnel open)");
  });

  it("shows a refused host and a failed check with their fix", async () => {
    const b = mockBackend({});
    const p = remotePanel(b, () => {});
    await p.load();
    set(p.root, "host-name", "evil");
    set(p.root, "host-host", "host; rm -rf ~");
    click(p.root, "add-host");
    await flush();
    expect(p.root.querySelector('[data-testid="remote-status"]')?.textContent).toContain("is refused");
    expect(
      checkText({ ...ok, ok: false, failure: { kind: "auth", message: "ada@h refused every key offered", fix: "install your public key" } }),
    ).toBe("ada@h refused every key offered. Fix: install your public key");
  });
});

describe("migration wizard", () => {
  const project = { name: "train", dir: "/home/ada/train", python: null, command: ["python", "train.py", "--batch-size", "{batch}"] };
  const host: HostProfile = { name: "box", host: "127.0.0.1", port: 2222, user: "ada", identity: null, jump: null, vnc_port: 5900, headroom_path: null, notes: "" };

  it("runs each step, waits for it to pass before Next, asks the key step for the password once, and shows a fix", async () => {
    const b = mockBackend({
      hosts: [host],
      projects: [project],
      steps: {
        key: (pw) =>
          pw
            ? { passed: true, detail: "installed ~/.ssh/headroom_ed25519.pub; a batch-mode login now opens it" }
            : { passed: false, detail: "box refused the key", fix: "type the login password and run the step again" },
        headroom: () => ({ passed: false, detail: "`headroom --version` does not answer on box", fix: "install Headroom there" }),
      },
    });
    const p = remotePanel(b, () => {});
    await p.load();
    await flush();
    expect(b.calls).toContain("migrationState box train");
    const steps = () => [...p.root.querySelectorAll<HTMLElement>('[data-testid="wizard-step"]')].map((li) => li.dataset.state);
    expect(steps()).toEqual(Array(8).fill("pending"));
    expect(q(p.root, "wizard-title")?.textContent).toBe("1 · The host profile");
    expect((q(p.root, "wizard-next") as HTMLButtonElement).disabled).toBe(true);
    click(p.root, "wizard-run");
    await flush();
    expect(steps()[0]).toBe("passed");
    expect((q(p.root, "wizard-next") as HTMLButtonElement).disabled).toBe(false);
    click(p.root, "wizard-next");
    // The key step: without a password it fails with its fix, and Next stays off.
    expect(q(p.root, "wizard-title")?.textContent).toBe("2 · A key that opens it");
    expect(q(p.root, "wizard-password")?.closest("label")?.hidden).toBe(false);
    click(p.root, "wizard-run");
    await flush();
    expect(q(p.root, "wizard-detail")?.textContent).toBe("box refused the key");
    expect(q(p.root, "wizard-fix")?.textContent).toBe("Fix: type the login password and run the step again");
    expect((q(p.root, "wizard-next") as HTMLButtonElement).disabled).toBe(true);
    // With it: passed, and the field is emptied.
    set(p.root, "wizard-password", "s3cret");
    click(p.root, "wizard-run");
    await flush();
    expect(b.calls).toContain("runMigrationStep box train key with a password");
    expect((q(p.root, "wizard-password") as HTMLInputElement).value).toBe("");
    expect(steps().slice(0, 2)).toEqual(["passed", "passed"]);
    click(p.root, "wizard-next");
    click(p.root, "wizard-run");
    await flush();
    click(p.root, "wizard-next");
    expect(q(p.root, "wizard-password")?.closest("label")?.hidden).toBe(true);
    click(p.root, "wizard-run");
    await flush();
    expect(steps().slice(0, 4)).toEqual(["passed", "passed", "passed", "failed"]);
    expect(q(p.root, "wizard-fix")?.textContent).toBe("Fix: install Headroom there");
    // Back to a passed step, then forward again only as far as the failed one.
    click(p.root, "wizard-back");
    expect(q(p.root, "wizard-title")?.textContent).toBe("3 · Reachable, with room in the remote folder");
    click(p.root, "wizard-next");
    expect((q(p.root, "wizard-next") as HTMLButtonElement).disabled).toBe(true);
    // A popover opened later resumes at the first step not passed.
    const again = remotePanel(b, () => {});
    await again.load();
    await flush();
    expect(q(again.root, "wizard-title")?.textContent).toBe("4 · Headroom there");
  });

  it("shows a running step's progress lines as they come, and hides them when it ends", async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    const b = mockBackend({
      hosts: [host],
      projects: [project],
      progress: { host: ["copying /home/ada/train to box:headroom-projects/train (rsync over ssh)", "copied 71 % (20.4 MiB) at 19.55MB/s, 0:00:01 left"] },
      stepGate: () => gate,
    });
    const p = remotePanel(b, () => {});
    await p.load();
    await flush();
    const line = q(p.root, "wizard-progress");
    expect(line?.hidden).toBe(true);
    click(p.root, "wizard-run");
    await flush();
    expect(q(p.root, "wizard-detail")?.textContent).toBe("running step 1…");
    expect(line?.hidden).toBe(false);
    expect(line?.textContent).toBe("copied 71 % (20.4 MiB) at 19.55MB/s, 0:00:01 left");
    expect((q(p.root, "wizard-run") as HTMLButtonElement).disabled).toBe(true);
    expect(q(p.root, "wizard-log")?.hidden).toBe(true);
    release();
    await flush();
    expect(q(p.root, "wizard-detail")?.textContent).toBe("host done");
    expect(line?.hidden).toBe(true);
    // What it printed stays with the step, folded.
    const log = q(p.root, "wizard-log") as HTMLDetailsElement;
    expect(log.hidden).toBe(false);
    expect(log.open).toBe(false);
    expect(log.querySelector("summary")?.textContent).toBe("What it printed (2 lines)");
    expect(log.querySelector("pre")?.textContent).toContain("copying /home/ada/train");
    click(p.root, "wizard-next");
    expect(q(p.root, "wizard-log")?.hidden).toBe(true);
  });

  it("sends the paths to copy too, keeps them, and a change runs the project step again", async () => {
    const b = mockBackend({ hosts: [host], projects: [project] });
    const p = remotePanel(b, () => {});
    await p.load();
    await flush();
    for (let i = 0; i < 5; i++) {
      click(p.root, "wizard-run");
      await flush();
      click(p.root, "wizard-next");
    }
    const steps = () => [...p.root.querySelectorAll<HTMLElement>('[data-testid="wizard-step"]')].map((li) => li.dataset.state);
    expect(steps().slice(0, 5)).toEqual(Array(5).fill("passed"));
    set(p.root, "wizard-also-copy", " data/raw , ,ckpt");
    q(p.root, "wizard-also-copy")?.dispatchEvent(new Event("change"));
    // Changed past the project step: back to it.
    expect(q(p.root, "wizard-title")?.textContent).toBe("5 · Your project there, verified, with its environment");
    click(p.root, "wizard-run");
    await flush();
    expect(b.calls).toContain("runMigrationStep box train project");
    expect(b.calls).toContain("alsoCopy data/raw,ckpt");
    // The project step ran again with them; those after it are to run again.
    expect(steps().slice(4)).toEqual(["passed", "pending", "pending", "pending"]);
    const again = remotePanel(b, () => {});
    await again.load();
    await flush();
    expect(q(again.root, "wizard-title")?.textContent).toBe("6 · Your training there");
    expect((q(again.root, "wizard-also-copy") as HTMLInputElement).value).toBe("data/raw, ckpt");
  });

  it("draws the runs here and there side by side once the compare step passed", async () => {
    const b = mockBackend({
      hosts: [host],
      projects: [project],
      steps: { compare: () => ({ passed: true, detail: "here: 15284.8 samples/s …; there: 9277.0 samples/s …", runs: [30, 31] }) },
      comparison: { lines: ["run 30 vs run 31"], chart_svg: '<svg xmlns="http://www.w3.org/2000/svg" width="360" height="200"><rect fill="#FFFFFF"/></svg>' },
    });
    const p = remotePanel(b, () => {});
    await p.load();
    await flush();
    const chart = q(p.root, "wizard-chart") as HTMLImageElement;
    await passSteps(p.root, 6, chart);
    click(p.root, "wizard-run");
    await flush();
    await flush();
    expect(b.calls).toContain("compareRuns 30 31");
    expect(chart.hidden).toBe(false);
    expect(chart.src.startsWith("data:image/svg+xml")).toBe(true);
    // Another step's card has no chart.
    click(p.root, "wizard-back");
    expect(chart.hidden).toBe(true);
  });

  it("draws the sweep there as a curve once the training step passed", async () => {
    const b = mockBackend({
      hosts: [host],
      projects: [project],
      steps: { training: () => ({ passed: true, detail: "swept `.venv/bin/python train.py --batch-size {batch}` … recorded here as sweep 31", runs: [31] }) },
    });
    const p = remotePanel(b, () => {});
    await p.load();
    await flush();
    const chart = q(p.root, "wizard-chart") as HTMLImageElement;
    await passSteps(p.root, 5, chart);
    click(p.root, "wizard-run");
    await flush();
    await flush();
    expect(b.calls).toContain("chartForRun 31");
    expect(b.calls.some((c) => c.startsWith("compareRuns"))).toBe(false);
    expect(chart.hidden).toBe(false);
    expect(chart.src.startsWith("data:image/svg+xml")).toBe(true);
    // The project step's card has none; back on the training step it is drawn again.
    click(p.root, "wizard-back");
    expect(chart.hidden).toBe(true);
    click(p.root, "wizard-next");
    await flush();
    expect(chart.hidden).toBe(false);
  });

  it("asks for a project first when there is none", async () => {
    const b = mockBackend({ hosts: [host] });
    const p = remotePanel(b, () => {});
    await p.load();
    await flush();
    expect(q(p.root, "wizard")?.textContent).toContain("Add a project in the bar at the top first");
    expect(q(p.root, "wizard-run")?.closest(".wizard-card")?.hasAttribute("hidden")).toBe(true);
  });

  it("starts a project's training there detached, lists the host's runs and stops a running one", async () => {
    const host: HostProfile = { name: "box", host: "127.0.0.1", port: 2222, user: "ada", identity: null, jump: null, vnc_port: 5900, headroom_path: null, notes: "" };
    const done = {
      id: "20261205013932-cf4a48", state: "complete" as const, summary: "epoch 4 · 20 steps · 41.2 samples/s · 11.7 MiB · started 2026-12-05T01:39:32Z",
      last_line: "trained", command: ".venv/bin/python train.py", ledger_run_id: 7,
    };
    const b = mockBackend({
      hosts: [host],
      projects: [{ name: "mlp", dir: "/p", python: null, command: ["python", "train.py"] } as never],
      remoteRuns: { box: [done] },
    });
    const p = remotePanel(b, () => {});
    await p.load();
    await flush();
    // The host's runs, as the backend lists (and mirrors) them: a finished one has no Stop.
    const rows = () => [...p.root.querySelectorAll<HTMLElement>('[data-testid="remote-run"]')];
    expect(b.calls).toContain("remoteRuns box");
    expect(rows()).toHaveLength(1);
    expect(rows()[0].dataset.state).toBe("complete");
    expect(rows()[0].textContent).toContain("epoch 4 · 20 steps");
    expect(q(rows()[0], "remote-run-last")?.textContent).toBe("trained");
    expect(q(rows()[0], "stop-remote-run")).toBeNull();
    // A batch that is no batch is refused here.
    set(p.root, "remote-run-batch", "0");
    click(p.root, "start-remote-run");
    await flush();
    expect(q(p.root, "remote-runs-status")?.dataset.state).toBe("error");
    expect(b.calls.some((c) => c.startsWith("startRemoteRun"))).toBe(false);
    // Started: listed first, running, with Stop; the status names its row in the ledger.
    set(p.root, "remote-run-batch", "64");
    click(p.root, "start-remote-run");
    await flush();
    await flush();
    expect(b.calls).toContain("startRemoteRun box mlp 64");
    expect(rows()).toHaveLength(2);
    expect(rows()[0].dataset.state).toBe("running");
    expect(q(p.root, "remote-runs-status")?.textContent).toContain("recorded here as run");
    q(rows()[0], "stop-remote-run")?.click();
    await flush();
    await flush();
    expect(b.calls.some((c) => c.startsWith("stopRemoteRun box 20261205-"))).toBe(true);
    expect(rows()[0].dataset.state).toBe("interrupted");
    expect(q(p.root, "remote-runs-status")?.textContent).toContain("interrupted");
  });

  it("says why a run there could not start, in the backend's words", async () => {
    const host: HostProfile = { name: "box", host: "127.0.0.1", port: 2222, user: "ada", identity: null, jump: null, vnc_port: 5900, headroom_path: null, notes: "" };
    const message = "step training needs step headroom (Headroom there) to pass first: run `headroom remote migrate box --project mlp --step headroom`";
    const b = mockBackend({
      hosts: [host],
      projects: [{ name: "mlp", dir: "/p", python: null, command: ["python", "train.py"] } as never],
      remoteRunError: { code: "invalid_input", message },
    });
    const p = remotePanel(b, () => {});
    await p.load();
    await flush();
    click(p.root, "start-remote-run");
    await flush();
    await flush();
    const status = q(p.root, "remote-runs-status");
    expect(status?.dataset.state).toBe("error");
    expect(status?.textContent).toBe(message);
  });
});
