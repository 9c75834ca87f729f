// Shows the VRAM Budget node's report on the node itself, as a monospace table (the report is a
// fixed-width text: stage columns line up). Also used by the Wan planner node for its report.
// Plain ES module; ComfyUI frontend 1.35.9 and 1.41 (node.addDOMWidget, onExecuted).
import { app } from "../../scripts/app.js";

const NODES = new Set(["VRAMBudget", "VRAMBudgetWanPlanner"]);

function reportWidget(node) {
  let widget = node.widgets?.find((w) => w.name === "vram_report");
  if (widget) return widget;
  const pre = document.createElement("pre");
  pre.className = "vram-budget-report";
  Object.assign(pre.style, {
    margin: "0", padding: "6px 8px", overflow: "auto", whiteSpace: "pre", boxSizing: "border-box",
    font: "11px/1.35 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace",
    color: "var(--fg-color, #ddd)", background: "var(--comfy-input-bg, #222)",
    border: "1px solid var(--border-color, #444)", borderRadius: "6px", height: "100%",
  });
  pre.textContent = "Queue the prompt: the budget appears here before any model loads.";
  widget = node.addDOMWidget("vram_report", "VRAM_REPORT", pre, { serialize: false, hideOnZoom: false });
  widget.element = pre;
  return widget;
}

app.registerExtension({
  name: "VRAMBudget.NodeReport",
  async beforeRegisterNodeDef(nodeType, nodeData) {
    if (!NODES.has(nodeData?.name)) return;
    const onNodeCreated = nodeType.prototype.onNodeCreated;
    nodeType.prototype.onNodeCreated = function () {
      const r = onNodeCreated?.apply(this, arguments);
      reportWidget(this);
      this.setSize([Math.max(this.size[0], 640), Math.max(this.size[1], 420)]);
      return r;
    };
    const onExecuted = nodeType.prototype.onExecuted;
    nodeType.prototype.onExecuted = function (message) {
      onExecuted?.apply(this, arguments);
      const text = message?.text?.[0] ?? message?.report?.[0];
      if (typeof text === "string") {
        const widget = reportWidget(this);
        widget.element.textContent = text;
        const verdict = message?.vram_budget?.[0]?.verdict;
        const colour = { fits: "#3fb950", tight: "#d29922", runs_slower: "#d29922", oom: "#f85149", unknown: "#8b949e" }[verdict];
        widget.element.style.borderColor = colour ?? "var(--border-color, #444)";
        this.setDirtyCanvas(true, true);
      }
    };
  },
});
