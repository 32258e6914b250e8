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

/** An SVG document as an <img> source (the CSP allows data: images, not inline markup styles). */
export function svgDataUrl(svg: string): string {
  return `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`;
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
