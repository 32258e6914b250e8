// The Settings panel: the keys of the configuration file the CLI reads ([app], [epochs],
// [contention], [decide]), grouped by section, each with its default; a change is saved as
// `headroom config set` saves it (checked, the rest of the file kept) and a refused value says
// why. The app's own keys (open at login, the shortcut) take effect at once and say how.
import type { Backend, Setting } from "../backend";
import { asAppError } from "../backend";
import { el } from "../format";

const SECTIONS: Record<string, string> = {
  app: "This app",
  decide: "Decision thresholds",
  contention: "Memory contention",
  epochs: "Memory over epochs",
};

/** The settings by section, in the panel's order (app, decide, contention, epochs). */
export function bySection(settings: Setting[]): [string, Setting[]][] {
  return Object.keys(SECTIONS).map((s) => [s, settings.filter((x) => x.key.startsWith(`${s}.`))]);
}

export function settingsPanel(backend: Backend): { root: HTMLElement; load(): Promise<void> } {
  const root = el("section", "panel settings");
  root.dataset.testid = "panel-settings";
  const status = el("div", "status", "");
  status.dataset.testid = "settings-status";
  const body = el("div");
  root.append(
    el("h2", undefined, "Settings"),
    el("p", "python-source", "The same file `headroom config show` prints; each value is checked before it is saved."),
    status,
    body,
  );

  // Only the newest save speaks: an older one that ends later does not overwrite its word.
  let newest = 0;

  // What is drawn now: opening the tab again redraws nothing when nothing changed, so a field
  // being typed in (or found by a test) is not swapped for a copy under the cursor.
  let drawn = "";
  function render(settings: Setting[]): void {
    const text = JSON.stringify(settings);
    if (text === drawn) return;
    drawn = text;
    body.replaceChildren();
    for (const [section, rows] of bySection(settings)) {
      if (rows.length === 0) continue;
      body.append(el("h3", undefined, SECTIONS[section]));
      const table = el("table", "facts");
      for (const s of rows) {
        const name = s.key.slice(section.length + 1);
        // A yes/no key is a checkbox, saved when it is ticked or unticked.
        const boolean = s.default === "true" || s.default === "false";
        const input = el("input");
        if (boolean) {
          input.type = "checkbox";
          input.checked = s.value === "true";
        } else {
          input.value = s.value;
        }
        input.dataset.testid = `setting-${s.key}`;
        input.title = `default: ${s.default}`;
        input.setAttribute("aria-label", s.key);
        const current = (): string => (boolean ? String(input.checked) : input.value);
        let saving: string | null = null;
        const save = async (enter = false): Promise<void> => {
          const value = current();
          // An emptied field is mid-edit, and Enter then leaving the field is one save, not two.
          // The shortcut may be emptied on purpose, with Enter: it means none.
          const cleared = s.key === "app.shortcut" && enter;
          if (value === s.value || (value.trim() === "" && !cleared) || value === saving) return;
          saving = value;
          const mine = ++newest;
          try {
            const after = await backend.setSetting(s.key, value);
            if (mine !== newest) return;
            render(after);
            status.textContent = `${s.key} saved`;
            status.dataset.state = "ok";
          } catch (e) {
            if (mine !== newest) return;
            status.textContent = asAppError(e).message;
            status.dataset.state = "error";
            // The refused value stays for the user to correct; the next opening draws afresh.
            drawn = "";
            if (boolean) input.checked = s.value === "true";
            input.focus();
          } finally {
            saving = null;
          }
        };
        input.addEventListener("change", () => void save());
        input.addEventListener("keydown", (ev) => {
          if (ev.key === "Enter" && !boolean) void save(true);
          if (ev.key === "Escape" && !boolean) input.value = s.value;
        });
        const th = el("th", undefined, name.replace(/_/g, " "));
        const td = el("td");
        td.append(input);
        if (s.value !== s.default) td.append(el("div", "observe", `default ${s.default}`));
        if (s.note) {
          const note = el("div", "setting-note", s.note);
          note.dataset.testid = `setting-note-${s.key}`;
          td.append(note);
        }
        const tr = el("tr");
        tr.append(th, td);
        table.append(tr);
      }
      body.append(table);
    }
  }

  async function load(): Promise<void> {
    try {
      render(await backend.settings());
    } catch (e) {
      status.textContent = asAppError(e).message;
      status.dataset.state = "error";
    }
  }
  return { root, load };
}
