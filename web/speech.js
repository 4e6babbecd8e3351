// Speak and Stop, and the server's events about utterances (ready, chunk, done, cancelled, error), over whichever
// transport is connected. Each Speak makes an utterance record (cbf.utterances) that collects its chunks, its first
// audible sample, the server's figures and its underruns. The caller's side (speech heard, barge-in): barge.js.

import { $, state, metrics, utterances, events, view, current, active, playing, recordFor, finishUtterance,
  setStatus } from "./state.js";
import { lastLoudAt, resumeAudio, unmuteOnceQuiet, watchStop } from "./audio.js";
import { cancelAll, cancelled, conn, connection, rtcStats, utteranceSent } from "./transports.js";
import { bargeSpeak, onCallerEvent } from "./barge.js";

let nextLocalId = 1;

// The analyser saw the utterance's first audible sample (u.firstAudible): the time to first audio, and the bases
// its underruns are counted from.
export function onFirstAudio(u) {
  u.ttfaMs = u.firstAudible - u.t0;
  metrics.ttfaMs = Math.round(u.ttfaMs);
  metrics.history.push(metrics.ttfaMs);
  if (metrics.history.length > 24) metrics.history.shift();
  if (state.transport === "webrtc") {
    // Concealment counted from here on. The periodic snapshot may be 100 ms old (it would count events from before
    // the first audio, such as the jitter buffer's start-up), so a fresh one replaces it.
    u.concealBase = metrics.concealmentEvents;
    rtcStats().then((inbound) => {
      if (inbound) u.concealBase = inbound.concealmentEvents;
    });
  } else {
    u.underrunBase = metrics.worklet ? metrics.worklet.underruns : 0;
  }
  setStatus(`first audio after ${metrics.ttfaMs} ms`);
  view.dirty = true;
}

// Utterances whose end the audio path cannot tell (no first audio seen) still finish.
export function finishUnheard() {
  const now = performance.now();
  for (const u of utterances) {
    if (u.finished || !u.serverDone) continue;
    const start = u.firstAudible != null ? u.firstAudible : u.doneAt;
    if (now > start + u.serverDone.audio_seconds * 1000 + 1500) finishUtterance(u);
  }
}

// A server event (data channel or WebSocket), as JSON text or an object.
export function onEvent(data) {
  let msg = data;
  if (typeof data === "string") {
    try { msg = JSON.parse(data); } catch (_) { return; }
  }
  if (!msg || typeof msg !== "object") return;
  const now = performance.now();
  events.push({ at: now, ...msg });
  if (events.length > 300) events.shift();
  switch (msg.type) {
    case "ready":
      state.session = msg.session || state.session;
      state.engine = msg.engine || null;
      state.limits = msg.limits || null;
      if (msg.engine) {
        const e = msg.engine;
        $("engine").textContent = [e.name || e.engine, e.device, e.dtype].filter(Boolean).join(" · ") + (e.watermark ? " · watermarked" : "");
      }
      break;
    case "chunk": {
      const u = recordFor(msg.utterance);
      if (!u || u.stoppedAt) break;
      u.chunks.push({
        seq: msg.seq, text: msg.text || "", offset: +msg.offset || 0, duration: +msg.duration || 0,
        genTime: +msg.gen_time || 0, recvAt: now,
      });
      metrics.chunks = u.chunks.length;
      view.dirty = true;
      break;
    }
    case "done": {
      const u = recordFor(msg.utterance);
      if (!u) break;
      u.serverDone = msg;
      u.doneAt = now;
      if (u.stoppedAt) break;
      metrics.serverTtfaMs = msg.ttfa != null ? Math.round(msg.ttfa * 1000) : null;
      metrics.latencyApplied = msg.latency != null ? `${msg.latency} (${msg.first_audio_s} s)` : null;
      metrics.rtf = msg.rtf;
      metrics.audioSeconds = msg.audio_seconds;
      utteranceSent();
      view.dirty = true;
      break;
    }
    case "cancelled": {
      const u = recordFor(msg.utterance);
      if (u) u.serverCancelled = true;
      cancelled();
      break;
    }
    case "error": {
      let u = msg.utterance != null ? recordFor(msg.utterance) : null;
      if (!u) {
        const c = current();
        if (c && c.serverId == null && !c.failed && !c.chunks.length) u = c;
      }
      if (u) {
        u.failed = true;
        u.error = msg;
        finishUtterance(u);
      }
      setStatus(`server: ${msg.message || msg.code}`, true);
      break;
    }
    default:
      onCallerEvent(msg, now);
      break;
  }
}

// Say the text box's text; resolves to the new utterance record (null if nothing was sent).
export async function speak() {
  const text = $("text").value.trim();
  if (!text) {
    setStatus("type something to say", true);
    return null;
  }
  const t0 = performance.now();
  resumeAudio();
  unmuteOnceQuiet(); // after a Stop, no stale tail of the old stream is heard
  bargeSpeak();
  if (!conn) {
    setStatus("waiting for the connection…");
    if (!(await connection())) {
      setStatus("not connected", true);
      return null;
    }
  }
  const queued = utterances.some(playing);
  // Right after a Stop the old stream may still be draining: the onset counts only after it has gone quiet.
  const armed = performance.now() - lastLoudAt > 40;
  const u = {
    id: nextLocalId++, serverId: null, text, voice: state.voice, transport: conn.kind, t0, queued, armed,
    firstAudible: null, ttfaMs: null, chunks: [], serverDone: null, serverCancelled: false, finished: false,
    stoppedAt: null, concealBase: null, concealmentEvents: null, underrunBase: null,
  };
  utterances.push(u);
  if (utterances.length > 50) utterances.shift();
  state.speaking = true;
  metrics.ttfaMs = null;
  metrics.serverTtfaMs = null;
  metrics.latencyApplied = null;
  metrics.underruns = null;
  metrics.rtf = null;
  metrics.audioSeconds = null;
  metrics.chunks = 0;
  const msg = { type: "speak", text };
  if (state.voice) msg.voice = state.voice;
  if (state.latency) msg.latency = state.latency;
  try {
    conn.send(msg);
  } catch (e) {
    u.failed = true;
    finishUtterance(u);
    setStatus(`could not send: ${e.message}`, true);
    return u;
  }
  setStatus(queued ? "queued behind the previous utterance" : "speaking…");
  view.dirty = true;
  return u;
}

// Stop everything now: cancel on the server, silence here, and measure how long audio still went on.
export function stop() {
  const t0 = performance.now();
  cancelAll(utterances.some((u) => active(u) && !u.failed));
  watchStop(t0);
  for (const u of utterances) {
    if (!u.finished) {
      u.stoppedAt = t0;
      finishUtterance(u);
    }
  }
  state.speaking = false;
  setStatus("stopped");
}
