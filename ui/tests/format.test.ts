import { describe, expect, it } from "vitest";

import { readFileSync } from "node:fs";
import { resolve } from "node:path";

import { chartHover, darkChart, formatBytes, formatMs, formatRate, hoverTargets, nearestTarget, svgDataUrl } from "../src/format";

describe("format", () => {
  it("bytes in binary units", () => {
    expect(formatBytes(512)).toBe("512 B");
    expect(formatBytes(1536)).toBe("1.5 KiB");
    expect(formatBytes(30.5 * 2 ** 30)).toBe("30.5 GiB");
    expect(formatBytes(null)).toBe("–");
  });
  it("rates and times", () => {
    expect(formatRate(2846.7)).toBe("2846.7");
    // Tables keep the full value: "10041.0", not "10.0k" (that is a sentence's).
    expect(formatRate(10041)).toBe("10041.0");
    expect(formatRate(123456)).toBe("123456.0");
    expect(formatRate(2.5e6)).toBe("2500000");
    expect(formatRate(undefined)).toBe("–");
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

  it("reads the hover targets the core writes into a real chart, and finds the point under the pointer", () => {
    const svg = readFileSync(resolve(process.cwd(), "tests", "chart-hover.svg"), "utf8");
    const h = hoverTargets(svg);
    expect([h.width, h.height]).toEqual([360, 420]);
    expect(h.targets).toHaveLength(7);
    const b4 = h.targets.find((t) => t.label.startsWith("batch 4 "))!;
    expect(b4.label).toBe("batch 4 · 3000.0 samples/s · 1.33 ms/step · peak 1.2 GiB");
    expect(nearestTarget(h.targets, b4.x + 5, b4.y - 5)).toBe(b4);
    expect(nearestTarget(h.targets, b4.x + 40, b4.y + 40)).toBeNull();
    expect(h.targets.some((t) => t.label === "batch 32 · oom · needs about 9.0 GiB")).toBe(true);
    // Dark recolouring keeps them.
    expect(hoverTargets(darkChart(svg)).targets).toEqual(h.targets);
  });

  it("shows the point's figures beside the pointer on a chart drawn at half its size, and hides off it", () => {
    const svg = readFileSync(resolve(process.cwd(), "tests", "chart-hover.svg"), "utf8");
    const img = document.createElement("img");
    document.body.append(img);
    // Drawn at 180 × 210 from (10, 20): half the SVG's 360 × 420.
    img.getBoundingClientRect = () => ({ left: 10, top: 20, width: 180, height: 210, right: 190, bottom: 230, x: 10, y: 20, toJSON: () => ({}) });
    const hover = chartHover(img, "tip");
    hover.update(svg);
    const b16 = hoverTargets(svg).targets.find((t) => t.label.startsWith("batch 16 "))!;
    img.dispatchEvent(new MouseEvent("mousemove", { clientX: 10 + b16.x / 2 + 3, clientY: 20 + b16.y / 2 - 2 }));
    expect(hover.tip.hidden).toBe(false);
    expect(hover.tip.textContent).toBe(b16.label);
    img.dispatchEvent(new MouseEvent("mousemove", { clientX: 10 + 2, clientY: 20 + 205 }));
    expect(hover.tip.hidden).toBe(true);
    img.dispatchEvent(new MouseEvent("mousemove", { clientX: 10 + b16.x / 2, clientY: 20 + b16.y / 2 }));
    img.dispatchEvent(new MouseEvent("mouseleave"));
    expect(hover.tip.hidden).toBe(true);
    img.remove();
  });
});
