// The API key and the fetch helper. A 401 asks for a key once (a form on the page), keeps it for this tab only
// (sessionStorage) and retries; the key travels in the Authorization header on HTTP requests and as a WebSocket
// subprotocol ("cbf.key.<key>", next to "cbf.v1"), never in a URL (URLs end up in access logs).

import { $ } from "./state.js";

const KEY_STORE = "cbf.api_key";

export const apiKey = () => sessionStorage.getItem(KEY_STORE) || "";
export const forgetKey = () => sessionStorage.removeItem(KEY_STORE);

function withKey(opts) {
  const k = apiKey();
  return k ? { ...opts, headers: { ...(opts.headers || {}), Authorization: `Bearer ${k}` } } : opts;
}

// The subprotocols a WebSocket offers: the key, and the protocol the server picks.
export function keyProtocols() {
  const k = apiKey();
  return k ? ["cbf.v1", `cbf.key.${k}`] : [];
}

let keyWait = null;
// Show the key form; resolves once a key has been entered (one prompt however many callers wait).
export function askKey(message) {
  if (keyWait) return keyWait;
  keyWait = new Promise((resolve) => {
    const form = $("key-form");
    form.hidden = false;
    $("key-error").textContent = message || "";
    $("key-input").value = "";
    $("key-input").focus();
    form.onsubmit = (e) => {
      e.preventDefault();
      const k = $("key-input").value.trim();
      if (!k) return;
      sessionStorage.setItem(KEY_STORE, k);
      form.hidden = true;
      keyWait = null;
      resolve();
      $("text").focus();
    };
  });
  return keyWait;
}

// The server's error message from a response that is not ok (its JSON error, else its text, else the status).
export async function errorText(r) {
  try {
    const j = await r.clone().json();
    if (j && j.error) return j.error.message || j.error.code || `HTTP ${r.status}`;
  } catch (_) { /* not JSON */ }
  try {
    const t = (await r.text()).trim();
    if (t) return `HTTP ${r.status}: ${t.slice(0, 200)}`;
  } catch (_) { /* nothing */ }
  return `HTTP ${r.status} ${r.statusText}`;
}

// fetch() with the key; on 401 asks for a (new) key and tries again.
export async function api(path, opts = {}) {
  for (;;) {
    const r = await fetch(path, withKey(opts));
    if (r.status !== 401) return r;
    const msg = apiKey() ? `That key was refused: ${await errorText(r)}` : "";
    if (apiKey()) forgetKey();
    await askKey(msg);
  }
}
