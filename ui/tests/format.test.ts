import { describe, expect, it } from "vitest";

import { formatBytes, formatMs, formatRate, svgDataUrl } from "../src/format";

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
});
