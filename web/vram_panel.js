// VRAM Budget sidebar panel: live GPU/RAM bars, loaded models with unload buttons, the current
// workflow's budget and the last out-of-memory error explained in plain words.
//
// Plain ES module, no build step. Talks only to this pack's routes under /api/vram_budget/
// (nodes/routes.py). Sidebar API: app.extensionManager.registerSidebarTab({type: "custom",
// render(el), destroy()}) as in ComfyUI_frontend 1.35.9 and 1.41 (ExtensionSlot.vue calls
// render(el) through a function ref, possibly more than once, and destroy() on unmount).
import { app } from "../../scripts/app.js";
import { api } from "../../scripts/api.js";
import { ensureStylesheet } from "./vram_style.js";
import { summarize, chipText, speedWords, userWords, VERDICT_LABEL, NOTHING_PRICED } from "./vram_summary.js";
import * as estimate from "./vram_estimate.js";

const EXTENSION = "VRAMBudget.Panel";
const TAB_ID = "vram-budget";
const SETTING_REFRESH = "VRAMBudget.Panel.RefreshMs";
const DEFAULT_REFRESH_MS = 1500;
const GiB = 1024 ** 3;

// ---------------------------------------------------------------------------------------------
// helpers
const gib = (bytes) => (bytes == null || Number.isNaN(bytes) ? "–" : `${(bytes / GiB).toFixed(2)} GiB`);
const pct = (part, whole) => (whole > 0 ? Math.max(0, Math.min(100, (100 * part) / whole)) : 0);
/** A byte count from a server document, or null (missing, not a number, negative). */
const bytesOf = (value) => (typeof value === "number" && Number.isFinite(value) && value >= 0 ? Math.round(value) : null);

