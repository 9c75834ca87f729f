// Always-visible VRAM readout in ComfyUI's top bar: used / total of the GPU ComfyUI runs on (system
// RAM on a CPU-only ComfyUI), a peak-hold mark, the last run's measured-vs-predicted line in the
// tooltip; a click opens the VRAM sidebar panel.
//
// Extension point: `actionBarButtons` of app.registerExtension (frontends 1.35.9, 1.41 and 1.58
// render them in the top bar's action bar: ActionBarButtons.vue). The button's label is static, so
// the live meter is a small DOM element placed inside that button (class "vrb-readout-btn").
// Data: GET /api/vram_budget/readout every 2 s while the page is visible (one light request: no
// process list, no model scan), plus the "vram_budget.run" websocket event after each run.
import { app } from "../../scripts/app.js";
import { api } from "../../scripts/api.js";
import { ensureStylesheet } from "./vram_style.js";
import { summarize, chipText } from "./vram_summary.js";
import * as estimate from "./vram_estimate.js";

const BUTTON_CLASS = "vrb-readout-btn";
const TAB_ID = "vram-budget";
const POLL_MS = 2000;
const SETTING_SHOW = "VRAMBudget.Readout.Show";
const GiB = 1024 ** 3;

const readout = {
  data: null, // the last /readout answer
  error: null,
  hold: 0, // peak-hold: the highest "used" since the current (or last) run started
  lastRun: null,
  timer: null,
  shown: true,
  epoch: 0, // preview() calls: a poll begun before one is discarded
  verdict: null, // the open workflow's verdict (vram_summary.summarize of the shared estimate)
};

const g1 = (bytes) => (bytes / GiB).toFixed(1);

function level(fraction) {
  if (fraction >= 0.9) return "bad";
  if (fraction >= 0.75) return "warn";
  return "ok";
}

function tooltip(d) {
  if (!d) return readout.error ? `VRAM readout: ${readout.error}` : "VRAM readout: reading…";
  const lines = [d.kind === "cuda"
    ? `VRAM on ${d.name}: ${g1(d.used)} GiB used of ${g1(d.total)} GiB (all processes, as nvidia-smi counts).`
    : `System RAM: ${g1(d.used)} GiB used of ${g1(d.total)} GiB (ComfyUI runs on the CPU: no VRAM to show).`];
  if (readout.hold) {
    lines.push(d.torch_peak != null
      ? `Peak of this run: ${g1(readout.hold)} GiB (PyTorch's own peak plus what is outside PyTorch).`
      : `Highest reading since the last run started: ${g1(readout.hold)} GiB.`);
  }
  const v = readout.verdict;
  if (v) {
    lines.push(`This workflow: ${v.label}${v.detail ? `, ${v.detail}` : ""}${v.ramStops ? `; ${v.stopper}` : ""}.`);
    if (v.risk && v.risk.level !== "unknown") lines.push(`Risk of running out of memory: ${v.risk.word}.`);
    if (v.assumptions) lines.push(`Assumes: ${v.assumptions}.`);
  }
  const run = readout.lastRun;
  if (run) lines.push(`Last run: ${run.summary}.`);
  lines.push("Click: the VRAM panel.");
  return lines.join("\n");
}

function build() {
  const root = document.createElement("span");
  root.className = "vrb-readout";
  root.dataset.testid = "vram-budget-readout";
  root.innerHTML = `<span class="vrb-readout-chip" data-testid="vram-readout-verdict" hidden></span>
    <span class="vrb-readout-label"></span>
    <span class="vrb-readout-meter"><span class="vrb-readout-fill"></span><span class="vrb-readout-peak"></span></span>
    <span class="vrb-readout-text"></span>`;
  return root;
}

function paintChip(root) {
  const chip = root.querySelector(".vrb-readout-chip");
  if (!chip) return;
  const v = readout.verdict;
  chip.hidden = !v;
  if (!v) return;
  chip.textContent = chipText(v);
  chip.dataset.tone = v.ramStops ? "bad" : v.tone;
  chip.dataset.verdict = v.card;
  chip.dataset.risk = v.risk?.level || "";
}

