// On-node reports of the pack's nodes, kept after the run (they come through each node's `ui`
// output, which frontend 1.58 does not clear at the end of a job as it does progress text):
// - VRAM Budget / Wan Planner: a coloured verdict line, large enough to read at 60 % zoom, over the
//   fixed-width report (its stage columns line up).
// - VAE Decode / Encode (Auto Tiled): which path ran and why.
// Plain ES module; ComfyUI frontends 1.35.9, 1.41 and 1.58 (node.addDOMWidget, onExecuted).
import { app } from "../../scripts/app.js";

const VERDICT_COLOUR = { fits: "#3fb950", tight: "#d29922", runs_slower: "#d29922", oom: "#f85149", unknown: "#8b949e" };
const TEXT_PREVIEW = "$$node-text-preview"; // the frontend's own widget for progress text

const REPORT_NODES = {
  VRAMBudget: { size: [460, 390], hint: "Run the workflow: the budget appears here before any model loads." },
  VRAMBudgetWanPlanner: { size: [520, 460], hint: "Run the workflow: the plan appears here." },
};
const TILED_NODES = {
  VAEDecodeAutoTiled: "Run the workflow: how the decode ran (one go or tiles) and why appears here.",
  VAEEncodeAutoTiled: "Run the workflow: how the encode ran (one go or tiles) and why appears here.",
};

function el(tag, className, style) {
  const node = document.createElement(tag);
  node.className = className;
  Object.assign(node.style, style || {});
  return node;
}

// ---------------------------------------------------------------------------------------------
// VRAM Budget / Wan Planner: verdict line + report
function reportWidget(node, hint) {
  const existing = node.widgets?.find((w) => w.name === "vram_report");
  if (existing) return existing;
  const box = el("div", "vram-budget-box", {
    display: "flex", flexDirection: "column", gap: "6px", height: "100%", boxSizing: "border-box", minHeight: "0",
  });
  const verdict = el("div", "vram-budget-verdict", {
    font: "700 18px/1.25 system-ui, sans-serif", padding: "6px 10px", borderRadius: "6px", flex: "none",
    color: "var(--fg-color, #ddd)", borderLeft: "5px solid #8b949e", display: "none",
    background: "color-mix(in srgb, #8b949e 18%, transparent)",
  });
  const detail = el("div", "vram-budget-verdict-detail", {
    font: "13px/1.3 system-ui, sans-serif", marginTop: "2px", display: "-webkit-box", WebkitLineClamp: "2",
    WebkitBoxOrient: "vertical", overflow: "hidden",
  });
  const pre = el("pre", "vram-budget-report", {
    margin: "0", padding: "6px 8px", overflow: "auto", whiteSpace: "pre", boxSizing: "border-box", flex: "1",
    minHeight: "0", font: "12px/1.35 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace",
    color: "var(--fg-color, #ddd)", background: "var(--comfy-input-bg, #222)",
    border: "1px solid var(--border-color, #444)", borderRadius: "6px",
  });
  pre.textContent = hint;
  box.append(verdict, pre);
  const widget = node.addDOMWidget("vram_report", "VRAM_REPORT", box, { serialize: false, hideOnZoom: false });
  Object.assign(widget, { reportEl: pre, verdictEl: verdict, detailEl: detail }); // widget.element is the box
  return widget;
}

/** "Verdict: RUNS, SLOWER: needs 23.15 GiB ..." -> ["RUNS, SLOWER", "needs 23.15 GiB ..."] */
function splitVerdict(line) {
  const body = String(line || "").replace(/^Verdict:\s*/, "");
  const cut = body.indexOf(": ");
  return cut > 0 ? [body.slice(0, cut), body.slice(cut + 2)] : [body, ""];
}

