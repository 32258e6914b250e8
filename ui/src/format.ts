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

export function formatRate(samplesPerS: number | null | undefined): string {
  if (samplesPerS === null || samplesPerS === undefined) return "–";
  if (samplesPerS >= 1e6) return `${(samplesPerS / 1e6).toFixed(2)}M`;
  if (samplesPerS >= 1e4) return `${(samplesPerS / 1e3).toFixed(1)}k`;
  return samplesPerS.toFixed(1);
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