function paint(root) {
  paintChip(root);
  const d = readout.data;
  const label = root.querySelector(".vrb-readout-label");
  const fill = root.querySelector(".vrb-readout-fill");
  const peak = root.querySelector(".vrb-readout-peak");
  const text = root.querySelector(".vrb-readout-text");
  root.title = tooltip(d);
  if (!d) {
    label.textContent = "VRAM";
    text.textContent = readout.error ? "–" : "…";
    fill.style.width = "0%";
    peak.style.display = "none";
    return;
  }
  const fraction = d.total > 0 ? Math.min(1, d.used / d.total) : 0;
  label.textContent = d.kind === "cuda" ? "VRAM" : "RAM";
  text.textContent = `${g1(d.used)} / ${g1(d.total)} GiB`;
  fill.style.width = `${(100 * fraction).toFixed(1)}%`;
  fill.dataset.level = level(fraction);
  const hold = d.total > 0 ? Math.min(1, readout.hold / d.total) : 0;
  peak.style.display = readout.hold > d.used ? "block" : "none";
  peak.style.left = `calc(${(100 * hold).toFixed(1)}% - 1px)`;
  root.dataset.used = String(d.used);
  root.dataset.hold = String(readout.hold);
}

/** Put the meter into the action-bar button (again, if the frontend re-rendered it). */
function mount() {
  const button = document.querySelector(`button.${BUTTON_CLASS}`);
  if (!button) return null;
  let root = button.querySelector(".vrb-readout");
  if (!root) {
    root = build();
    button.append(root);
    button.setAttribute("aria-label", "VRAM readout: open the VRAM panel");
  }
  button.style.display = readout.shown ? "" : "none";
  paint(root);
  return root;
}

function update(data) {
  readout.data = data;
  readout.error = null;
  readout.hold = Math.max(readout.hold, data.used, data.peak_used ?? 0);
  if (data.last_run && data.last_run.prompt_id !== readout.lastRun?.prompt_id) readout.lastRun = data.last_run;
  mount();
}

async function poll() {
  clearTimeout(readout.timer);
  try {
    if (!document.hidden && readout.shown) {
      // preview() may run while this fetch or its body is awaited: a document fetched before it
      // must not replace the previewed one (readout.epoch counts preview() calls).
      const epoch = readout.epoch;
      const response = await api.fetchApi("/vram_budget/readout", { cache: "no-store" });
      const body = response.ok ? await response.json() : null;
      if (readout.frozen || epoch !== readout.epoch) { /* showing a document given to preview() */ }
      else if (body) update(body);
      else readout.error = `HTTP ${response.status}`;
    }
  } catch {
    readout.error = "ComfyUI is not reachable";
  }
  mount();
  readout.timer = setTimeout(poll, POLL_MS);
}

async function openPanel() {
  const manager = app.extensionManager;
  try {
    await manager.command.execute(`Workspace.ToggleSidebarTab.${TAB_ID}`);
    return;
  } catch (err) {
    console.warn("[VRAM Budget] toggle command failed, opening the tab directly", err);
  }
  if (manager?.sidebarTab) manager.sidebarTab.activeSidebarTabId = TAB_ID;
}

app.registerExtension({
  name: "VRAMBudget.Readout",
  actionBarButtons: [{ icon: "pi pi-microchip", class: BUTTON_CLASS, onClick: openPanel }],
  settings: [{
    id: SETTING_SHOW,
    name: "Show the VRAM readout in the top bar",
    type: "boolean",
    defaultValue: true,
    category: ["VRAM Budget", "Readout", "Show"],
    onChange: (value) => {
      readout.shown = value !== false;
      mount();
    },
  }],
  async setup() {
    ensureStylesheet("vrb-readout-styles", "vram_readout.css");
    // the open workflow's verdict, the same answer the panel shows (one shared estimate)
    estimate.subscribe((result) => {
      readout.verdict = result?.state === "ok" ? summarize(result.data?.budget) : readout.verdict && result?.state === "loading" ? readout.verdict : null;
      mount();
    });
    estimate.watchGraph();
    setTimeout(() => estimate.schedule(0), 1500); // the workflow loads after setup()
    api.addEventListener("execution_start", () => {
      readout.hold = readout.data?.used ?? 0; // a new run: the peak-hold starts again
      mount();
    });
    api.addEventListener("vram_budget.run", (event) => {
      readout.lastRun = event.detail;
      mount();
    });
    document.addEventListener("visibilitychange", () => { if (!document.hidden) poll(); });
    // The action bar renders after setup(): mount as soon as the button exists.
    for (const delay of [0, 100, 300, 1000]) setTimeout(mount, delay);
    poll();
  },
});

// For the end-to-end test and for debugging: preview(data) shows a /readout document (e.g. a GPU's,
// on a machine without one) instead of the live one; preview(null) goes live again.
function preview(data) {
  readout.epoch += 1;
  readout.frozen = Boolean(data);
  if (data) {
    readout.hold = 0;
    update(data);
  } else {
    poll();
  }
}

window.__vramBudgetReadout = { readout, mount, poll, openPanel, preview };
