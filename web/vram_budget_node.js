// On-node reports of the pack's nodes, kept after the run (they come through each node's `ui`
// output, which frontend 1.58 does not clear at the end of a job as it does progress text):
// - VRAM Budget / Wan Planner: a coloured verdict line, large enough to read at 60 % zoom, over the
//   fixed-width report (its stage columns line up).
// - VAE Decode / Encode (Auto Tiled): which path ran and why.
// Plain ES module; ComfyUI frontends 1.35.9, 1.41 and 1.58 (node.addDOMWidget, onExecuted).
import { app } from "../../scripts/app.js";
import { summarize, chipText, userWords } from "./vram_summary.js";

const VERDICT_COLOUR = { fits: "#3fb950", tight: "#d29922", runs_slower: "#d29922", oom: "#f85149", unknown: "#8b949e" };
const TEXT_PREVIEW = "$$node-text-preview"; // the frontend's own widget for progress text

const REPORT_NODES = {
  VRAMBudget: { size: [440, 390], hint: "Run the workflow: the budget appears here before any model loads." },
  VRAMBudgetWanPlanner: { size: [440, 420], hint: "Run the workflow (or just this node): the plan appears here." },
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
// VRAM Budget / Wan Planner: a compact summary card that fits the node's width (issue 31), the full
// fixed-width report behind "Full report"
function reportWidget(node, hint) {
  const existing = node.widgets?.find((w) => w.name === "vram_report");
  if (existing) return existing;
  const box = el("div", "vram-budget-box", {
    display: "flex", flexDirection: "column", gap: "6px", height: "100%", boxSizing: "border-box", minHeight: "0",
    font: "13px/1.35 system-ui, sans-serif", color: "var(--fg-color, #ddd)", overflow: "hidden",
  });
  const verdict = el("div", "vram-budget-verdict", {
    font: "700 18px/1.25 system-ui, sans-serif", padding: "6px 10px", borderRadius: "6px", flex: "none",
    color: "var(--fg-color, #ddd)", borderLeft: "5px solid #8b949e", display: "none",
    background: "color-mix(in srgb, #8b949e 18%, transparent)", overflowWrap: "anywhere",
  });
  const detail = el("div", "vram-budget-verdict-detail", { font: "13px/1.3 system-ui, sans-serif", marginTop: "2px" });
  const facts = el("div", "vram-budget-facts", {
    display: "flex", flexDirection: "column", gap: "3px", flex: "none", overflowWrap: "anywhere", padding: "0 2px",
  });
  const toggle = el("button", "vram-budget-toggle", {
    alignSelf: "flex-start", font: "12px system-ui, sans-serif", padding: "2px 8px", borderRadius: "4px", cursor: "pointer",
    color: "var(--fg-color, #ddd)", background: "var(--comfy-input-bg, #222)", border: "1px solid var(--border-color, #444)",
    display: "none",
  });
  toggle.type = "button";
  toggle.textContent = "Full report";
  const pre = el("pre", "vram-budget-report", {
    margin: "0", padding: "6px 8px", overflow: "auto", whiteSpace: "pre", boxSizing: "border-box", flex: "1",
    minHeight: "0", font: "12px/1.35 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace",
    color: "var(--fg-color, #ddd)", background: "var(--comfy-input-bg, #222)",
    border: "1px solid var(--border-color, #444)", borderRadius: "6px", display: "none",
  });
  const hintEl = el("div", "vram-budget-hint", { opacity: "0.8", overflowWrap: "anywhere" });
  hintEl.textContent = hint;
  toggle.addEventListener("click", () => {
    const open = pre.style.display === "none";
    pre.style.display = open ? "block" : "none";
    toggle.textContent = open ? "Summary only" : "Full report";
    if (open) node.setSize([Math.max(node.size[0], 620), Math.max(node.size[1], 460)]);
    node.setDirtyCanvas(true, true);
  });
  box.append(verdict, hintEl, facts, toggle, pre);
  const widget = node.addDOMWidget("vram_report", "VRAM_REPORT", box, { serialize: false, hideOnZoom: false });
  Object.assign(widget, { reportEl: pre, verdictEl: verdict, detailEl: detail, factsEl: facts, toggleEl: toggle, hintEl });
  return widget;
}

/** "Verdict: RUNS, SLOWER: needs 23.15 GiB ..." -> ["RUNS, SLOWER", "needs 23.15 GiB ..."] */
function splitVerdict(line) {
  const body = String(line || "").replace(/^Verdict:\s*/, "");
  const cut = body.indexOf(": ");
  return cut > 0 ? [body.slice(0, cut), body.slice(cut + 2)] : [body, ""];
}

function fact(label, text, colour) {
  const row = el("div", "vram-budget-fact", colour ? { color: colour } : {});
  if (label) {
    const b = document.createElement("b");
    b.textContent = `${label} `;
    row.append(b);
  }
  row.append(document.createTextNode(text));
  return row;
}

function showReport(node, message, hint) {
  const text = message?.text?.[0] ?? message?.report?.[0];
  if (typeof text !== "string") return;
  const widget = reportWidget(node, hint);
  widget.reportEl.textContent = text;
  widget.hintEl.style.display = "none";
  widget.toggleEl.style.display = "block";
  const budget = message?.vram_budget?.[0];
  const s = summarize(budget);
  const line = message?.verdict_line?.[0];
  const facts = [];
  let colour = null;
  if (s) {
    colour = VERDICT_COLOUR[s.ramStops ? "oom" : s.card] ?? VERDICT_COLOUR.unknown;
    widget.verdictEl.replaceChildren(document.createTextNode(chipText(s)), widget.detailEl);
    widget.detailEl.textContent = s.detail;
    widget.verdictEl.dataset.verdict = s.card;
    widget.verdictEl.title = line || "";
    if (s.time) facts.push(fact("Time:", s.time));
    if (s.risk && s.risk.level !== "unknown") {
      facts.push(fact("Risk:", `${s.risk.word}${s.risk.basis[0] ? ` · ${userWords(s.risk.basis[0])}` : ""}`,
        s.risk.level === "high" ? VERDICT_COLOUR.oom : null));
    }
    if (s.ramLine) facts.push(fact("", s.ramLine, s.host === "oom" ? VERDICT_COLOUR.oom : null));
    if (s.stopper) facts.push(fact("", s.stopper, VERDICT_COLOUR.oom));
    if (s.firstFix) facts.push(fact(`First fix (${s.firstFix.what}):`, userWords(s.firstFix.title)));
    if (s.assumptions) facts.push(fact("Assumes:", s.assumptions));
  } else {
    colour = budget?.error ? VERDICT_COLOUR.unknown : message?.wan_plan ? "#58a6ff" : null;
    const [word, rest] = line ? splitVerdict(line) : [String(text.split("\n")[0] || ""), ""];
    widget.verdictEl.replaceChildren(document.createTextNode(word), widget.detailEl);
    widget.detailEl.textContent = rest;
    const lines = text.split("\n").slice(1).filter((l) => l.trim()).slice(0, 4);
    for (const l of lines) facts.push(fact("", l.trim()));
  }
  widget.factsEl.replaceChildren(...facts);
  if (colour) {
    Object.assign(widget.verdictEl.style, {
      display: "block", borderLeftColor: colour, background: `color-mix(in srgb, ${colour} 20%, transparent)`,
    });
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
