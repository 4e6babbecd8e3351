// The credentials and the fetch helper. With keys on the server, the page never keeps a key anywhere but in this
// module's memory, and speaks with a token instead:
//   - a link that carries a token in its fragment (`/#token=cbft....`, minted by the operator with
//     POST /v1/tokens; the fragment never reaches a server) is used as is, and dropped from the address bar;
//   - otherwise a 401 asks for a key once (a form on the page); the key stays in memory only (gone on reload) and
//     is exchanged for a short-lived token (POST /v1/tokens), renewed before it ends. Only voice uploads and
//     deletions, which no token reaches, send the key itself.
// Credentials travel in the Authorization header on HTTP requests and as a WebSocket subprotocol
// ("cbf.key.<token>", next to "cbf.v1"), never in a URL (URLs end up in access logs).

import { $ } from "./state.js";

const TOKEN_ROUTES = ["stream", "webrtc", "tts", "voices"];
const TOKEN_TTL_S = 900;
const RENEW_BEFORE_S = 60;

let key = ""; // typed once; memory only
let token = "";
let tokenExpires = 0; // unix seconds; 0: unknown (a token from the link)
let linkToken = false;

(function tokenFromLink() {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (!m) return;
  token = decodeURIComponent(m[1]);
  linkToken = true;
  history.replaceState(null, "", location.pathname + location.search);
})();

export const apiKey = () => key || token;
export const forgetKey = () => { key = ""; token = ""; tokenExpires = 0; linkToken = false; };

// A fresh token for the speaking routes, minted with the key when there is one and the token is missing or ending.
async function speakingCredential() {
  if (key && (!token || (tokenExpires && tokenExpires - Date.now() / 1000 < RENEW_BEFORE_S))) {
    const r = await fetch("/v1/tokens", {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ ttl_s: TOKEN_TTL_S, routes: TOKEN_ROUTES }),
    });
    if (r.ok) {
      const j = await r.json();
      token = j.token;
      tokenExpires = j.expires_at;
    } else {
      token = "";
      return key; // refused (the request then says so), or a server without tokens: the key as before
    }
  }
  return token || key;
}

// Whether a request needs the key itself: voice and lexicon uploads and deletions.
const needsKey = (path, opts) => /^\/v1\/(voices|lexicons)/.test(path) && (opts.method || "GET") !== "GET";

async function withCredential(path, opts) {
  const c = needsKey(path, opts) ? key || token : await speakingCredential();
  return c ? { ...opts, headers: { ...(opts.headers || {}), Authorization: `Bearer ${c}` } } : opts;
}

// The subprotocols a WebSocket offers: the token (or key), and the protocol the server picks.
export async function keyProtocols() {
  const c = await speakingCredential();
  return c ? ["cbf.v1", `cbf.key.${c}`] : [];
}

// A refusal of the credential: a token that ended or was used up is replaced (when the key is held), anything else
// forgets both and asks again. Resolves once there is something to try.
export async function refused(code, message) {
  if (key && (code === "token_expired" || code === "token_used")) {
    token = "";
    return;
  }
  const had = apiKey();
  const fromLink = linkToken;
  forgetKey();
  await askKey(had ? `That ${fromLink ? "link's token" : "key"} was refused: ${message || code}` : "");
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
      key = k;
      token = "";
      $("key-input").value = "";
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

async function errorCode(r) {
  try {
    const j = await r.clone().json();
    return (j && j.error && j.error.code) || "";
  } catch (_) {
    return "";
  }
}

// fetch() with the token (or the key where one is needed); on 401 renews the token or asks for a key, and tries
// again.
export async function api(path, opts = {}) {
  for (;;) {
    const r = await fetch(path, await withCredential(path, opts));
    if (r.status !== 401) {
      if (r.status === 403 && needsKey(path, opts) && !key && (await errorCode(r)) === "token_scope") {
        await askKey("Uploading or deleting a voice needs the API key itself.");
        continue;
      }
      return r;
    }
    await refused(await errorCode(r), await errorText(r));
  }
}
