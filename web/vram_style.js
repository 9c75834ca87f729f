// Shared helpers of the pack's scripts (vram_panel.js, vram_readout.js).
//
// ComfyUI lists every .js file under the pack's WEB_DIRECTORY as an extension script (server.py,
// GET /extensions) and the frontend imports each one, this file included: it only exports
// functions and does nothing when loaded on its own.

// Adds <link id=ID rel=stylesheet href=FILE> to the page once; FILE is resolved next to this module
// (the pack's web/ folder, served under /extensions/<pack>/).
export function ensureStylesheet(id, file) {
  if (document.getElementById(id)) return;
  const link = document.createElement("link");
  link.id = id;
  link.rel = "stylesheet";
  link.href = new URL(`./${file}`, import.meta.url).href;
  document.head.append(link);
}