/** Tiny DOM builder: h("div.cls.other", {title: "x", onclick}, child, "text", [children]). */
function h(spec, attrs, ...children) {
  const [tag, ...classes] = spec.split(".");
  const el = document.createElement(tag || "div");
  if (classes.length) el.className = classes.join(" ");
  if (attrs && (typeof attrs !== "object" || attrs instanceof Node || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value == null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "style" && typeof value === "object") Object.assign(el.style, value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  const add = (child) => {
    if (child == null || child === false) return;
    if (Array.isArray(child)) child.forEach(add);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  };
  children.forEach(add);
  return el;
}

async function call(route, body) {
  const init = body === undefined ? {} : {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  };
  const response = await api.fetchApi(`/vram_budget/${route}`, init);
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = { error: `HTTP ${response.status}` };
  }
  return { status: response.status, ok: response.ok, data: data || {} };
}

function toast(severity, summary, detail, life = 8000) {
  try {
    app.extensionManager?.toast?.add({ severity, summary, detail, life });
  } catch (err) {
    console.warn("[VRAM Budget] toast failed", err);
  }
}

function refreshMs() {
  let value = DEFAULT_REFRESH_MS;
  try {
    value = Number(app.extensionManager?.setting?.get(SETTING_REFRESH)) || DEFAULT_REFRESH_MS;
  } catch {
    /* settings not ready */
  }
  return Math.max(500, Math.min(60000, value));
}

function isOom(detail) {
  const type = String(detail?.exception_type || "");
  const message = String(detail?.exception_message || "").toLowerCase();
  return type.endsWith("OutOfMemoryError") || message.includes("out of memory") || message.includes("allocation on device")
    // system RAM (oom.py _host_form): page file, CPU allocator, MemoryError, pinning
    || type.endsWith("MemoryError") || /paging file is too small|error 1455|defaultcpuallocator|alloc_cpu\.cpp|cudahostregister|cannot allocate memory/.test(message);
}

/** "NVIDIA GeForce RTX 4090" -> "RTX 4090" (the full name stays in the tooltip). */
function shortGpuName(name) {
  return String(name || "").replace(/^NVIDIA\s+/i, "").replace(/^GeForce\s+/i, "").replace(/^AMD\s+Radeon\s+/i, "Radeon ") || "GPU";
}

const TYPE_LABEL = {
  diffusion: "diffusion model",
  text_encoder: "text encoder",
  vae: "VAE",
  controlnet: "ControlNet",
  clip_vision: "CLIP vision",
  upscale: "upscaler",
  other: "model",
};

// ---------------------------------------------------------------------------------------------
// state shared by the panel and the always-on OOM listener
const state = {
  status: null,
  statusError: null,
  action: null, // {kind, text, tone} result line under the buttons
  pending: new Set(), // actions in flight: "unload_all", "free_cache", "unload:<id>"
  budget: null, // the shared estimate (vram_estimate.js): {state: "idle"|"loading"|"ok"|"unavailable"|"error", data, error}
  cards: null,
  detailsOpen: false, // the stage breakdown, fixes, capacity, cheapest card
  lastStop: null, // the VRAM Budget node stopped a prompt before any model loaded ("vram_budget.stopped")
  lastOom: null, // {diagnosis, node_id, node_type, timestamp, ...}
  oomFresh: false,
  runs: null, // measured against predicted, newest first (GET /vram_budget/runs, "vram_budget.run" events)
  runsMeasuring: null, // "cuda" | "cpu"
  regressions: [], // the version-regression guard: [{workflow_key, sentence, ...}] (GET /vram_budget/runs)
};

let panel = null; // {root, sections, timer, mounted, lastKeys}

// ---------------------------------------------------------------------------------------------
// sections
function barSegments(segments, total) {
  return h("div.vrb-bar", { role: "img", "aria-label": segments.map((s) => `${s.label} ${gib(s.bytes)}`).join(", ") },
    segments.filter((s) => s.bytes > 0).map((s) =>
      h(`div.vrb-seg.vrb-${s.cls}`, { style: { width: `${pct(s.bytes, total)}%` }, title: `${s.label}: ${gib(s.bytes)}` })));
}

function legend(segments) {
  return h("div.vrb-legend", segments.map((s) =>
    h("div.vrb-legend-item", { title: s.hint || "" },
      h(`span.vrb-dot.vrb-${s.cls}`), h("span.vrb-legend-label", s.label), h("span.vrb-legend-value", gib(s.bytes)))));
}

function renderDevices(status) {
  const out = [];
  if (!status.cuda) {
    out.push(h("div.vrb-note.vrb-note-info",
      h("i.pi.pi-info-circle"),
      h("span", `No CUDA device: ComfyUI runs on the CPU (${status.compute_device?.name || "cpu"}). Models live in system RAM.`)));
  }
  for (const d of status.devices || []) {
    const segments = [
      { cls: "alloc", label: "PyTorch allocated", bytes: d.allocated, hint: "memory in use by tensors (weights, activations)" },
      { cls: "cache", label: "Reserved, unused", bytes: d.reserved_unallocated, hint: "held by PyTorch's cache but not in use" },
    ];
    if (d.dynamic_weights) segments.push({ cls: "dyn", label: "Dynamic VRAM weights", bytes: d.dynamic_weights });
    if (d.other != null) segments.push({ cls: "other", label: "Other / driver", bytes: d.other, hint: "other processes plus this process's CUDA context" });
    if (d.free != null) segments.push({ cls: "free", label: "Free", bytes: d.free });
    const card = h("div.vrb-device",
      h("div.vrb-row",
        h("div.vrb-device-name", { title: d.name },
          h("span.vrb-chip", `GPU ${d.index}`), h("span.vrb-ellipsis", shortGpuName(d.name))),
        h("div.vrb-total", gib(d.total))),
      d.is_compute_device ? null : h("div.vrb-muted.vrb-small", "Not used by this ComfyUI"),
      barSegments(segments.filter((s) => s.cls !== "free"), d.total),
      legend(segments));
    if (d.free == null) card.append(h("div.vrb-muted.vrb-small", "Usage unknown: ComfyUI never touched this card (install nvidia-ml-py to see it)."));
    if (d.fragmentation) {
      card.append(h("div.vrb-note.vrb-note-warn", h("i.pi.pi-exclamation-triangle"),
        h("div", h("b", `Fragmentation: ${gib(d.fragmentation.bytes)} cached but unused.`),
          h("details.vrb-fix", h("summary", "How to fix"), h("div", d.fragmentation.fix)))));
    }
    if (d.processes && d.processes.length) {
      card.append(h("details.vrb-procs",
        h("summary", `${d.processes.length} process${d.processes.length > 1 ? "es" : ""} on this GPU`),
        h("div", d.processes.map((p) => h("div.vrb-row.vrb-small",
          h("span", `${p.name} (${p.pid})${p.self ? " · this ComfyUI" : ""}`), h("span", gib(p.used)))))));
    }
    out.push(card);
  }
  const ram = status.ram;
  if (ram) {
    const comfy = ram.process_rss ?? 0;
    const segments = [
      { cls: "alloc", label: "ComfyUI process", bytes: comfy },
      { cls: "other", label: "Other programs", bytes: Math.max(0, ram.used - comfy) },
      { cls: "free", label: "Available", bytes: ram.available },
    ];
    const prediction = ramPrediction(ram);
    const bar = barSegments(segments.slice(0, 2), ram.total);
    const items = legend(segments);
    let line = null;
    let body = bar;
    if (prediction) {
      // The open workflow's predicted RAM peak (OS + programs + ComfyUI + models), on the same
      // scale as "used": a marker on the bar, a legend row and one line saying what it means.
      const over = ram.total > 0 && prediction.peak > ram.total;
      const usedPct = pct(ram.used ?? 0, ram.total);
      const peakPct = pct(prediction.peak, ram.total);
      body = h("div.vrb-bar-wrap", bar,
        // a faint band from the live figure up to the prediction: what this workflow would add
        peakPct > usedPct ? h(`div.vrb-predband.vrb-pred-${prediction.tone}`, { style: { left: `${usedPct}%`, width: `${peakPct - usedPct}%` } }) : null,
        h(`div.vrb-predline.vrb-pred-${prediction.tone}${over ? ".vrb-over" : ""}`, {
          "data-testid": "ram-predicted",
          style: { left: `${peakPct}%` },
          title: `predicted peak of this workflow: ${gib(prediction.peak)}${over ? ` (beyond the ${gib(ram.total)} installed)` : ""}`,
        }));
      items.append(h("div.vrb-legend-item.vrb-legend-pred", { title: "the open workflow's predicted RAM peak (Workflow budget below)" },
        h(`span.vrb-dot.vrb-pred-swatch.vrb-pred-${prediction.tone}`), h("span.vrb-legend-label", "Workflow peak (predicted)"),
        h("span.vrb-legend-value", gib(prediction.peak))));
      line = h(`div.vrb-pred-text.vrb-small.vrb-pred-${prediction.tone}`, { "data-testid": "ram-predicted-text", dataset: { outcome: prediction.outcome } },
        prediction.text);
    }
    out.push(h("div.vrb-device", { dataset: { device: "ram" } },
      h("div.vrb-row", h("div.vrb-device-name", h("span.vrb-chip.vrb-chip-ram", "RAM"), h("span", ram.container_limit ? { title: `the container's memory limit; the host has ${gib(ram.host_total)}` } : {},
        ram.container_limit ? "Container memory (limit)" : "System memory")), h("div.vrb-total", gib(ram.total))),
      body,
      items,
      line));
  }
  if (status.dynamic_vram?.note) out.push(h("div.vrb-muted.vrb-small", status.dynamic_vram.note));
  return out;
}

// ---------------------------------------------------------------------------------------------
// who else holds the card, prompts held until they fit, memory that creeps up (admission.py, cotenants.py, leaks.py)
function cotenantRows(co) {
  const procs = Array.isArray(co?.processes) ? co.processes.filter((p) => p && typeof p === "object").slice(0, 8) : [];
  if (!procs.length) return null;
  const total = procs.reduce((a, p) => a + (bytesOf(p.used) || 0), 0);
  return h("div.vrb-note.vrb-note-info", { "data-testid": "cotenants" }, h("i.pi.pi-users"),
    h("div",
      h("b", `Other programs hold ${gib(total)} of the ${shortGpuName(String(co.card || "GPU"))}`),
      procs.map((p) => h("div.vrb-row.vrb-small",
        h("span", `${String(p.label || p.name || "a process")}${p.pid ? ` · pid ${p.pid}` : ""}`), h("span", gib(p.used)))),
      procs.some((p) => p.advice) ? h("details.vrb-fix", h("summary", "How to free it"),
        h("div", procs.filter((p) => p.advice).map((p) => h("div.vrb-small", String(p.advice))))) : null));
}

/** A prompt held or started (admission.py pushes its state): shown at once, not at the next poll. */
function onAdmission(event) {
  const adm = event?.detail;
  if (!adm || typeof adm !== "object" || !state.status || state.frozen) return;
  state.status = { ...state.status, admission: adm };
  renderAll();
}

async function admissionCall(body, key) {
  state.pending.add(key);
  renderAll();
  try {
    const { ok, data } = await call("admission", body);
    if (ok) state.status = { ...state.status, admission: data };
    else toast("error", "VRAM Budget", data.error || "the queue did not answer");
  } finally {
    state.pending.delete(key);
    renderAll();
  }
}

function renderWatch(status) {
  const out = [cotenantRows(status.cotenants)];
  const adm = status.admission;
  if (adm && typeof adm === "object") {
    out.push(h("label.vrb-row.vrb-small.vrb-switch", { title: "Before a queued prompt starts, check it against the memory free now; hold it while other programs hold what it needs" },
      h("span", "Hold prompts until they fit"),
      h("input", { type: "checkbox", "data-testid": "admission-switch", checked: adm.enabled === true, disabled: state.pending.has("admission"),
        onchange: (e) => admissionCall({ enabled: e.target.checked }, "admission") })));
    if (adm.enabled === true) {
      out.push(h("label.vrb-row.vrb-small.vrb-switch", { title: "A held prompt runs at once when an fp8 text encoder already on disk, or VAE Decode (Auto Tiled), makes it fit: the same images, less memory" },
        h("span.vrb-muted", "…or run it with an fp8 text encoder / tiled decode that fits"),
        h("input", { type: "checkbox", "data-testid": "admission-fixes", checked: adm.fixes === true, disabled: state.pending.has("fixes"),
          onchange: (e) => admissionCall({ fixes: e.target.checked }, "fixes") })));
    }
    const held = adm.held;
    if (held && typeof held === "object" && held.prompt_id) {
      const id = String(held.prompt_id);
      out.push(h("div.vrb-note.vrb-note-warn", { "data-testid": "admission-held" }, h("i.pi.pi-pause"),
        h("div",
          h("b", "A prompt is waiting for memory"),
          h("div.vrb-small", String(held.message || "")),
          h("div.vrb-row",
            h("button.vrb-btn.vrb-btn-small", { type: "button", "data-action": "release", disabled: state.pending.has("release"),
              onclick: () => admissionCall({ release: id }, "release") }, "Run anyway"),
            h("button.vrb-btn.vrb-btn-small", { type: "button", "data-action": "cancel", disabled: state.pending.has("cancel"),
              onclick: () => admissionCall({ cancel: id }, "cancel") }, "Cancel it")))));
    }
  }
  const flag = status.leaks?.flag;
  if (flag && typeof flag === "object") {
    out.push(h("div.vrb-note.vrb-note-warn", { "data-testid": "leak" }, h("i.pi.pi-chart-line"),
      h("div", h("b", "Memory creeps up run after run"), h("div.vrb-small", String(flag.text || "")),
        Array.isArray(flag.fixes) && flag.fixes.length ? h("details.vrb-fix", { open: true }, h("summary", "How to fix"),
          h("div", flag.fixes.slice(0, 4).map((f) => h("div.vrb-small", String(f))))) : null)));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// system RAM of the open workflow (budget.py _host_dict, host_memory.py): older servers send none
const HOST_LABEL = { fits: "Fits in RAM", swapping: "Swaps", thrashing: "Re-reads from disk", oom: "Out of RAM", assumed: "RAM not known" };
const HOST_TONE = { fits: "plain", swapping: "warn", thrashing: "warn", oom: "bad", assumed: "info" };
const HOST_BAD = new Set(["oom", "swapping", "thrashing"]);

/** The host side of the current estimate, or null when the server sent none. Every field checked. */
function hostSummary() {
  try {
    return readHost();
  } catch (err) {
    console.warn("[VRAM Budget] unreadable host estimate", err);
    return null;
  }
}

function readHost() {
  const data = state.budget?.data?.budget;
  if (!data || typeof data !== "object") return null;
  const peak = bytesOf(data.ram_peak_bytes);
  if (!peak) return null;
  const host = data.host && typeof data.host === "object" ? data.host : {};
  const stages = Array.isArray(data.stages) ? data.stages : [];
  const outcome = typeof data.host_outcome === "string" ? data.host_outcome
    : typeof host.outcome === "string" ? host.outcome : "";
  const runs = stages.map((s, i) => ({ i, ram: s && typeof s.ram === "object" && s.ram ? s.ram : null }))
    .filter((r) => r.ram);
  const titleOf = (i) => {
    if (!Number.isInteger(i) || i < 0 || i >= stages.length) return null;
    const s = stages[i] || {};
    return String(s.title || s.kind || `stage ${i + 1}`);
  };
  const peakStage = Number.isInteger(host.peak_stage) ? host.peak_stage : null; // -1 = while loading
  // the stages with the run's outcome: the first of them is where ComfyUI stops (the verdict's own
  // choice, budget.estimate), and its explanation is the one shown
  const hit = runs.filter((r) => r.ram.outcome === outcome);
  const first = hit[0] || null;
  const swap = Math.max(0, ...hit.map((r) => bytesOf(r.ram.swap_bytes) || 0));
  const shortfall = Math.max(0, ...hit.map((r) => bytesOf(r.ram.shortfall_bytes) || 0));
  const lastLine = (r) => (r && Array.isArray(r.ram.explanation) && r.ram.explanation.length
    ? String(r.ram.explanation[r.ram.explanation.length - 1]) : null);
  const explanation = lastLine(first);
  const remedies = (Array.isArray(host.remedies) ? host.remedies : [])
    .filter((r) => r && typeof r === "object" && (r.title || r.detail));
  return {
    peak, outcome, peakStage, stageTitle: titleOf(peakStage),
    total: bytesOf(data.ram_total_bytes), swapTotal: bytesOf(data.swap_total_bytes),
    assumed: data.ram_assumed === true || outcome === "assumed",
    swap, shortfall, explanation, remedies,
  };
}

/** One sentence for the RAM bar: "Workflow needs ≈ 67.65 GiB RAM at 'VAE decode' — 32.00 GiB installed: ..." */
function hostSentence(sum, liveTotal) {
  const where = sum.stageTitle ? ` at '${sum.stageTitle}'` : sum.peakStage === -1 ? " while the models load" : "";
  const needs = `Workflow needs ≈ ${gib(sum.peak)} RAM${where}`;
  const total = sum.total ?? bytesOf(liveTotal);
  const installed = total != null ? ` — ${gib(total)} installed${sum.swapTotal ? ` + ${gib(sum.swapTotal)} swap` : ""}` : "";
  if (sum.outcome === "oom") return `${needs}${installed}: out of system memory`;
  if (sum.outcome === "swapping") return `${needs}${installed}: swaps ${gib(sum.swap)}`;
  if (sum.outcome === "thrashing") return `${needs}${installed}: re-reads ${gib(sum.swap)} of weights from disk every step`;
  if (sum.assumed) return `${needs} (the estimate does not know this machine's RAM)`;
  return needs;
}

/** What the RAM bar shows of the open workflow, or null (no estimate, an older server). */
function ramPrediction(ram) {
  const sum = hostSummary();
  if (!sum) return null;
  const tone = sum.assumed ? "info" : HOST_TONE[sum.outcome] || "plain";
  return { peak: sum.peak, outcome: sum.outcome || "", tone, text: hostSentence(sum, ram?.total) };
}

/** The host outcome line and the first RAM remedies, for the Workflow budget section. */
function renderHostBudget(sum) {
  if (!sum) return [];
  const tone = sum.assumed ? "info" : HOST_TONE[sum.outcome] || "plain";
  const badgeTone = { plain: "ok", warn: "warn", bad: "bad", info: "info" }[tone];
  const label = HOST_LABEL[sum.outcome] || (sum.outcome ? String(sum.outcome) : "System RAM");
  const out = [h("div.vrb-host", { dataset: { hostOutcome: sum.outcome } },
    h("div.vrb-host-line",
      h("span.vrb-chip.vrb-chip-ram", "RAM"),
      // its own badge class: the section's one .vrb-badge stays the overall verdict
      h(`span.vrb-host-badge.vrb-host-badge-${badgeTone}`, label),
      h("span.vrb-host-peak", `${gib(sum.peak)} peak`),
      sum.total != null ? h("span.vrb-muted.vrb-small", `of ${gib(sum.total)}${sum.swapTotal ? ` + ${gib(sum.swapTotal)} swap` : ""}`) : null),
    HOST_BAD.has(sum.outcome) && sum.explanation ? h("div.vrb-muted.vrb-small.vrb-host-why", userWords(sum.explanation)) : null)];
  if (HOST_BAD.has(sum.outcome) && sum.remedies.length) {
    out.push(h("div.vrb-subtitle", "RAM remedies"),
      h("ol.vrb-remedies.vrb-ram-remedies", sum.remedies.slice(0, 3).map((r) =>
        h("li", r.title ? h("b", userWords(r.title)) : null, r.detail ? h("div.vrb-muted.vrb-small", userWords(r.detail)) : null))));
  }
  return out;
}

function modelRow(m, status) {
  const busyHere = state.pending.has(`unload:${m.id}`);
  const frees = m.unload_frees > 0 ? `frees ${gib(m.unload_frees)}` : "stays in RAM";
  // By file name (ComfyUI's record, or the loader of the run that loaded it); the class name after it.
  const fileTip = m.file_source === "workflow" ? "file named by the loader of the run that loaded it" : "file ComfyUI loaded it from";
  const title = m.file
    ? [h("span.vrb-model-name", { title: fileTip }, m.file), h("span.vrb-model-file", ` · ${m.name}`)]
    : h("span.vrb-model-name", m.name);
  const loadedText = m.fully_loaded ? "fully loaded" : `partly loaded: ${gib(m.loaded)} of ${gib(m.size)} on the device`;
  return h("div.vrb-model", { dataset: { modelId: m.id } },
    h("div.vrb-row",
      h("div.vrb-model-title", { title: m.file ? `${m.file} · ${m.name}` : m.name }, title),
      h("button.vrb-btn.vrb-btn-small", {
        type: "button",
        disabled: busyHere || status.busy,
        title: status.busy ? "busy, try after the run" : `Unload ${m.file || m.name}: ${frees}`,
        onclick: () => unloadOne(m),
      }, busyHere ? "…" : "Unload")),
    h("div.vrb-model-meta",
      h("span.vrb-tag", TYPE_LABEL[m.type] || m.type),
      h("span", m.device),
      h("span", gib(m.size)),
      h("span", loadedText),
      m.currently_used ? h("span.vrb-tag.vrb-tag-live", "in use") : null,
      m.dynamic ? h("span.vrb-tag", "dynamic") : null),
    m.device_type !== "cpu" ? h("div.vrb-minibar", h("div", { style: { width: `${pct(m.loaded, m.size)}%` } })) : null);
}

function renderModels(status) {
  const models = status.models || [];
  const head = h("div.vrb-section-title", `Loaded models`, h("span.vrb-count", String(models.length)));
  if (!models.length) return [head, h("div.vrb-empty", "No models loaded.")];
  return [head, h("div.vrb-models", models.map((m) => modelRow(m, status)))];
}

function renderActions(status) {
  const wf = status.would_free || {};
  const onCpu = !status.cuda;
  const n = (wf.unload_all?.models ?? 0);
  const unloadSub = onCpu
    ? `${n} model${n === 1 ? "" : "s"} · weights stay in RAM on the CPU`
    : `frees ${gib(wf.unload_all?.vram ?? 0)} of VRAM`;
  const freeSub = onCpu
    ? `frees up to ${gib(wf.free_cache?.ram_up_to ?? 0)} of RAM`
    : `frees ${gib(wf.free_cache?.vram ?? 0)} of VRAM + up to ${gib(wf.free_cache?.ram_up_to ?? 0)} of RAM`;
  const busyNote = status.busy ? h("div.vrb-muted.vrb-small", `A run is in progress (${status.queue_remaining} running or waiting): buttons act after it.`) : null;
  const result = state.action
    ? h(`div.vrb-result.vrb-result-${state.action.tone}`, h("span", state.action.text),
      h("button.vrb-icon-btn.vrb-dismiss", { type: "button", title: "Dismiss", onclick: () => { setAction(null); renderAll(); } }, h("i.pi.pi-times")))
    : null;
  return [
    h("div.vrb-actions",
      h("button.vrb-btn.vrb-btn-primary", {
        type: "button", "data-action": "unload_all", disabled: state.pending.has("unload_all") || n === 0,
        title: "ComfyUI's own unload (the same as its \"Unload models\" command)",
        onclick: () => flagAction("unload_all"),
      }, h("span.vrb-btn-label", state.pending.has("unload_all") ? "Unloading…" : "Unload all models"), h("span.vrb-btn-sub", unloadSub)),
      h("button.vrb-btn", {
        type: "button", "data-action": "free_cache", disabled: state.pending.has("free_cache"),
        title: "Unload all models and drop ComfyUI's cached node outputs (the next run reloads from disk)",
        onclick: () => flagAction("free_cache"),
      }, h("span.vrb-btn-label", state.pending.has("free_cache") ? "Freeing…" : "Free cache"), h("span.vrb-btn-sub", freeSub))),
    busyNote,
    result,
  ];
}

function verdictClass(verdict) {
  if (verdict === "fits") return "ok";
  if (verdict === "tight" || verdict === "runs_slower") return "warn";
  if (verdict === "unknown") return "info";
  return "bad";
}

/** The card choice, grouped as the catalogue groups it (GeForce RTX 40, Laptop GPUs, Data center, ...). */
function cardSelect() {
  const groups = new Map();
  for (const c of state.cards || []) {
    const g = c.group || "Cards";
    if (!groups.has(g)) groups.set(g, []);
    groups.get(g).push(c);
  }
  const chosen = estimate.card();
  return h("select.vrb-select.vrb-select-card", {
    title: "Estimate for this machine's GPU or a card you might buy or rent",
    "aria-label": "Estimate for",
    onchange: (e) => estimate.setCard(e.target.value),
  }, h("option", { value: "" }, state.status?.cuda ? "This GPU" : "This machine"),
  [...groups.entries()].map(([g, cards]) => h("optgroup", { label: g },
    cards.map((c) => h("option", { value: c.name, selected: chosen === c.name }, `${c.name} (${c.nominal_gb} GB)`)))));
}

function secondSelect() {
  const second = estimate.gpus()[0] || "";
  return h("select.vrb-select.vrb-select-second", {
    title: "A second card (cuda:1): plan where each model runs on both",
    "aria-label": "Second card",
    onchange: (e) => estimate.setGpus(e.target.value ? [e.target.value] : []),
  }, h("option", { value: "" }, "one card"),
  (state.cards || []).map((c) => h("option", { value: c.name, selected: second === c.name }, `+ ${c.name}`)));
}

/** The verdict at a glance: the card's badge and peak, what it means, the OOM risk, system RAM on its own line,
 *  which of the two stops the run, the first fix, and what the answer assumes (vram_summary.js words it). */
function renderVerdictCard(data) {
  const s = summarize(data);
  if (!s) return null;
  const risk = s.risk && s.risk.level !== "unknown"
    ? h(`div.vrb-risk.vrb-risk-${s.risk.level}`, { dataset: { risk: s.risk.level } },
      h("span.vrb-risk-label", `Risk of running out of memory: ${s.risk.word}`),
      s.risk.basis[0] ? h("span.vrb-muted.vrb-small", ` · ${s.risk.basis[0]}`) : null)
    : null;
  return h("div.vrb-glance", { "data-testid": "vram-verdict", dataset: { verdict: s.card, overall: s.verdict } },
    h("div.vrb-verdict",
      h(`span.vrb-badge.vrb-badge-${verdictClass(s.card)}`, { title: "the card's verdict" }, s.label),
      h("span.vrb-peak", s.peakText === NOTHING_PRICED ? s.peakText : `${s.peakText} peak`)),
    s.time ? h("div.vrb-glance-time", { "data-testid": "vram-time", title: "predicted time of one run, from the card's speed; range from published runs" }, s.time) : null,
    s.detail ? h("div.vrb-glance-detail.vrb-small", s.detail) : null,
    risk,
    s.ramLine ? h(`div.vrb-small.vrb-ram-line.vrb-ram-${s.host || "none"}`, h("span.vrb-chip.vrb-chip-ram", "RAM"), " ", s.ramLine) : null,
    s.stopper ? h("div.vrb-stopper", s.stopper) : null,
    s.firstFix ? h("div.vrb-first-fix.vrb-small", h("b", `First fix (${s.firstFix.what}): `), s.firstFix.title) : null,
    s.assumptions ? h("div.vrb-assumes.vrb-muted.vrb-small", { title: "what this answer assumes" }, s.assumptions) : null);
}

function renderStop() {
  const st = state.lastStop;
  if (!st) return null;
  return h("div.vrb-note.vrb-note-warn.vrb-stopped", { "data-testid": "vram-stopped" },
    h("i.pi.pi-stop-circle"),
    h("div", h("b", st.headline || "Stopped before any model loaded"),
      st.reason ? h("div.vrb-small", `${st.reason}.`) : null,
      st.first_fix ? h("div.vrb-small", h("b", "First fix: "), st.first_fix) : null),
    h("button.vrb-icon-btn.vrb-dismiss", { type: "button", title: "Dismiss", onclick: () => { state.lastStop = null; renderAll(); } }, h("i.pi.pi-times")));
}

function renderBudget() {
  const b = state.budget || { state: "idle" };
  const head = [
    h("div.vrb-section-title", "This workflow",
      h("button.vrb-icon-btn", { type: "button", title: "Estimate again", onclick: () => estimate.schedule(0) }, h("i.pi.pi-refresh"))),
    state.cards?.length ? h("div.vrb-toolbar", h("span.vrb-muted.vrb-small", "for"), cardSelect(), secondSelect()) : null,
    renderStop(),
  ];
  if (b.state === "idle" || (b.state === "loading" && !b.data)) return [head, h("div.vrb-empty", "Estimating the current workflow…")];
  if (b.state === "unavailable") {
    return [head, h("div.vrb-note.vrb-note-info", h("i.pi.pi-clock"),
      h("div", h("b", "Estimator not available yet. "), "The workflow budget appears here once the estimator is installed; memory, models and the OOM diagnosis work already."))];
  }
  if (b.state === "error") return [head, h("div.vrb-note.vrb-note-warn", h("i.pi.pi-exclamation-triangle"), h("span", b.error || "Could not estimate this workflow."))];
  const data = b.data?.budget || {};
  const stages = (Array.isArray(data.stages) ? data.stages : []).filter((s) => s && typeof s === "object");
  if (!stages.length) return [head, h("div.vrb-empty", "Nothing to estimate: the workflow has no model stages.")];
  const capacity = data.device?.capacity_bytes || data.device?.total_bytes || 0;
  const maxStage = Math.max(capacity, ...stages.map((s) => s.peak_bytes || 0));
  const out = [head, renderVerdictCard(data)];
  if (b.data?.device_note && !state.cards?.length) out.push(h("div.vrb-muted.vrb-small", b.data.device_note));
  if (b.data?.source_note) out.push(h("div.vrb-muted.vrb-small.vrb-source-note", b.data.source_note));
  const details = [];
  details.push(h("div.vrb-legend.vrb-stage-legend",
    h("div.vrb-legend-item", h("span.vrb-dot.vrb-alloc"), h("span.vrb-legend-label", "weights")),
    h("div.vrb-legend-item", h("span.vrb-dot.vrb-cache"), h("span.vrb-legend-label", "working memory")),
    h("div.vrb-legend-item", h("span.vrb-dot.vrb-other"), h("span.vrb-legend-label", "CUDA and other")),
    h("div.vrb-legend-item", h("span.vrb-capline-key"), h("span.vrb-legend-label", "the card"))));
  details.push(h("div.vrb-stages", stages.map((s, i) => h("div.vrb-stage",
    h("div.vrb-row.vrb-small", h("span", { title: s.node_type || "" }, `${s.title || s.kind}${i === data.peak_stage ? " · peak" : ""}`), h("span", gib(s.peak_bytes))),
    h("div.vrb-stagebar", { title: `weights ${gib(s.weights_bytes)} · working ${gib(s.working_bytes)} · overhead ${gib(s.overhead_bytes)}${bytesOf(s.ram_peak_bytes) != null ? ` · system RAM ${gib(s.ram_peak_bytes)}` : ""}` },
      h("div.vrb-seg.vrb-alloc", { style: { width: `${pct(s.weights_bytes || 0, maxStage)}%` } }),
      h("div.vrb-seg.vrb-cache", { style: { width: `${pct(s.working_bytes || 0, maxStage)}%` } }),
      h("div.vrb-seg.vrb-other", { style: { width: `${pct(s.overhead_bytes || 0, maxStage)}%` } }),
      capacity ? h(`div.vrb-capline${s.peak_bytes > capacity ? ".vrb-over" : ""}`, { style: { left: `${pct(capacity, maxStage)}%` }, title: `capacity ${gib(capacity)}` }) : null)))));
  details.push(renderHostBudget(hostSummary()));
  // the card's fixes for the card's verdict (never bigger-card advice where the card is not the problem)
  const cardVerdict = typeof data.vram_verdict === "string" && data.vram_verdict ? data.vram_verdict : data.verdict;
  const remedies = cardVerdict === "fits" || cardVerdict === "unknown" ? []
    : (data.remedies || []).filter((r) => r && r.kind !== "card").slice(0, 3);
  if (remedies.length) {
    details.push(h("div.vrb-subtitle", cardVerdict === "runs_slower" ? "To keep every weight on the card" : "VRAM fixes, cheapest first"),
      h("ol.vrb-remedies", remedies.map((r) => h("li", h("b", userWords(r.title)), r.detail ? h("div.vrb-muted.vrb-small", userWords(r.detail)) : null))));
  }
  if (data.placement_plan && typeof data.placement_plan === "object") details.push(renderPlan(data.placement_plan));
  const caps = data.capacity || [];
  if (caps.length) {
    details.push(h("div.vrb-subtitle", "Largest on this card"),
      h("div.vrb-capacity", caps.map((c) => h("div.vrb-row.vrb-small", { "data-capacity": c.what },
        h("span", `${c.what} (now ${c.current})`),
        h("span", { title: "stays resident · runs at all (streaming weights)" },
          `${c.resident || "–"} · ${c.runs || "–"}`)))));
  }
  const cheapest = data.verdict === "unknown" || cardVerdict === "fits" ? null : data.cheapest_card;  // no card advice on a lower bound
  if (cheapest) {
    const price = cheapest.price_eur_h != null ? ` · €${Number(cheapest.price_eur_h).toFixed(2)}/h` : "";
    details.push(h("div.vrb-small.vrb-cheapest", h("i.pi.pi-shopping-cart.vrb-inline-icon"), "Cheapest card that fits: ", h("b", `${cheapest.name} (${cheapest.nominal_gb} GB)`), price));
  }
  const near = (Array.isArray(data.evidence) ? data.evidence : []).filter((e) => e && typeof e.summary === "string").slice(0, 3);
  if (near.length) {
    details.push(h("div.vrb-subtitle", "Published runs like this one"),
      h("ul.vrb-evidence", near.map((e) => h("li.vrb-small", { dataset: { outcome: String(e.outcome || "") } },
        h(`span.vrb-ev-dot.vrb-ev-${e.outcome === "oom" ? "bad" : "ok"}`), " ", String(e.summary).replace(/\s*\([^()]*#\d+\)$/, ""), " ",
        /^https?:\/\//.test(String(e.source || "")) ? h("a", { href: e.source, target: "_blank", rel: "noopener noreferrer" }, "source") : null))));
  }
  out.push(h("details.vrb-details", {
    open: state.detailsOpen,
    ontoggle: (e) => { state.detailsOpen = e.target.open; },
  }, h("summary", "Details: stages, fixes, largest sizes"), details));
  return out;
}

// ---------------------------------------------------------------------------------------------
// the placement plan for several cards (placement_plan.py), and applying it to the open workflow
function widgetText(widgets) {
  return Object.entries(widgets || {}).map(([k, v]) => `${k} ${typeof v === "number" ? v : `"${v}"`}`).join(" · ");
}

function graphNode(id) {
  const graph = app.graph;
  if (!graph || id == null) return null;
  return graph.getNodeById(Number(id)) ?? graph.getNodeById(String(id)) ?? null;
}

function registered(type) {
  return Boolean(window.LiteGraph?.registered_node_types?.[type]);
}

// loaders of the plan whose node in the open workflow is already the type to use, with its widgets (a node whose
// pack did not load stays in the graph as a placeholder of that type, without widgets), or whose output takes one
// of ComfyUI's own placement nodes (SelectModelDevice ...) this ComfyUI registers
function applicable(plan) {
  return (plan.loaders || []).filter((s) => s && s.changed && registered(s.use_type)
    && graphNode(s.node)?.type === s.use_type && graphNode(s.node)?.widgets?.length
    && (!s.insert || (registered(s.insert) && outputSlot(graphNode(s.node), s.insert_socket) >= 0)));
}

function outputSlot(node, socket) {
  return (node?.outputs || []).findIndex((o) => o?.type === socket);
}

function linkOf(id) {
  const links = app.graph?.links;
  return links?.get ? links.get(id) : links?.[id];
}

// ComfyUI's own placement: a Select*Device node on the loader's output, its consumers moved onto it; a node of that
// type already on the output is reused. Returns the widget values set.
function insertPlacementNode(s) {
  const loader = graphNode(s.node);
  const slot = outputSlot(loader, s.insert_socket);
  if (slot < 0 || !window.LiteGraph?.createNode) return 0;
  const targets = (loader.outputs[slot].links || []).map(linkOf).filter(Boolean)
    .map((l) => ({ node: app.graph.getNodeById(l.target_id), slot: l.target_slot })).filter((t) => t.node);
  let node = targets.find((t) => t.node.type === s.insert)?.node;
  if (!node) {
    node = window.LiteGraph.createNode(s.insert);
    if (!node) return 0;
    app.graph.add(node);
    node.pos = [loader.pos[0] + (loader.size?.[0] || 220) + 40, loader.pos[1]];
    for (const t of targets) node.connect(0, t.node, t.slot);
    loader.connect(slot, node, 0);
  }
  let set = 0;
  for (const [name, value] of Object.entries(s.insert_widgets || {})) {
    const widget = node.widgets?.find((w) => w.name === name);
    if (!widget) continue;
    widget.value = value;
    widget.callback?.(value, app.canvas, node);
    set += 1;
  }
  return set;
}

function changeTracker() {
  return app.extensionManager?.workflow?.activeWorkflow?.changeTracker ?? app.workflowManager?.activeWorkflow?.changeTracker ?? null;
}

function applyPlan(plan) {
  const targets = applicable(plan);
  if (!targets.length) return 0;
  const tracker = changeTracker();
  tracker?.beforeChange?.(); // one undo step for the whole plan (Ctrl+Z)
  let set = 0;
  try {
    for (const s of targets) {
      const node = graphNode(s.node);
      if (s.insert) {
        set += insertPlacementNode(s);
        continue;
      }
      for (const [name, value] of Object.entries(s.widgets || {})) {
        const widget = node?.widgets?.find((w) => w.name === name);
        if (!widget) continue;
        widget.value = value;
        widget.callback?.(value, app.canvas, node);
        set += 1;
      }
    }
  } finally {
    tracker?.afterChange?.();
  }
  app.graph.setDirtyCanvas?.(true, true);
  toast("success", "Placement applied", `${set} device setting(s) for ${targets.length} loader(s); Ctrl+Z undoes it`, 5000);
  estimate.schedule(0);
  return set;
}

function renderPlan(plan) {
  const devices = (plan.devices || []).filter((d) => d && d.device !== "cpu");
  const loaders = (plan.loaders || []).filter((s) => s && typeof s === "object");
  const ready = applicable(plan);
  const missing = [...new Set(loaders.filter((s) => s.changed && !registered(s.use_type)).map((s) => s.use_type)
    .concat(loaders.filter((s) => s.changed && s.insert && !registered(s.insert)).map((s) => s.insert)))];
  const replace = loaders.filter((s) => s.changed && registered(s.use_type) && s.use_type !== s.node_type
    && graphNode(s.node)?.type !== s.use_type);
  return h("div.vrb-plan", { "data-section": "placement" },
    h("div.vrb-subtitle", `Placement on ${devices.length} cards `,
      h(`span.vrb-badge.vrb-badge-${verdictClass(plan.verdict)}`, VERDICT_LABEL[plan.verdict] || plan.verdict || "")),
    h("div.vrb-plan-devices", devices.map((d) => h("div.vrb-row.vrb-small", { "data-device": d.device },
      h("span", `${d.device} ${d.card?.name || ""}`),
      h("span", { title: (d.models || []).join("\n") },
        `${gib(d.predicted_peak_bytes)} / ${gib(d.card?.capacity_bytes || 0)} · ${VERDICT_LABEL[d.outcome] || d.outcome}`)))),
    h("ul.vrb-plan-loaders", loaders.map((s) => h("li.vrb-small", { "data-node": s.node, "data-changed": String(Boolean(s.changed)) },
      h("b", `#${s.node} `), s.changed ? (s.insert ? `${s.node_type} → add ${s.insert}` : s.use_type !== s.node_type ? `${s.node_type} → ${s.use_type}` : s.node_type) : `${s.node_type}: as it is (${s.device})`,
      s.changed ? h("div.vrb-muted", widgetText(s.insert ? s.insert_widgets : s.widgets)) : null))),
    (plan.notes || []).length ? h("div.vrb-muted.vrb-small.vrb-plan-notes", plan.notes.map((n) => h("div", userWords(n)))) : null,
    missing.length ? h("div.vrb-note.vrb-note-warn.vrb-small.vrb-plan-missing", h("i.pi.pi-exclamation-triangle"),
      h("span", plan.engine === "ComfyUI" ? `This ComfyUI has no ${missing.join(", ")}.`
        : `This ComfyUI has no ${missing.join(", ")}: install ComfyUI-MultiGPU (archived, or see why it did not load in the ComfyUI log) to apply the plan.`)) : null,
    replace.length ? h("div.vrb-note.vrb-note-info.vrb-small", h("i.pi.pi-info-circle"),
      h("span", `Replace ${replace.map((s) => `#${s.node} ${s.node_type} with ${s.use_type}`).join(", ")} (ComfyUI-MultiGPU), then apply.`)) : null,
    h("button.vrb-btn.vrb-apply-plan", {
      type: "button", disabled: !ready.length,
      title: plan.engine === "ComfyUI"
        ? (ready.length ? "Add ComfyUI's device nodes and set the loaders' device (undo with Ctrl+Z)" : "Nothing of the plan can be applied in this workflow")
        : ready.length ? "Set these values on the workflow's ComfyUI-MultiGPU loaders (undo with Ctrl+Z)"
        : missing.length ? "ComfyUI-MultiGPU's loaders are not available in this ComfyUI" : "No ComfyUI-MultiGPU loader of the plan is in the workflow yet",
      onclick: () => applyPlan(plan),
    }, h("i.pi.pi-check"), plan.engine === "ComfyUI" ? ` Apply to ${ready.length} loader${ready.length === 1 ? "" : "s"}`
      : ` Apply to ${ready.length} MultiGPU loader${ready.length === 1 ? "" : "s"}`),
    h("details.vrb-small.vrb-plan-engines", h("summary", "Other engines"),
      (plan.other_engines || []).map((e) => h("div", h("b", `${e.engine}: `), e.why))));
}

// ---------------------------------------------------------------------------------------------
// measured against predicted
const STATUS_LABEL = { success: "done", error: "failed", interrupted: "stopped", unknown: "ended" };
const RUNS_SHOWN = 5;

function runBars(run) {
  const predicted = run.predicted?.peak_bytes;
  const measured = run.measured?.reserved_peak_bytes;
  if (predicted == null || measured == null) return null;
  const top = Math.max(predicted, measured, run.predicted?.high_bytes || 0) || 1;
  const bar = (cls, bytes, label) => h("div.vrb-run-bar",
    h("span.vrb-run-bar-label", label),
    h("div.vrb-run-track", h(`div.vrb-run-fill.${cls}`, { style: { width: `${pct(bytes, top)}%` } })),
    h("span.vrb-run-bar-value", gib(bytes)));
  return h("div.vrb-run-bars", bar("vrb-run-predicted", predicted, "predicted"), bar("vrb-run-measured", measured, "measured"));
}

function runRow(run) {
  const when = run.ended ? new Date(run.ended * 1000).toLocaleTimeString() : "";
  const verdict = run.predicted?.verdict;
  return h("div.vrb-run", { dataset: { promptId: run.prompt_id } },
    h("div.vrb-row.vrb-small",
      h("span.vrb-muted", [when, STATUS_LABEL[run.status] || run.status, run.seconds != null ? `${run.seconds.toFixed(1)} s` : null].filter(Boolean).join(" · ")),
      verdict ? h(`span.vrb-badge.vrb-badge-${verdictClass(verdict)}`, VERDICT_LABEL[verdict] || verdict) : null),
    h(`div.vrb-run-summary${run.predicted ? "" : ".vrb-muted.vrb-run-unpredicted"}`, run.summary),
    runBars(run),
    (run.notes || []).map((n) => h("div.vrb-muted.vrb-small", n)));
}

async function exportRuns() {
  try {
    const response = await api.fetchApi("/vram_budget/runs/export", { cache: "no-store" });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const url = URL.createObjectURL(await response.blob());
    const a = h("a", { href: url, download: "vram_budget_runs.jsonl" });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (err) {
    toast("error", "VRAM Budget", `Could not export the run log: ${err?.message || err}`);
  }
}

/** One plain sentence per regression the run log's version guard found (run_log.find_regressions). */
function renderRegressions() {
  const regressions = (Array.isArray(state.regressions) ? state.regressions : []).filter((r) => r && typeof r.sentence === "string");
  if (!regressions.length) return null;
  return h("div.vrb-regressions",
    regressions.map((r) => h("div.vrb-note.vrb-note-warn.vrb-regression", { dataset: { workflowKey: r.workflow_key || "" } },
      h("i.pi.pi-exclamation-triangle"),
      // the sentence as the route wrote it; ComfyUI flags in it kept on one line
      h("span", r.sentence.split(/(--[a-z][a-z-]*[a-z])/).map((part, i) => (i % 2 ? h("code.vrb-flag", part) : part))))));
}

function renderRuns() {
  const runs = state.runs || [];
  const head = h("div.vrb-section-title", "Measured against predicted",
    h("button.vrb-btn.vrb-btn-small.vrb-btn-inline", { type: "button", "data-action": "export_runs", title: "Download the run log (JSON lines, newest last)", onclick: exportRuns },
      h("i.pi.pi-download.vrb-inline-icon"), "Export log"));
  const how = state.runsMeasuring === "cpu"
    ? "ComfyUI runs on the CPU here: runs are logged with their prediction, but there is no GPU peak to measure."
    : "After every run: PyTorch's real peak (max_memory_reserved) next to the VRAM Budget node's prediction, both without the CUDA context.";
  if (state.runs == null) return [head, h("div.vrb-empty", "Reading the run log…")];
  if (!runs.length) return [head, renderRegressions(), h("div.vrb-empty", "No run yet. Add the VRAM Budget node to a workflow and run it."), h("div.vrb-muted.vrb-small", how)];
  return [head, renderRegressions(), h("div.vrb-runs", runs.slice(0, RUNS_SHOWN).map(runRow)), h("div.vrb-muted.vrb-small", how)];
}

async function loadRuns() {
  try {
    const { ok, data } = await call("runs?limit=20");
    if (ok) {
      state.runs = data.runs || [];
      state.runsMeasuring = data.measuring || null;
      state.regressions = Array.isArray(data.regressions) ? data.regressions : [];
    }
  } catch {
    /* the next run event fills it */
  }
}

function onRunRecorded(event) {
  const run = event?.detail;
  if (!run?.prompt_id) return;
  state.runs = [run, ...(state.runs || []).filter((r) => r.prompt_id !== run.prompt_id)].slice(0, 50);
  renderAll();
  // a measured run can start (or end) a version regression: ask the guard again (only the
  // regressions: the runs shown stay the ones the events brought)
  if (run.measured && panel) loadRegressions().then(() => renderAll());
}

async function loadRegressions() {
  try {
    const { ok, data } = await call("runs?limit=1");
    if (ok && Array.isArray(data.regressions)) state.regressions = data.regressions;
  } catch {
    /* the next load fills it */
  }
}

function renderOom() {
  const head = h("div.vrb-section-title", "Last out-of-memory error");
  const rec = state.lastOom;
  if (!rec) return [head, h("div.vrb-empty", "None since ComfyUI started.")];
  const d = rec.diagnosis || {};
  const when = rec.timestamp ? new Date(rec.timestamp).toLocaleTimeString() : "";
  const numbers = [
    ["Failed request", d.requested_bytes],
    ["Total", d.total_bytes],
    ["Free", d.free_bytes],
    ["PyTorch allocated", d.allocated_bytes],
    ["Reserved, unused", d.reserved_unallocated_bytes],
    ["Other processes", d.other_processes_bytes],
  ].filter(([, v]) => v != null);
  const causeLabel = { fragmentation: "Fragmentation", other_process: "Other process", shortage: "Not enough memory", unknown_detail: "No detail", host_ram: "System RAM, not GPU", pinned: "Pinned RAM, not GPU" }[d.cause] || d.cause;
  const remedies = d.remedies || [];
  const top = remedies.slice(0, 3);
  const rest = remedies.slice(3);
  return [head, h(`div.vrb-oom${state.oomFresh ? ".vrb-flash" : ""}`,
    h("div.vrb-oom-head", h("i.pi.pi-exclamation-circle"), h("b", d.headline || "Out of memory")),
    h("div.vrb-oom-meta",
      h(`span.vrb-badge.vrb-badge-${d.cause === "shortage" || d.cause === "unknown_detail" ? "bad" : "warn"}`, causeLabel),
      h("span.vrb-muted.vrb-small", [rec.node_type ? `node ${rec.node_id} (${rec.node_type})` : null, when].filter(Boolean).join(" · "))),
    d.summary_facts || d.summary_cause
      ? h("div.vrb-oom-summary",
        d.summary_facts ? h("p", userWords(d.summary_facts)) : null,
        d.summary_cause ? h("p.vrb-oom-cause", userWords(d.summary_cause)) : null,
        d.summary_caveat ? h("p.vrb-muted.vrb-small", userWords(d.summary_caveat)) : null)
      : h("p.vrb-oom-summary", userWords(d.summary || "")),
    numbers.length ? h("div.vrb-grid", numbers.map(([k, v]) => [h("span.vrb-muted", k), h("span", gib(v))])) : null,
    top.length ? h("ol.vrb-remedies", top.map((r) => h("li", h("b", userWords(r.title)), h("div.vrb-muted.vrb-small", userWords(r.detail))))) : null,
    rest.length ? h("details.vrb-more", h("summary", `${rest.length} more`),
      h("ol.vrb-remedies", { start: top.length + 1 }, rest.map((r) => h("li", h("b", userWords(r.title)), h("div.vrb-muted.vrb-small", userWords(r.detail)))))) : null,
    (d.notes || []).length ? h("details.vrb-more", h("summary", "Notes"), h("ul.vrb-notes", d.notes.map((n) => h("li.vrb-small", userWords(n))))) : null)];
}

// ---------------------------------------------------------------------------------------------
// rendering: each section is rebuilt only when its data changed (buttons keep focus/hover)
function fill(key, nodes) {
  if (!panel) return;
  const el = panel.sections[key];
  el.replaceChildren(...[nodes].flat(Infinity).filter(Boolean));
}

function renderAll(force = false) {
  if (!panel) return;
  const s = state.status;
  const header = panel.sections.header;
  const modeText = !s ? "…" : s.memory_mode === "dynamic" ? "Dynamic VRAM" : s.memory_mode === "cpu" ? "CPU" : "Classic";
  header.replaceChildren(
    h("div.vrb-header-title", "VRAM"),
    h("div.vrb-header-tools",
      s ? h("span.vrb-chip", { title: `ComfyUI memory management: ${modeText}; VRAM state ${s.vram_state}` }, modeText) : null,
      h(`span.vrb-live${state.statusError ? ".vrb-live-off" : ""}`, { title: state.statusError || `live, every ${(refreshMs() / 1000).toFixed(1)} s` })));
  if (state.statusError && !s) {
    fill("devices", h("div.vrb-note.vrb-note-warn", h("i.pi.pi-exclamation-triangle"), h("span", `Cannot read the status: ${state.statusError}`)));
    return;
  }
  if (!s) {
    fill("devices", h("div.vrb-empty", "Reading memory…"));
    return;
  }
  const keys = {
    devices: JSON.stringify([s.devices, s.ram, s.cuda, s.dynamic_vram, ramPrediction(s.ram)]),
    watch: JSON.stringify([s.cotenants, s.admission?.enabled, s.admission?.fixes, s.admission?.held?.prompt_id, s.admission?.held?.message, s.leaks?.flag, [...state.pending]]),
    models: JSON.stringify([s.models, s.busy, [...state.pending]]),
    actions: JSON.stringify([s.would_free, s.busy, s.queue_remaining, s.cuda, state.action, [...state.pending]]),
    budget: JSON.stringify([state.budget, estimate.card(), estimate.gpus(), state.cards?.length, s.cuda, state.lastStop]),
    oom: JSON.stringify([state.lastOom?.timestamp, state.lastOom?.diagnosis?.headline, state.oomFresh]),
    runs: JSON.stringify([state.runs?.map((r) => r.prompt_id), state.runsMeasuring, (state.regressions || []).map((r) => r?.sentence)]),
  };
  const builders = { devices: () => renderDevices(s), watch: () => renderWatch(s), models: () => renderModels(s), actions: () => renderActions(s), budget: renderBudget, runs: renderRuns, oom: renderOom };
  for (const [key, build] of Object.entries(builders)) {
    if (force || panel.lastKeys[key] !== keys[key]) {
      fill(key, build());
      panel.lastKeys[key] = keys[key];
    }
  }
}

// ---------------------------------------------------------------------------------------------
// polling (only while the tab is mounted)
async function poll(generation) {
  // One polling chain per mount: a chain from an earlier mount ends here.
  if (!panel?.mounted || generation !== panel.generation) return;
  try {
    if (!document.hidden) {
      const { ok, data, status } = await call("status");
      if (state.frozen) {
        /* showing a status document given to preview() */
      } else if (ok) {
        state.status = data;
        state.statusError = null;
      } else {
        state.statusError = data.error || `HTTP ${status}`;
      }
      renderAll();
    }
  } catch (err) {
    state.statusError = "ComfyUI is not reachable";
    renderAll();
  }
  if (panel?.mounted && generation === panel.generation) panel.timer = setTimeout(() => poll(generation), refreshMs());
}

// ---------------------------------------------------------------------------------------------
// actions
let actionTimer = null;

/** Show a result line under the buttons; it goes away after 30 s (it describes a moment). */
function setAction(action) {
  state.action = action;
  clearTimeout(actionTimer);
  if (action) actionTimer = setTimeout(() => { state.action = null; renderAll(); }, 30000);
}

function describeFreed(kind, data) {
  if (data.scheduled) {
    const vram = data.would_free?.vram;
    return { tone: "info", text: `${data.message || "Scheduled."}${vram ? ` It will free about ${gib(vram)} of VRAM.` : ""}` };
  }
  const freed = data.freed || {};
  const unloaded = Math.max(0, (freed.models_before ?? 0) - (freed.models_after ?? 0));
  const parts = [];
  if (freed.vram != null) parts.push(`${gib(freed.vram)} of VRAM`);
  if (kind === "free_cache" && freed.ram != null) parts.push(`${gib(freed.ram)} of RAM`);
  const models = `${unloaded} model${unloaded === 1 ? "" : "s"} unloaded`;
  const cpu = state.status && !state.status.cuda && kind === "unload_all" ? " (on the CPU the weights stay in RAM)" : "";
  const text = parts.length ? `Freed ${parts.join(" and ")} · ${models}${cpu}.` : `${models[0].toUpperCase()}${models.slice(1)}${cpu}.`;
  return { tone: "ok", text };
}

async function flagAction(kind) {
  if (state.pending.has(kind)) return;
  state.pending.add(kind);
  setAction(null);
  renderAll();
  try {
    const { ok, data } = await call(kind, {});
    setAction(ok ? describeFreed(kind, data) : { tone: "bad", text: data.error || "Failed." });
  } catch (err) {
    setAction({ tone: "bad", text: `Failed: ${err}` });
  } finally {
    state.pending.delete(kind);
  }
  await refreshNow();
}

async function unloadOne(model) {
  const key = `unload:${model.id}`;
  if (state.pending.has(key)) return;
  state.pending.add(key);
  renderAll();
  try {
    const { status, data } = await call("unload", { model: model.id });
    if (status === 200) {
      const vram = data.freed?.vram;
      setAction({ tone: "ok", text: `Unloaded ${model.name}${vram != null ? `: freed ${gib(vram)} of VRAM` : " (on the CPU the weights stay in RAM)"}.` });
    } else if (status === 409) {
      setAction({ tone: "info", text: "ComfyUI is busy: try after the prompt." });
    } else {
      setAction({ tone: "bad", text: data.error || `HTTP ${status}` });
    }
  } catch (err) {
    setAction({ tone: "bad", text: `Failed: ${err}` });
  } finally {
    state.pending.delete(key);
  }
  await refreshNow();
}

async function refreshNow() {
  try {
    const { ok, data } = await call("status");
    if (ok && !state.frozen) state.status = data;
  } catch {
    /* the next poll reports it */
  }
  renderAll();
}

// ---------------------------------------------------------------------------------------------
// workflow budget: the shared estimate (vram_estimate.js), the same one the top-bar readout shows
function onEstimate(result) {
  state.budget = result;
  renderAll();
}

async function loadCards() {
  if (state.cards) return;
  try {
    const { ok, data } = await call("cards");
    if (ok) {
      state.cards = data.cards || [];
      state.cardsDefault = data.default || null;
    }
  } catch {
    state.cards = [];
  }
}

// ---------------------------------------------------------------------------------------------
// last OOM
async function loadLastOom() {
  try {
    const { ok, data } = await call("last_oom");
    if (ok && data.last_oom && (!state.lastOom || (data.last_oom.timestamp || 0) > (state.lastOom.timestamp || 0))) {
      state.lastOom = data.last_oom;
    }
  } catch {
    /* optional */
  }
}

async function onExecutionError(event) {
  const detail = event?.detail || {};
  if (!isOom(detail)) return;
  let diagnosis = null;
  try {
    const { ok, data } = await call("parse_oom", {
      message: String(detail.exception_message || ""),
      exception_type: detail.exception_type ? String(detail.exception_type) : null,
      node_type: detail.node_type ? String(detail.node_type) : null,
    });
    if (ok) diagnosis = data;
  } catch {
    /* fall back to the raw message below */
  }
  if (!diagnosis) diagnosis = { headline: "Out of GPU memory", summary: String(detail.exception_message || ""), remedies: [], cause: "unknown_detail" };
  state.lastOom = {
    prompt_id: detail.prompt_id, node_id: detail.node_id, node_type: detail.node_type,
    timestamp: detail.timestamp || Date.now(), exception_type: detail.exception_type, diagnosis,
  };
  state.oomFresh = true;
  const first = (diagnosis.remedies || [])[0];
  toast("error", diagnosis.headline || "Out of GPU memory",
    `${(diagnosis.summary || "").split(". ")[0]}.${first ? ` Try first: ${first.title}.` : ""} Details in the VRAM panel.`, 15000);
  renderAll();
  setTimeout(() => { state.oomFresh = false; renderAll(); }, 4000);
}

// ---------------------------------------------------------------------------------------------
// the sidebar tab
function buildRoot() {
  const sections = {};
  const section = (key, cls = "") => (sections[key] = h(`section.vrb-section${cls}`, { dataset: { section: key } }));
  const root = h("div.vrb-panel", { "data-testid": "vram-budget-panel" },
    (sections.header = h("header.vrb-header")),
    h("div.vrb-scroll",
      section("budget"),
      section("devices"),
      section("watch"),
      section("models"),
      section("actions"),
      section("runs"),
      section("oom")));
  return { root, sections };
}

function onStopped(event) {
  const detail = event?.detail || {};
  state.lastStop = {
    headline: String(detail.headline || "Stopped before any model loaded"), reason: String(detail.reason || ""),
    first_fix: String(detail.first_fix || ""), node_id: detail.node_id ?? null, prompt_id: detail.prompt_id ?? null,
  };
  toast("warn", state.lastStop.headline,
    `${state.lastStop.reason ? `${state.lastStop.reason}. ` : ""}${state.lastStop.first_fix ? `First fix: ${state.lastStop.first_fix}.` : ""}`, 12000);
  renderAll();
}

function render(el) {
  ensureStylesheet("vrb-styles", "vram_panel.css");
  if (!panel) panel = { ...buildRoot(), timer: null, mounted: false, lastKeys: {}, generation: 0 };
  if (panel.root.parentElement !== el) {
    el.replaceChildren(panel.root);
    panel.lastKeys = {};
  }
  if (panel.mounted) return; // render() again for the same mount: nothing to restart
  panel.mounted = true;
  panel.generation += 1;
  state.budget = estimate.current();
  renderAll(true);
  poll(panel.generation);
  panel.unsubscribe = estimate.subscribe(onEstimate);
  estimate.watchGraph();
  Promise.all([loadCards(), loadLastOom(), loadRuns()]).then(() => { renderAll(); estimate.schedule(0); });
}

function destroy() {
  if (!panel) return;
  panel.mounted = false;
  clearTimeout(panel.timer);
  panel.unsubscribe?.();
}

app.registerExtension({
  name: EXTENSION,
  settings: [
    {
      id: SETTING_REFRESH,
      name: "Panel refresh interval (ms)",
      tooltip: "How often the VRAM panel reads memory while it is open (500-60000 ms).",
      type: "number",
      defaultValue: DEFAULT_REFRESH_MS,
      attrs: { min: 500, max: 60000, step: 100 },
      category: ["VRAM Budget", "Panel", "Refresh interval"],
    },
    {
      id: estimate.SETTING_CARD,
      name: "Card to estimate for (empty: this GPU)",
      tooltip: "The panel's and the readout's estimate are for this card; chosen in the VRAM panel.",
      type: "text",
      defaultValue: "",
      category: ["VRAM Budget", "Panel", "Card"],
    },
  ],
  async setup() {
    api.addEventListener("execution_error", onExecutionError);
    api.addEventListener("vram_budget.run", onRunRecorded);
    api.addEventListener("vram_budget.stopped", onStopped);
    api.addEventListener("vram_budget.admission", onAdmission);
    const manager = app.extensionManager;
    const tab = {
      id: TAB_ID,
      icon: "pi pi-microchip",
      title: "VRAM",
      tooltip: "VRAM Budget: GPU memory, loaded models, workflow budget",
      type: "custom",
      render,
      destroy,
    };
    if (manager?.registerSidebarTab) manager.registerSidebarTab(tab);
    else console.warn("[VRAM Budget] this ComfyUI frontend has no sidebar tab API");
  },
});

// For the end-to-end test and for debugging from the console: preview(status) shows a status
// document (e.g. one pasted from a bug report) instead of the live one; preview(null) goes live.
function preview(status) {
  state.frozen = Boolean(status);
  if (status) state.status = status;
  renderAll(true);
}

window.__vramBudget = { state, render, destroy, onExecutionError, onRunRecorded, onStopped, preview, applyPlan, changeTracker };
