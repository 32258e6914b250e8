import { describe, expect, it } from "vitest";

import { readFileSync } from "node:fs";
import { resolve } from "node:path";

import { darkChart, formatBytes, formatMs, formatRate, svgDataUrl } from "../src/format";

describe("format", () => {
  it("bytes in binary units", () => {
    expect(formatBytes(512)).toBe("512 B");
    expect(formatBytes(1536)).toBe("1.5 KiB");
    expect(formatBytes(30.5 * 2 ** 30)).toBe("30.5 GiB");
    expect(formatBytes(null)).toBe("–");
  });
  it("rates and times", () => {
    expect(formatRate(2846.7)).toBe("2846.7");
    expect(formatRate(123456)).toBe("123.5k");
    expect(formatRate(2.5e6)).toBe("2.50M");
    expect(formatMs(1.234)).toBe("1.23 ms");
    expect(formatMs(undefined)).toBe("–");
  });
  it("an SVG becomes a data URL an <img> can show", () => {
    const url = svgDataUrl("<svg a='1'>&</svg>");
    expect(url.startsWith("data:image/svg+xml;charset=utf-8,")).toBe(true);
    expect(decodeURIComponent(url.split(",")[1])).toBe("<svg a='1'>&</svg>");
  });
  it("a real chart is recoloured for a dark popover, its data colours kept", () => {
    // A CPU sweep's chart as `headroom ledger export RUN --format svg` wrote it.
    const svg = readFileSync(resolve(process.cwd(), "tests", "chart-cpu-sweep.svg"), "utf8");
    const count = (s: string, needle: string) => s.split(needle).length - 1;
    const dark = darkChart(svg);
    expect(count(svg, 'fill="#FFFFFF"')).toBeGreaterThan(0);
    expect(count(dark, 'fill="#FFFFFF"') + count(dark, 'stroke="#FFFFFF"')).toBe(0);
    expect(count(dark, 'fill="#374151"')).toBe(0);
    expect(count(dark, 'fill="#E5E7EB"')).toBe(count(svg, 'fill="#374151"'));
    for (const data of ["#2563EB", "#7C3AED", "#D97706", "#16A34A", "#DC2626"]) {
      expect(count(dark, data)).toBe(count(svg, data));
    }
    const light = decodeURIComponent(svgDataUrl(svg, false).split(",")[1]);
    expect(light).toBe(svg);
    const themed = decodeURIComponent(svgDataUrl(svg, true).split(",")[1]);
    expect(themed).toBe(dark);
  });
});
