// The audio graph and the onset meter. Whatever plays (the WebSocket's PCM worklet, or the WebRTC stream) also
// feeds one AnalyserNode; polling it every 5 ms (and every frame) finds each utterance's first audible sample, the
// level, and how long audio went on after Stop (or after the gateway said the caller interrupted it).

import { $, THRESH, state, metrics, current } from "./state.js";

export const STOP_WINDOW_MS = 1500; // how long after Stop the page watches for audio

let ctx = null;
let analyser = null;
let sink = null; // analyser -> zero gain -> destination, so the analyser is always pulled
let workletLoading = null;
let rtcSource = null;
const remoteAudio = $("remote-audio");

export let worklet = null; // the WebSocket's PCM player (pcm-worklet.js), once loaded
export let lastLoudAt = -1e9; // performance.now() when an audible sample was last seen

let tbuf = null;
const watches = new Map(); // what -> {t0, lastLoud, until, wasAudible, done}: silence watched for after t0
let unmuteWhenQuiet = false;

// The AudioContext, made on first use.
export function audio() {
  if (ctx) return ctx;
  ctx = new AudioContext({ latencyHint: "interactive" });
  analyser = ctx.createAnalyser();
  analyser.fftSize = 512;
  analyser.smoothingTimeConstant = 0;
  sink = ctx.createGain();
  sink.gain.value = 0;
  analyser.connect(sink).connect(ctx.destination);
  state.sampleRate = ctx.sampleRate;
  return ctx;
}

// Load the PCM player once; `onMessage` gets its reports.
export async function loadWorklet(onMessage) {
  audio();
  if (!workletLoading) {
    workletLoading = ctx.audioWorklet.addModule("pcm-worklet.js").then(() => {
      worklet = new AudioWorkletNode(ctx, "pcm-player", { numberOfInputs: 0, outputChannelCount: [1] });
      worklet.connect(ctx.destination);
      worklet.connect(analyser);
      worklet.port.onmessage = (e) => onMessage(e.data);
    });
  }
  return workletLoading;
}

export function resumeAudio() {
  audio();
  if (ctx.state !== "running") ctx.resume().catch(() => {});
  if (remoteAudio.srcObject && remoteAudio.paused) remoteAudio.play().catch(() => {});
}

// WebRTC: play the remote stream and feed it to the analyser.
export function playRemote(stream) {
  remoteAudio.srcObject = stream; // Chromium only feeds WebAudio from a remote stream an element plays
  remoteAudio.play().catch(() => {});
  if (rtcSource) rtcSource.disconnect();
  rtcSource = ctx.createMediaStreamSource(stream);
  rtcSource.connect(analyser);
}

export function dropRemote() {
  if (rtcSource) { rtcSource.disconnect(); rtcSource = null; }
  remoteAudio.srcObject = null;
}

// WebRTC Stop: what the listener hears stops now; the analyser still watches the stream itself.
export function muteRemote() {
  remoteAudio.muted = true;
  unmuteWhenQuiet = false;
}

// After a Stop: unmute once the old stream has gone quiet, so no stale tail is heard.
export function unmuteOnceQuiet() {
  unmuteWhenQuiet = true;
}

// From t0, how long audio goes on: after STOP_WINDOW_MS, done(ms from t0 to the last audible sample seen, or 0;
// whether audio was playing at t0). One watch of each kind `what` at a time: a new one replaces the old.
export function watchSilence(what, t0, done) {
  watches.set(what, { t0, lastLoud: t0, until: t0 + STOP_WINDOW_MS, wasAudible: t0 - lastLoudAt < 300, done });
}

// Stop was pressed at t0: measure how long audio goes on (metrics.stopToSilenceMs, after STOP_WINDOW_MS).
export function watchStop(t0) {
  metrics.stopToSilenceMs = null;
  watchSilence("stop", t0, (ms, wasAudible) => {
    metrics.stopToSilenceMs = ms;
    metrics.stopWasAudible = wasAudible;
  });
}

// One look at the analyser; `onFirstAudio(u)` when the current utterance's first audible sample shows up.
function poll(onFirstAudio) {
  if (!analyser) return;
  if (!tbuf || tbuf.length !== analyser.fftSize) tbuf = new Float32Array(analyser.fftSize);
  analyser.getFloatTimeDomainData(tbuf);
  const now = performance.now();
  const n = tbuf.length;
  let peak = 0, sum = 0, first = -1;
  for (let i = 0; i < n; i++) {
    const a = Math.abs(tbuf[i]);
    sum += a * a;
    if (a > peak) peak = a;
    if (a >= THRESH && first < 0) first = i;
  }
  metrics.level = peak;
  metrics.rms = Math.sqrt(sum / n);
  const cu = current();
  if (cu && !cu.armed && now - lastLoudAt > 40) cu.armed = true;
  if (first >= 0) {
    // Times are when the page saw the sample (polled every 5 ms and every frame): never earlier than the truth.
    lastLoudAt = now;
    const u = current();
    if (u && u.armed && !u.queued && !u.stoppedAt && u.firstAudible == null) {
      u.firstAudible = now;
      onFirstAudio(u);
    }
    if (u && u.firstAudible != null && !u.stoppedAt) u.peak = Math.max(u.peak || 0, peak);
    for (const w of watches.values()) w.lastLoud = now;
  }
  if (unmuteWhenQuiet && remoteAudio.muted && now - lastLoudAt > 40) remoteAudio.muted = false;
  if (!remoteAudio.muted) unmuteWhenQuiet = false;
  for (const [what, w] of watches) {
    if (now < w.until) continue;
    watches.delete(what);
    w.done(Math.round(Math.max(0, w.lastLoud - w.t0)), w.wasAudible);
  }
}

// Poll every 5 ms and on every animation frame, after which `onFrame` draws.
export function startMeter({ onFirstAudio, onFrame }) {
  setInterval(() => poll(onFirstAudio), 5);
  const frame = () => {
    poll(onFirstAudio);
    onFrame();
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
}
