// One answer, worded once: the verdict of an estimate (the server's Budget JSON, budget.py to_dict) as the
// node, the panel and the top-bar readout all show it. The badge is the CARD's verdict; system RAM has its
// own line and fixes, and the overall line says which of the two stops the run (issue 31).
// Plain ES module, no build step; everything read from the document is checked.

export const VERDICT_LABEL = { fits: "Fits", tight: "Fits (tight)", runs_slower: "Runs, slower", oom: "Out of memory", unknown: "Can't tell" };
export const VERDICT_TONE = { fits: "ok", tight: "warn", runs_slower: "warn", oom: "bad", unknown: "info" };
const RISK_WORD = { low: "low", elevated: "elevated", high: "high", unknown: "can't tell" };
const HOST_WORD = { oom: "out of system RAM", swapping: "swaps to disk", thrashing: "re-reads weights from disk", fits: "fits in RAM" };
const GiB = 1024 ** 3;

const num = (v) => (typeof v === "number" && Number.isFinite(v) ? v : null);
const str = (v) => (typeof v === "string" ? v : "");
export const gib = (bytes) => (num(bytes) == null ? "–" : `${(bytes / GiB).toFixed(2)} GiB`);

/** "about as fast" when the copies hide behind the compute, else the range: the badge and the words agree. */
export function speedWords(low, high) {
  const a = num(low) ?? 1;
  const b = num(high) ?? a;
  if (b < 1.05) return "about as fast: the copies hide behind the compute";
  const fmt = (x) => x.toFixed(1);
  return fmt(a) === fmt(b) ? `≈ ${fmt(a)}× slower` : `≈ ${fmt(a)}–${fmt(b)}× slower`;
}

/** "40–90 s", "3–8 min", "1.2–3.0 h": one unit, the larger end's (speed.span in Python). */
export function span(low, high) {
  const a = num(low) ?? 0;
  const b = num(high) ?? a;
  const f0 = (x) => Math.round(x).toLocaleString("en-US");
  if (b < 120) return `${f0(a)}–${f0(b)} s`;
  if (b < 7200) return `${f0(a / 60)}–${f0(b / 60)} min`;
  return `${(a / 3600).toFixed(1)}–${(b / 3600).toFixed(1)} h`;
}

const BOUND_WORD = { compute: "compute-bound", ram: "bound by weight copies from RAM", disk: "bound by weight reads from disk" };

/** The run's predicted time (the Budget JSON's `time`, speed.RunTime) when it runs: time first (issue 32). */
export function timeText(b, card) {
  const t = b && typeof b.time === "object" ? b.time : null;
  if (!t || !["fits", "tight", "runs_slower"].includes(card)) return "";
  const low = num(t.low_seconds);
  const high = num(t.high_seconds);
  const step = num(t.step_seconds);
  if (low == null || high == null || step == null) return "";
  const steps = num(t.steps);
  const run = num(t.run_seconds);
  const secs = (x) => (x < 1 ? x.toFixed(2) : x < 10 ? x.toFixed(1) : Math.round(x).toLocaleString("en-US"));
  const per = run ? `${secs((step * low) / run)}–${secs((step * high) / run)}` : secs(step);
  const why = BOUND_WORD[str(t.bound)] || "";
  return `≈ ${span(low, high)} a run${steps ? ` (${steps} steps${t.steps_assumed ? ", assumed" : ""} at ${per} s/step${why ? `, ${why}` : ""})` : ""}`;
}

