// The popover in a plain browser with the mock backend and the tests' real captures (the H200's
// doctor report and decision, a CPU sweep's chart), to look at: `bash scripts/ui-preview.sh`
// takes light and dark screenshots of every tab. `#TAB` picks the tab it opens on.
import { mount } from "../../src/app";
import type { ContentionReport, Decision, Point, Report, SweepSnapshot } from "../../src/backend";
import { mockBackend } from "../../src/backend/mock";
import decideText from "../../../bench/results/decide_h200.json?raw";
import doctorText from "../../../bench/results/doctor_h200.json?raw";
import chart from "../chart-cpu-sweep.svg?raw";

const point = (batch: number, sps: number, peak: number): Point =>
  ({ batch, status: "ok", samples_per_s: sps, step_ms_p50: (1000 * batch) / sps, peak_bytes: peak }) as Point;
const sweep = {
  running: false,
  run_id: 7,
  workload: "mlp",
  device: "cpu",
  host: null,
  device_name: "AMD EPYC",
  budget_bytes: 2 ** 33,
  message: "done",
  points: [point(16, 640, 2 ** 30), point(64, 1450, 3 * 2 ** 30), point(256, 1520, 9 * 2 ** 30)],
  summary: null,
  status: "complete",
  error: null,
  chart_svg: chart,
  comparison: null,
  warnings: [],
} as unknown as SweepSnapshot;
const d = JSON.parse(decideText) as { decision: Decision; contention: ContentionReport };
const backend = mockBackend({
  report: JSON.parse(doctorText) as Report,
  overview: { project: null, decision: d.decision, contention: d.contention, taken_at: "2026-11-30T14:42:07Z", problem: null, interval_s: 5 },
  snapshot: sweep,
  // With a project, as a researcher's popover has: the project bar above the tabs.
  projects: [
    {
      name: "resnet-cifar",
      dir: "/Users/you/code/resnet-cifar",
      python: "/Users/you/code/resnet-cifar/.venv/bin/python",
      command: ["python", "train.py", "--batch-size", "{batch}", "--device", "{device}"],
    },
  ],
  settings: [
    { key: "app.open_at_login", value: "true", default: "false", note: "starts at login: /home/you/.config/autostart/Headroom.desktop" },
    { key: "app.shortcut", value: "CmdOrCtrl+Shift+H", default: "CmdOrCtrl+Shift+H", note: "CmdOrCtrl+Shift+H opens and closes the popover from any app" },
    { key: "decide.amp_gain", value: "0.15", default: "0.1", note: null },
    { key: "decide.data_share", value: "0.5", default: "0.5", note: null },
    { key: "contention.interval_s", value: "5", default: "5", note: null },
    { key: "epochs.leak_growth", value: "0.26", default: "0.26", note: null },
  ],
});
const app = mount(document.getElementById("app")!, backend);
const tab = location.hash.slice(1);
if (tab) app.show(tab as Parameters<typeof app.show>[0]);
