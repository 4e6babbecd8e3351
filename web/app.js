// chatterbox-fast audition page: the wiring. Native ES modules, no build step, nothing loaded from elsewhere.
// Protocol: docs/protocol.md. Test hooks: window.cbf.
//
//   state.js       shared state, figures, utterance records, the status line
//   api.js         API key (asked on 401, kept per tab) and the fetch helper
//   audio.js       audio graph and the onset meter (first audible sample, level, Stop -> silence)
//   transports.js  WebRTC (default) and WebSocket (fallback or chosen), reconnects, WebRTC statistics
//   speech.js      Speak / Stop and the server's events about utterances
//   barge.js       "talk to interrupt": the microphone over WebRTC, speech heard, barge-in and its figures
//   meters.js      drawing: meters, figures, TTFA history, chunk timeline
//   voices.js      voice picker, delete, clone from an upload or the microphone
//   pcm-worklet.js the WebSocket's PCM player (an AudioWorklet, loaded by audio.js)

import { $, THRESH, state, metrics, utterances, events } from "./state.js";
import { lastLoudAt, resumeAudio, startMeter } from "./audio.js";
import { connect, onServerEvent, rtcStats } from "./transports.js";
import { finishUnheard, onEvent, onFirstAudio, speak, stop } from "./speech.js";
import { drawMeters } from "./meters.js";
import { setBarge } from "./barge.js";
import { VOICE_STORE, loadVoices, voices, wireVoices } from "./voices.js";

const MODE_STORE = "cbf.transport";
const CODEC_STORE = "cbf.codec";

window.cbf = {
  state, metrics, utterances, events, speak, stop, connect, loadVoices, THRESH,
  audibleWithin: (ms) => performance.now() - lastLoudAt <= ms, // was an audible sample seen in the last `ms`?
  rtcStats: () => rtcStats(),
  get voices() { return voices; },
};

onServerEvent(onEvent);
startMeter({ onFirstAudio, onFrame: drawMeters });
setInterval(finishUnheard, 100);
wireVoices();

$("speak").addEventListener("click", () => speak());
$("latency").addEventListener("change", (e) => { state.latency = e.target.value; });
$("stop").addEventListener("click", () => stop());
$("text").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    speak();
  }
});
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && !$("key-form").contains(e.target)) stop();
});
$("codec-pref").addEventListener("change", () => {
  sessionStorage.setItem(CODEC_STORE, $("codec-pref").value);
  if (state.mode !== "ws") connect();
});
$("barge").addEventListener("change", () => {
  setBarge($("barge").checked); // on: the microphone is opened and sent on a new WebRTC connection; off: closed
  if (state.mode !== "ws") connect();
});
$("transport").addEventListener("change", () => {
  sessionStorage.setItem(MODE_STORE, $("transport").value);
  connect();
});
// Any gesture lets the AudioContext run (autoplay policies).
document.addEventListener("pointerdown", resumeAudio, { once: true });
document.addEventListener("keydown", resumeAudio, { once: true });

async function health() {
  try {
    const r = await fetch("/health");
    const j = await r.json();
    const e = j.engine || {};
    $("health").textContent = `Server ${j.status}${e.name || e.engine ? " · engine " + (e.name || e.engine) : ""}${j.watermark ? " · watermark on" : ""}.`;
  } catch (_) { /* optional */ }
}

async function start() {
  const params = new URLSearchParams(location.search);
  const mode = params.get("transport") || sessionStorage.getItem(MODE_STORE);
  if (mode && ["auto", "webrtc", "ws"].includes(mode)) $("transport").value = mode;
  const codec = params.get("codec") || sessionStorage.getItem(CODEC_STORE);
  if (codec && ["opus", "pcmu", "pcma"].includes(codec)) $("codec-pref").value = codec;
  state.voice = sessionStorage.getItem(VOICE_STORE) || "";
  health();
  await loadVoices();
  connect();
}
start();