/** The estimate in the few facts every view shows. `b` is the Budget JSON (or null). */
export function summarize(b) {
  if (!b || typeof b !== "object") return null;
  const overall = str(b.verdict) || "unknown";
  const card = str(b.vram_verdict) || overall;
  const host = str(b.host_outcome);
  const ramStops = overall === "oom" && card !== "oom" && host === "oom";
  const risk = b.oom_risk && typeof b.oom_risk === "object" ? b.oom_risk : null;
  const capacity = num(b.device?.capacity_bytes) ?? num(b.device?.total_bytes) ?? 0;
  // an incomplete estimate's lower bound is its stages as ComfyUI runs them (budget.at_least: a VAE call retried
  // tiled, weights streamed), not every stage in one go: the same figure as the command line's "at least"
  const oneGo = num(b.peak_bytes) ?? 0;
  const asRun = num(b.predicted_peak_bytes);
  const peak = card === "unknown" && asRun != null && asRun > 0 && asRun < oneGo ? asRun : oneGo;
  let detail = "";
  if (card === "runs_slower") {
    const streamed = num(b.offload_bytes);
    detail = `${streamed ? `${gib(streamed)} of weights stream from RAM; ` : ""}sampling ${speedWords(b.slowdown, b.slowdown_high)}`;
  } else if (card === "unknown") {
    const names = (Array.isArray(b.missing) ? b.missing : []).map((m) => str(m?.name)).filter(Boolean);
    detail = names.length ? `can't price ${names.slice(0, 2).join(", ")}` : "part of the workflow can't be priced";
  } else if ((num(b.spare_bytes) ?? num(b.headroom_bytes)) != null) {
    // spare_bytes: free as ComfyUI runs the peak stage (cond / uncond in turn...); an older server sends headroom only
    const spare = num(b.spare_bytes) ?? num(b.headroom_bytes);
    detail = spare >= 0 ? `${gib(spare)} to spare` : `short by ${gib(-spare)}`;
  }
  const remedies = (Array.isArray(b.remedies) ? b.remedies : []).filter((r) => r && str(r.title));
  const ramRemedies = (Array.isArray(b.host?.remedies) ? b.host.remedies : []).filter((r) => r && str(r.title));
  let firstFix = null;
  if (ramStops || (host === "swapping" && card !== "oom")) firstFix = ramRemedies[0] ? { title: ramRemedies[0].title, what: "RAM" } : null;
  else if (card !== "fits" && card !== "unknown") firstFix = remedies[0] ? { title: remedies[0].title, what: "VRAM" } : null;
  const ramPeak = num(b.ram_peak_bytes);
  const ramTotal = num(b.ram_total_bytes);
  let ramLine = "";
  if (ramPeak != null) {
    const of = ramTotal != null ? ` of ${gib(ramTotal)}${num(b.swap_total_bytes) ? ` + ${gib(b.swap_total_bytes)} swap` : ""}` : "";
    ramLine = b.ram_assumed ? `System RAM: needs ≈ ${gib(ramPeak)} (this machine's RAM is not known)`
      : `System RAM: needs ≈ ${gib(ramPeak)}${of}${HOST_WORD[host] ? `: ${HOST_WORD[host]}` : ""}`;
  }
  // streamed weights that hide behind the compute are not "slower" (report.verdict_text words it the same)
  const fullSpeed = card === "runs_slower" && (num(b.slowdown_high) ?? 2) < 1.05;
  return {
    verdict: overall, card, label: fullSpeed ? "Runs (streaming)" : VERDICT_LABEL[card] || card, time: timeText(b, card), tone: VERDICT_TONE[card] || "info",
    overallLabel: VERDICT_LABEL[overall] || overall, ramStops, host,
    stopper: ramStops ? "System RAM stops this run, not the card" : overall === "oom" ? "The card stops this run" : "",
    peak, peakText: peakText(overall === "unknown" || card === "unknown", peak), capacity, detail, ramLine,
    risk: risk ? { level: str(risk.level) || "unknown", word: RISK_WORD[str(risk.level)] || str(risk.level), basis: (Array.isArray(risk.basis) ? risk.basis : []).map(String) } : null,
    assumptions: str(b.assumptions),
    firstFix,
    complete: b.complete !== false,
  };
}

/** The peak as a user reads it: "23.15 GiB", an incomplete estimate's "≥ 11.65 GiB", and no figure at all when
 * nothing could be priced (unknown is never 0 bytes). */
export const NOTHING_PRICED = "nothing priced";
export function peakText(unknown, peak) {
  if (!unknown) return gib(peak);
  return (num(peak) ?? 0) > 0 ? `≥ ${gib(peak)}` : NOTHING_PRICED;
}

/** The chip's short text: "Runs, slower · 23.15 GiB". */
export function chipText(s) {
  if (!s) return "";
  return `${s.ramStops ? "Out of RAM" : s.label} · ${s.peakText ?? peakText(s.verdict === "unknown", s.peak)}`;
}

const CITATION = /\s*\((?:[^()]*?\b[\w./-]+\.(?:py|md|js|json)(?::[\d:, /-]+)?[^()]*|COMFYUI-[A-Z]+ §[\d.]+[^()]*)\)/g;
const BARE = /\s*(?:[\w/-]+\.py:\d[\d:, /-]*|COMFYUI-(?:NOTES|RUNTIME) §[\d.]+)/g;

/** A server sentence without its code citations (units.user_words in Python): they stay in --json. */
export function userWords(text) {
  return String(text ?? "").replace(CITATION, "").replace(BARE, "").replace(/\s{2,}/g, " ").replace(/ ;/g, ";").replace(/ ,/g, ",").trim();
}
