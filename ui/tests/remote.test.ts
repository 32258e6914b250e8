import { describe, expect, it } from "vitest";

import type { CheckReport } from "../src/backend";
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

const click = (root: HTMLElement, testid: string) => root.querySelector<HTMLElement>(`[data-testid="${testid}"]`)?.click();

describe("remote panel", () => {
  it("walks a host from adding to checking, with the key and the commands to copy the project", async () => {
    const b = mockBackend({ check: ok, keys: [{ path: "/home/ada/.ssh/id_ed25519", public_key: "ssh-ed25519 AAAA ada" }] });
    const tabs: string[] = [];
    const p = remotePanel(b, (t) => tabs.push(t));
    await p.load();
    expect(p.root.querySelector<HTMLElement>('[data-testid="step-3"]')?.hidden).toBe(true);
    set(p.root, "host-name", "box");
    set(p.root, "host-host", "127.0.0.1");
    set(p.root, "host-port", "2222");
    set(p.root, "host-user", "ada");
    click(p.root, "add-host");
    await flush();
    await flush();
    expect(b.calls).toContain("addHost box");
    expect(p.root.querySelector('[data-testid="host-row"]')?.textContent).toContain("box · ada@127.0.0.1:2222");
    expect(p.root.querySelector<HTMLElement>('[data-testid="step-3"]')?.hidden).toBe(false);
    expect(p.root.querySelector('[data-testid="public-key"]')?.textContent).toBe("ssh-ed25519 AAAA ada");
    expect(p.root.querySelector('[data-testid="copy-id"]')?.textContent).toBe("ssh-copy-id -i /home/ada/.ssh/id_ed25519.pub box");
    expect(p.root.querySelector('[data-testid="migration-rsync"]')?.textContent).toBe("rsync -az /p/ box:p/");
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
