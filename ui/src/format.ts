// Numbers for people.

export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = bytes;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
}

/** Samples per second in a table cell: the full value (sentences, from the core, round to three
 * significant digits; a table keeps what was measured). */
export function formatRate(samplesPerS: number | null | undefined): string {
  if (samplesPerS === null || samplesPerS === undefined || !Number.isFinite(samplesPerS)) return "–";
  return samplesPerS >= 1e6 ? samplesPerS.toFixed(0) : samplesPerS.toFixed(1);
}

/** Joules per sample, three significant digits ("0.0330 J"). */
export function formatJoules(j: number | null | undefined): string {
  if (j === null || j === undefined || !Number.isFinite(j) || j <= 0) return "–";
  return `${j.toPrecision(3)} J`;
}

export function formatMs(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? "–" : `${ms.toFixed(2)} ms`;
}

/** The colours of Headroom's charts (drawn in Rust, on white) and what each becomes on a dark
 * popover: the background, the light grid, text, axes and the mesh. Data colours stay. */
const DARK_CHART: [RegExp, string][] = [
  [/fill="#FFFFFF"/gi, 'fill="#111827"'],
  [/stroke="#FFFFFF"/gi, 'stroke="#1F2937"'],
  [/fill="#374151"/gi, 'fill="#E5E7EB"'],
  [/stroke="#000000"/gi, 'stroke="#9CA3AF"'],
  [/stroke="#E5E7EB"/gi, 'stroke="#374151"'],
];

/** A chart's SVG recoloured for a dark appearance. */
export function darkChart(svg: string): string {
  return DARK_CHART.reduce((s, [from, to]) => s.replace(from, to), svg);
}

/** Whether the system asks for a dark appearance now. */
export function prefersDark(): boolean {
  return typeof matchMedia === "function" && matchMedia("(prefers-color-scheme: dark)").matches;
}

/** An SVG document as an <img> source (the CSP allows data: images, not inline markup styles),
 * in the system's appearance. */
export function svgDataUrl(svg: string, dark: boolean = prefersDark()): string {
  const themed = dark ? darkChart(svg) : svg;
  return `data:image/svg+xml;charset=utf-8,${encodeURIComponent(themed)}`;
}

/** One point of a chart a hover can find: where it is drawn (the SVG's pixels) and what it says. */
export interface HoverTarget {
  x: number;
  y: number;
  label: string;
}

/** The hover targets the core writes into a chart (invisible circles with `data-label`), and the
 * SVG's own size they are placed in. */
export function hoverTargets(svg: string): { width: number; height: number; targets: HoverTarget[] } {
  const size = /<svg\b[^>]*?\swidth="(\d+)"[^>]*?\sheight="(\d+)"/.exec(svg);
  const unescape = (t: string) =>
    t.replace(/&quot;/g, '"').replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
  const targets = [...svg.matchAll(/<circle cx="(-?\d+)" cy="(-?\d+)" r="10" data-label="([^"]*)"\/>/g)].map((m) => ({
    x: Number(m[1]),
    y: Number(m[2]),
    label: unescape(m[3]),
  }));
  return { width: size ? Number(size[1]) : 0, height: size ? Number(size[2]) : 0, targets };
}

/** The target nearest (sx, sy) in the SVG's pixels, if one is within `radius`. */
export function nearestTarget(targets: HoverTarget[], sx: number, sy: number, radius = 16): HoverTarget | null {
  let best: HoverTarget | null = null;
  let bestD = radius * radius;
  for (const t of targets) {
    const d = (t.x - sx) ** 2 + (t.y - sy) ** 2;
    if (d <= bestD) {
      best = t;
      bestD = d;
    }
  }
  return best;
}

/** Hover on a chart picture: the point under the pointer (batch, samples/s, step time, peak)
 * in a tip beside it. `update` takes each redrawn SVG; the tip goes with the pointer. */
export function chartHover(img: HTMLImageElement, testid: string): { tip: HTMLElement; update(svg: string): void } {
  const tip = el("div", "chart-tip");
  tip.dataset.testid = testid;
  tip.hidden = true;
  let chart = hoverTargets("");
  img.addEventListener("mousemove", (ev) => {
    const r = img.getBoundingClientRect();
    if (!chart.width || r.width === 0 || r.height === 0) return;
    const sx = ((ev.clientX - r.left) * chart.width) / r.width;
    const sy = ((ev.clientY - r.top) * chart.height) / r.height;
    // The radius in the SVG's pixels: about 12 screen pixels whatever the scale.
    const hit = nearestTarget(chart.targets, sx, sy, (12 * chart.width) / r.width);
    if (!hit) {
      tip.hidden = true;
      return;
    }
    tip.textContent = hit.label;
    tip.hidden = false;
    const w = window.innerWidth || 400;
    const left = ev.clientX + 12 + tip.offsetWidth > w ? Math.max(4, ev.clientX - 12 - tip.offsetWidth) : ev.clientX + 12;
    tip.style.left = `${left}px`;
    tip.style.top = `${ev.clientY + 14}px`;
  });
  img.addEventListener("mouseleave", () => {
    tip.hidden = true;
  });
  return {
    tip,
    update(svg: string) {
      chart = hoverTargets(svg);
    },
  };
}

/** Creates an element with a class and text. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  cls?: string,
  text?: string,
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
