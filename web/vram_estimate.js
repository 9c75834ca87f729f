// The open workflow's estimate, asked once and shared: the VRAM panel and the top-bar readout show the same
// answer because they read the same result (POST /api/vram_budget/estimate, the route the VRAM Budget node's
// estimator answers: comfy_bridge.estimator_device). The card to estimate for is remembered in a ComfyUI
// setting, so it survives a reload.
import { app } from "../../scripts/app.js";
import { api } from "../../scripts/api.js";

export const SETTING_CARD = "VRAMBudget.Card";
const DEBOUNCE_MS = 900;
const BUSY_RETRY_MS = 1500; // the server answered 429 (all estimate slots taken): ask again after this
const BUSY_RETRIES = 20;

const store = {
  card: null, // null = not read from the settings yet; "" = this GPU
  gpus: [], // more cards for a placement plan (cuda:1 on)
  result: { state: "idle" }, // {state: "idle"|"loading"|"ok"|"unavailable"|"error", data, error}
  seq: 0,
  busyRetries: 0,
  timer: null,
  listeners: new Set(),
};

function emit() {
  for (const fn of store.listeners) {
    try {
      fn(store.result);
    } catch (err) {
      console.warn("[VRAM Budget] estimate listener failed", err);
    }
  }
}

export function subscribe(fn) {
  store.listeners.add(fn);
  return () => store.listeners.delete(fn);
}

export function current() {
  return store.result;
}

export function card() {
  if (store.card == null) {
    let saved = "";
    try {
      saved = String(app.extensionManager?.setting?.get(SETTING_CARD) || "");
    } catch {
      /* settings not ready: this GPU */
    }
    store.card = saved.slice(0, 120);
  }
  return store.card;
}

export function gpus() {
  return store.gpus;
}

/** Estimate for another card ("" = this GPU) and remember it. */
export function setCard(name) {
  store.card = String(name || "").slice(0, 120);
  try {
    app.extensionManager?.setting?.set(SETTING_CARD, store.card);
  } catch (err) {
    console.warn("[VRAM Budget] could not remember the card", err);
  }
  schedule(0);
}

export function setGpus(list) {
  store.gpus = (Array.isArray(list) ? list : []).slice(0, 7).map((g) => String(g).slice(0, 120));
  schedule(0);
}

export function schedule(delay = DEBOUNCE_MS) {
  clearTimeout(store.timer);
  store.timer = setTimeout(run, delay);
}

export async function run() {
  let ready = false;
  try { // the editor is not up yet at start-up or right after a reload (frontend 1.58's app.canvas throws then)
    ready = Boolean(app.canvas && (app.rootGraph ?? app.graph));
  } catch {
    ready = false;
  }
  if (!ready) {
    schedule(1000);
    return;
  }
  const seq = ++store.seq;
  store.result = { ...store.result, state: "loading" };
  emit();
  try {
    const { workflow, output } = await app.graphToPrompt();
    const response = await api.fetchApi("/vram_budget/estimate", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ prompt: output, workflow, card: card() || null, gpus: store.gpus }),
    });
    let data = null;
    try {
      data = await response.json();
    } catch {
      data = { error: `HTTP ${response.status}` };
    }
    if (seq !== store.seq) return; // a newer estimate is on its way
    if (response.status === 429 && store.busyRetries < BUSY_RETRIES) {
      // the server is busy with other estimates (routes.py ESTIMATE_SLOTS): keep the last answer, ask again
      store.busyRetries += 1;
      store.result = { ...store.result, state: store.result.data ? "ok" : "loading" };
      schedule(BUSY_RETRY_MS);
      emit();
      return;
    }
    store.busyRetries = 0;
    if (response.status === 200) store.result = { state: "ok", data };
    else if (response.status === 501) store.result = { state: "unavailable", error: data?.detail };
    else store.result = { state: "error", error: data?.error || `HTTP ${response.status}` };
  } catch (err) {
    if (seq !== store.seq) return;
    store.result = { state: "error", error: `Could not read the workflow: ${err?.message || err}` };
  }
  emit();
}

let watching = false;

/** Re-estimate when the graph changes (once, whoever asks first: the panel or the readout). */
export function watchGraph() {
  if (watching) return;
  watching = true;
  api.addEventListener("graphChanged", () => schedule());
}

window.__vramBudgetEstimate = { store, run, schedule, setCard, subscribe };