function showReport(node, message, hint) {
  const text = message?.text?.[0] ?? message?.report?.[0];
  if (typeof text !== "string") return;
  const widget = reportWidget(node, hint);
  widget.reportEl.textContent = text;
  const summary = message?.vram_budget?.[0];
  const line = message?.verdict_line?.[0];
  const colour = VERDICT_COLOUR[summary?.verdict] ?? (summary?.error ? VERDICT_COLOUR.unknown : null);
  if (line && colour) {
    const [word, rest] = splitVerdict(line);
    widget.verdictEl.replaceChildren(document.createTextNode(word), widget.detailEl);
    widget.detailEl.textContent = rest;
    widget.verdictEl.title = line;
    Object.assign(widget.verdictEl.style, {
      display: "block", borderLeftColor: colour, background: `color-mix(in srgb, ${colour} 20%, transparent)`,
    });
    widget.verdictEl.dataset.verdict = summary?.verdict ?? "error";
  }
  widget.reportEl.style.borderColor = colour ?? "var(--border-color, #444)";
  node.setDirtyCanvas(true, true);
}

// ---------------------------------------------------------------------------------------------
// VAE Decode / Encode (Auto Tiled): which path ran and why
function tilingWidget(node, hint) {
  const existing = node.widgets?.find((w) => w.name === "vram_tiling");
  if (existing) return existing;
  const div = el("div", "vram-budget-tiling", {
    font: "13px/1.35 system-ui, sans-serif", padding: "6px 8px", boxSizing: "border-box", height: "100%",
    overflow: "auto", whiteSpace: "pre-wrap", color: "var(--fg-color, #ddd)", background: "var(--comfy-input-bg, #222)",
    border: "1px solid var(--border-color, #444)", borderLeft: "4px solid var(--border-color, #444)", borderRadius: "6px",
  });
  div.textContent = hint;
  const widget = node.addDOMWidget("vram_tiling", "VRAM_TILING", div, {
    serialize: false, hideOnZoom: false, getMinHeight: () => 56, getMaxHeight: () => 140,
  });
  return widget; // widget.element is the div
}

/** The frontend's progress-text widget holds the same text while the node runs; drop it so the
 *  text shows once (1.58 drops it itself at the end of the job). Only when it is our own text. */
function dropProgressPreview(node, text) {
  const i = node.widgets?.findIndex((w) => w.name === TEXT_PREVIEW) ?? -1;
  if (i < 0) return;
  const value = String(node.widgets[i].value ?? "");
  if (value && value !== text) return;
  node.widgets[i].onRemove?.();
  node.widgets.splice(i, 1);
}

function showTiling(node, message, hint) {
  const text = message?.text?.[0];
  if (typeof text !== "string") return;
  const widget = tilingWidget(node, hint);
  widget.element.textContent = text;
  const tiled = /\bin \d+ tiles\b|tiled fallback/i.test(text);
  widget.element.style.borderLeftColor = tiled ? "#d29922" : "#3fb950";
  widget.element.dataset.path = tiled ? "tiled" : "one-go";
  dropProgressPreview(node, text);
  node.setDirtyCanvas(true, true);
}

// ---------------------------------------------------------------------------------------------
function hook(nodeType, onCreated, onRun) {
  const onNodeCreated = nodeType.prototype.onNodeCreated;
  nodeType.prototype.onNodeCreated = function () {
    const r = onNodeCreated?.apply(this, arguments);
    onCreated(this);
    return r;
  };
  const onExecuted = nodeType.prototype.onExecuted;
  nodeType.prototype.onExecuted = function (message) {
    onExecuted?.apply(this, arguments);
    onRun(this, message);
  };
}

app.registerExtension({
  name: "VRAMBudget.NodeReport",
  async beforeRegisterNodeDef(nodeType, nodeData) {
    const report = REPORT_NODES[nodeData?.name];
    if (report) {
      hook(nodeType, (node) => {
        reportWidget(node, report.hint);
        node.setSize([Math.max(node.size[0], report.size[0]), Math.max(node.size[1], report.size[1])]);
      }, (node, message) => showReport(node, message, report.hint));
    }
    const hint = TILED_NODES[nodeData?.name];
    if (hint) {
      hook(nodeType, (node) => {
        tilingWidget(node, hint);
        node.setSize([Math.max(node.size[0], 320), node.size[1]]);
      }, (node, message) => showTiling(node, message, hint));
    }
  },
});
