// Form controls shared by the panels.
import { el } from "./format";

/** A <select> of `options` (shown through `label`), with `value` chosen and a test id. */
export function select(
  testid: string,
  options: string[],
  value: string,
  label: (o: string) => string = (o) => o,
): HTMLSelectElement {
  const s = el("select");
  s.dataset.testid = testid;
  for (const o of options) {
    const opt = el("option", undefined, label(o));
    opt.value = o;
    s.append(opt);
  }
  s.value = value;
  return s;
}

/** A control under its label. */
export function field(label: string, control: HTMLElement): HTMLElement {
  const l = el("label", "field");
  l.append(el("span", undefined, label), control);
  return l;
}
