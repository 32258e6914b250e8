// Only ui/src/backend/ may import @tauri-apps: the rest of the UI runs (and is tested) without
// the app.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";

import { describe, expect, it } from "vitest";

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith(".ts") ? [p] : [];
  });
}

describe("the one door", () => {
  it("no module outside src/backend imports @tauri-apps", () => {
    const src = resolve(process.cwd(), "src");
    const all = files(src);
    expect(all.length).toBeGreaterThan(5);
    const offenders = all
      .filter((f) => !relative(src, f).startsWith("backend"))
      .filter((f) => /from\s+["']@tauri-apps\//.test(readFileSync(f, "utf8")));
    expect(offenders).toEqual([]);
    const door = readFileSync(join(src, "backend", "tauri.ts"), "utf8");
    expect(door).toMatch(/from "@tauri-apps\/api\/core"/);
  });

  it("no command name is typed by hand: only the generated table calls invoke", () => {
    const src = resolve(process.cwd(), "src");
    const generated = join(src, "backend", "commands.ts");
    const table = readFileSync(generated, "utf8");
    expect([...table.matchAll(/invoke<[^>]*>\("([a-z_]+)"/g)].length).toBeGreaterThan(20);
    const offenders = files(src)
      .filter((f) => f !== generated)
      .filter((f) => /\binvoke\b/.test(readFileSync(f, "utf8")))
      .map((f) => relative(src, f));
    expect(offenders).toEqual([]);
  });
});
