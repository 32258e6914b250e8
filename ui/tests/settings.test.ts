import { describe, expect, it } from "vitest";

import { mount } from "../src/app";
import type { Setting } from "../src/backend";
import { mockBackend } from "../src/backend/mock";
import { bySection } from "../src/panels/settings";
import { h200Report } from "./fixtures";

const flush = () => new Promise((r) => setTimeout(r, 0));

const SETTINGS: Setting[] = [
  { key: "app.open_at_login", value: "false", default: "false", note: "does not start at login" },
  { key: "app.shortcut", value: "CmdOrCtrl+Shift+H", default: "CmdOrCtrl+Shift+H", note: "CmdOrCtrl+Shift+H opens and closes the popover from any app" },
  { key: "epochs.leak_growth", value: "0.26", default: "0.26", note: null },
  { key: "contention.interval_s", value: "5", default: "5", note: null },
  { key: "decide.amp_gain", value: "0.1", default: "0.1", note: null },
  { key: "decide.data_share", value: "0.5", default: "0.5", note: null },
];

describe("settings", () => {
  it("groups the keys app, decide, contention, epochs", () => {
    expect(bySection(SETTINGS).map(([s, rows]) => [s, rows.length])).toEqual([
      ["app", 2],
      ["decide", 2],
      ["contention", 1],
      ["epochs", 1],
    ]);
  });

  it("opens from the header, saves a value on Enter, says why a bad one is refused, Escape restores", async () => {
    const b = mockBackend({ report: h200Report(), settings: SETTINGS });
    const root = document.createElement("div");
    mount(root, b);
    await flush();
    const tabs = Array.from(root.querySelectorAll(".tabs button")).map((x) => x.textContent);
    expect(tabs).not.toContain("Settings");
    root.querySelector<HTMLElement>('[data-testid="tab-settings"]')!.click();
    await flush();
    const panel = root.querySelector<HTMLElement>('[data-testid="panel-settings"]')!;
    expect(panel.hidden).toBe(false);
    expect(b.calls).toContain("settings");
    const input = () => panel.querySelector<HTMLInputElement>('[data-testid="setting-decide.amp_gain"]')!;
    const status = panel.querySelector<HTMLElement>('[data-testid="settings-status"]')!;
    // Emptying the field (what a WebDriver clear does, firing change) saves nothing.
    input().value = "";
    input().dispatchEvent(new Event("change"));
    await flush();
    expect(b.calls.filter((c) => c.startsWith("setSetting"))).toEqual([]);
    // Enter, then the field losing focus (change): one save.
    input().value = "0.15";
    const field = input();
    field.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    field.dispatchEvent(new Event("change"));
    await flush();
    expect(b.calls.filter((c) => c.startsWith("setSetting"))).toEqual(["setSetting decide.amp_gain=0.15"]);
    expect(status.textContent).toBe("decide.amp_gain saved");
    expect(input().value).toBe("0.15");
    expect(panel.textContent).toContain("default 0.1");
    input().value = "2";
    input().dispatchEvent(new Event("change"));
    await flush();
    expect(status.dataset.state).toBe("error");
    expect(status.textContent).toContain("must be a share between 0 and 1");
    input().dispatchEvent(new KeyboardEvent("keydown", { key: "Escape" }));
    expect(input().value).toBe("0.15");
  });

  it("saves a yes/no key from its checkbox, clears the shortcut on purpose and shows what the app made of each", async () => {
    const b = mockBackend({ report: h200Report(), settings: SETTINGS.map((x) => ({ ...x })) });
    const root = document.createElement("div");
    mount(root, b);
    await flush();
    root.querySelector<HTMLElement>('[data-testid="tab-settings"]')!.click();
    await flush();
    const panel = root.querySelector<HTMLElement>('[data-testid="panel-settings"]')!;
    expect(panel.querySelector("h3")!.textContent).toBe("This app");
    const login = panel.querySelector<HTMLInputElement>('[data-testid="setting-app.open_at_login"]')!;
    expect(login.type).toBe("checkbox");
    expect(login.checked).toBe(false);
    expect(panel.querySelector('[data-testid="setting-note-app.open_at_login"]')!.textContent).toBe("does not start at login");
    login.checked = true;
    login.dispatchEvent(new Event("change"));
    await flush();
    expect(b.calls.filter((c) => c.startsWith("setSetting"))).toEqual(["setSetting app.open_at_login=true"]);
    expect(panel.querySelector<HTMLInputElement>('[data-testid="setting-app.open_at_login"]')!.checked).toBe(true);
    const shortcut = panel.querySelector<HTMLInputElement>('[data-testid="setting-app.shortcut"]')!;
    // Emptied on the way to typing another: nothing saved; emptied and Enter: none, on purpose.
    shortcut.value = "";
    shortcut.dispatchEvent(new Event("change"));
    await flush();
    expect(b.calls.filter((c) => c.startsWith("setSetting app.shortcut"))).toEqual([]);
    shortcut.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    await flush();
    expect(b.calls.filter((c) => c.startsWith("setSetting app.shortcut"))).toEqual(["setSetting app.shortcut="]);
  });
});
