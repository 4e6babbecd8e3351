// The page's shared state: the settings in use, the live figures, the list of utterances and the server's events
// (all of them readable through the test hooks, window.cbf), and the status line under Speak.

export const $ = (id) => document.getElementById(id);
export const THRESH = 0.01; // |sample| at or above this counts as audible (-40 dBFS)

export const state = {
  mode: "auto", // the toggle: auto | webrtc | ws
  transport: null, // what is in use: "webrtc" | "ws" | null
  codec: null,
  connected: false,
  connecting: false,
  session: null,
  engine: null,
  limits: null,
  voice: "",
  latency: "", // the latency control: "" (the server's default) | fastest | balanced | prosody
  speaking: false,
  bargeIn: false, // the "talk to interrupt" switch (WebRTC only): the microphone goes to the gateway
  micLive: false, // the connection in use sends the microphone
  bargeMode: null, // the gateway's answer to the page's barge_in message: "vad" | "pause" | "off"
  fallbackReason: null,
  sampleRate: null, // the AudioContext's
  wsRate: null, // the PCM rate the WebSocket asked the server for (the context's own where the server offers it)
};

export const metrics = {
  ttfaMs: null, // Speak -> first audible sample, measured here by the AnalyserNode
  serverTtfaMs: null, // done.ttfa from the server
  latencyApplied: null, // done.latency and done.first_audio_s: the preference that applied, and its budget
  bufferMs: null, // audio buffered ahead of the listener
  jitterTargetMs: null,
  underruns: null, // this utterance: WS worklet dry spells, or WebRTC concealment events after first audio
  concealmentEvents: null, // WebRTC: cumulative concealmentEvents (getStats)
  concealedSamples: null,
  stopToSilenceMs: null,
  stopWasAudible: null,
  cutInMs: null, // the latest interrupted.reaction_ms: the onset's audio arriving at the gateway -> its silence
  interruptToSilenceMs: null, // interrupted arriving here -> the last audible sample the page played (0: silent)
  rtf: null,
  audioSeconds: null,
  chunks: 0,
  level: 0, // peak of the latest analyser window
  rms: 0,
  inbound: null, // WebRTC: latest inbound-rtp audio stats (subset)
  worklet: null, // WS: latest worklet report
  history: [], // recent ttfaMs values
};

export const utterances = []; // the latest 50, oldest first
export const events = []; // the latest 300 server events, each with `at` (performance.now())

// Set when the figures or the timeline changed; the drawing loop redraws them and clears it.
export const view = { dirty: true };

export const current = () => utterances[utterances.length - 1] || null;
export const active = (u) => !u.serverDone && !u.serverCancelled && !u.failed; // the server still works on it
export const playing = (u) => !u.finished;

// The utterance record for a server utterance id: the first one sent without an id takes it.
export function recordFor(serverId) {
  if (serverId == null) return null;
  let u = utterances.find((x) => x.serverId === serverId);
  if (u) return u;
  u = utterances.find((x) => x.serverId == null && !x.failed);
  if (u) u.serverId = serverId;
  return u || null;
}

export function finishUtterance(u) {
  if (u.finished) return;
  u.finished = true;
  u.finishedAt = performance.now();
  if (!utterances.some(playing)) state.speaking = false;
  view.dirty = true;
}

export function setStatus(text, bad) {
  const el = $("speak-status");
  el.textContent = text;
  el.className = "status" + (bad ? " error" : "");
}
