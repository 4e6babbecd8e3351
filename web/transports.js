// The two transports and the choice between them: WebRTC (audio track + "control" data channel, the default) and
// the WebSocket (JSON events + binary PCM into the worklet). In auto mode a WebRTC connection that is not up within
// 4 s falls back to the WebSocket; a dropped connection reconnects. Also the WebRTC statistics (getStats): codec,
// jitter-buffer level, concealment. Server events of either transport go to the handler set by onServerEvent().
// With "talk to interrupt" on (barge.js), the WebRTC offer also sends the microphone (sendrecv).

import { $, state, metrics, utterances, current, active, finishUtterance } from "./state.js";
import { api, errorText, keyProtocols, refused } from "./api.js";
import { audio, dropRemote, lastLoudAt, loadWorklet, muteRemote, playRemote, worklet } from "./audio.js";
import { bargeAvailability, micStream, micTracks, openMic } from "./barge.js";

const WEBRTC_AUTO_TIMEOUT_MS = 4000; // auto mode: fall back to the WebSocket after this
const WEBRTC_FORCED_TIMEOUT_MS = 10000;

export let conn = null; // the connection in use: {kind, send(obj), close(), pc?, dc?, ws?, rate?}
let connectGen = 0;
let connectPromise = null;
let dropping = false; // WS: drop audio frames of cancelled utterances until `cancelled` arrives
let dropTimer = null;
let handleEvent = () => {};

// Where the server's events (JSON text, or an object) go.
export function onServerEvent(fn) {
  handleEvent = fn;
}

function setConn(kind, text) {
  $("conn-dot").className = "dot " + kind;
  $("conn-text").textContent = text;
}
function wsUrl(path) {
  const u = new URL(path, location.href);
  u.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  return u.toString();
}
function timeout(ms, what) {
  return new Promise((_, rej) => setTimeout(() => rej(new Error(`${what} did not happen within ${ms / 1000} s`)), ms));
}

// (Re)connect with the transport the toggle asks for; resolves to the connection, or null.
export function connect() {
  const gen = ++connectGen;
  disconnect();
  state.mode = $("transport").value;
  $("codec-pref").disabled = state.mode === "ws";
  bargeAvailability(null);
  state.connecting = true;
  state.connected = false;
  state.fallbackReason = null;
  setConn("wait", "connecting…");
  const p = (async () => {
    let c = null;
    if (state.mode !== "ws" && state.bargeIn) {
      setConn("wait", "opening the microphone…");
      await openMic(); // before the WebRTC timeout starts: a permission prompt may take a while
      if (gen !== connectGen) return null;
    }
    if (state.mode !== "ws") {
      setConn("wait", "connecting over WebRTC…");
      const limit = state.mode === "auto" ? WEBRTC_AUTO_TIMEOUT_MS : WEBRTC_FORCED_TIMEOUT_MS;
      const attempt = connectWebRTC(gen);
      try {
        c = await Promise.race([attempt, timeout(limit, "WebRTC connection")]);
      } catch (e) {
        attempt.then((late) => late && late.close(), () => {});
        state.fallbackReason = String(e.message || e);
        if (gen !== connectGen) return null;
        if (state.mode === "webrtc") {
          state.connecting = false;
          setConn("bad", `WebRTC failed: ${state.fallbackReason}`);
          return null;
        }
      }
    }
    if (gen !== connectGen) {
      if (c) c.close();
      return null;
    }
    if (!c) {
      setConn("wait", "connecting over WebSocket…");
      try {
        c = await connectWS(gen);
      } catch (e) {
        if (gen !== connectGen) return null;
        state.connecting = false;
        setConn("bad", `could not connect: ${e.message || e}`);
        return null;
      }
    }
    if (gen !== connectGen) {
      c.close();
      return null;
    }
    conn = c;
    state.transport = c.kind;
    state.connected = true;
    state.connecting = false;
    bargeAvailability(c);
    const fb = state.fallbackReason && c.kind === "ws" ? ` (WebRTC fell back: ${state.fallbackReason})` : "";
    setConn("ok", `connected · ${c.kind === "webrtc" ? "WebRTC" : "WebSocket"}${fb}`);
    $("transport-used").textContent = c.kind === "webrtc" ? "WebRTC" : "WebSocket";
    if (c.kind === "ws") {
      const own = audio().sampleRate;
      state.codec = `PCM s16le ${c.rate / 1000} kHz` + (c.rate === own ? "" : ` (resampled to ${own / 1000} kHz here)`);
      $("codec").textContent = state.codec;
    }
    return c;
  })();
  connectPromise = p;
  return p;
}

// The connection, once the attempt under way (if any) has settled: null if there is none.
export async function connection() {
  if (!conn) {
    if (!state.connecting) connect();
    await connectPromise;
  }
  return conn;
}

function disconnect() {
  if (conn) conn.close();
  conn = null;
  state.connected = false;
  state.transport = null;
  state.codec = null;
  $("transport-used").textContent = "–";
  $("codec").textContent = "–";
  for (const u of utterances) if (!u.finished) finishUtterance(u);
}

function lost(gen, why) {
  if (gen !== connectGen) return;
  conn = null;
  state.connected = false;
  setConn("bad", `disconnected: ${why}; reconnecting…`);
  for (const u of utterances) if (!u.finished) finishUtterance(u);
  setTimeout(() => { if (gen === connectGen) connect(); }, 1500);
}

async function connectWebRTC(gen) {
  audio();
  const pc = new RTCPeerConnection({ iceServers: [] });
  let closed = false;
  const c = {
    kind: "webrtc",
    pc,
    dc: null,
    mic: false, // the microphone is sent on this connection
    send: (obj) => c.dc.send(JSON.stringify(obj)),
    close: () => {
      closed = true;
      try { c.dc && c.dc.close(); } catch (_) { /* closed */ }
      pc.close();
      dropRemote();
    },
  };
  try {
    // Before the offer: with the microphone, the offer's audio is sendrecv (the gateway hears it); without, recvonly.
    const tracks = micTracks();
    if (tracks.length) {
      for (const t of tracks) pc.addTrack(t, micStream());
      c.mic = true;
    } else {
      pc.addTransceiver("audio", { direction: "recvonly" });
    }
    // The data channel must exist before the offer (its m=application line is in the BUNDLE group).
    const dc = pc.createDataChannel("control", { ordered: true });
    c.dc = dc;
    dc.onmessage = (e) => handleEvent(e.data);
    const gotTrack = new Promise((resolve) => {
      pc.ontrack = (e) => {
        playRemote((e.streams && e.streams[0]) || new MediaStream([e.track]));
        resolve();
      };
    });
    const dcOpen = new Promise((resolve, reject) => {
      dc.onopen = resolve;
      dc.onerror = (e) => reject(new Error(`data channel: ${e.error ? e.error.message : "error"}`));
    });
    const iceConnected = new Promise((resolve, reject) => {
      pc.onconnectionstatechange = () => {
        const s = pc.connectionState;
        if (s === "connected") resolve();
        if (s === "failed") reject(new Error("ICE/DTLS failed"));
        if ((s === "failed" || s === "closed" || s === "disconnected") && conn === c && !closed) lost(gen, `WebRTC ${s}`);
      };
    });
    await pc.setLocalDescription(await pc.createOffer());
    await new Promise((resolve) => {
      if (pc.iceGatheringState === "complete") return resolve();
      const t = setTimeout(resolve, 2000); // no trickle: send what we have after 2 s
      pc.addEventListener("icegatheringstatechange", () => {
        if (pc.iceGatheringState === "complete") { clearTimeout(t); resolve(); }
      });
    });
    const body = { sdp: pc.localDescription.sdp, type: "offer" };
    if (state.voice) body.voice = state.voice;
    const codecPref = $("codec-pref").value;
    if (codecPref) body.codec = codecPref;
    const r = await api("/v1/webrtc/offer", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    if (!r.ok) throw new Error(await errorText(r));
    const ans = await r.json();
    state.session = ans.session || null;
    await pc.setRemoteDescription({ type: "answer", sdp: ans.sdp });
    await Promise.all([iceConnected, dcOpen, gotTrack]);
    dc.onclose = () => { if (conn === c && !closed) lost(gen, "data channel closed"); };
    if (closed) return null;
    if (c.mic) c.send({ type: "barge_in", mode: "vad" }); // talking stops it, whatever the server's default
    startRtcStats(c);
    return c;
  } catch (e) {
    c.close();
    throw e;
  }
}

// The PCM rate to ask the WebSocket for: the AudioContext's own where the server offers it (`ready`'s
// formats.pcm_s16le), so that the server resamples (swresample) and the page plays the samples as they come; else the
// nearest rate offered, which the worklet then resamples (linearly) to the context's.
export function wsRate(own, offered) {
  const rates = offered && offered.length ? offered : [24000, 48000]; // a server that does not list them
  if (rates.includes(own)) return own;
  return rates.reduce((best, r) => (Math.abs(r - own) < Math.abs(best - own) ? r : best));
}

async function connectWS(gen) {
  await loadWorklet(onWorklet);
  const own = audio().sampleRate;
  worklet.port.postMessage({ type: "clear" });
  for (;;) {
    const ws = new WebSocket(wsUrl("/v1/stream"), await keyProtocols());
    ws.binaryType = "arraybuffer";
    let closed = false;
    let unauthorized = false;
    const c = {
      kind: "ws",
      ws,
      rate: null, // asked for once `ready` has said which rates the server offers
      send: (obj) => ws.send(JSON.stringify(obj)),
      close: () => {
        closed = true;
        try { ws.close(); } catch (_) { /* closed */ }
        if (worklet) worklet.port.postMessage({ type: "clear" });
      },
    };
    const ready = new Promise((resolve, reject) => {
      ws.onmessage = (e) => {
        if (typeof e.data !== "string") return onPcm(e.data);
        let msg;
        try { msg = JSON.parse(e.data); } catch (_) { return; }
        if (msg.type === "error" && ["unauthorized", "token_expired", "token_used"].includes(msg.code)) {
          unauthorized = msg;
          reject(new Error(msg.message || "unauthorized"));
          return;
        }
        if (msg.type === "ready") {
          c.rate = wsRate(own, msg.formats && msg.formats.pcm_s16le);
          state.wsRate = c.rate;
          worklet.port.postMessage({ type: "config", rate: c.rate }); // before any audio: it follows a speak
          c.send({ type: "config", format: "pcm_s16le", sample_rate: c.rate });
          resolve();
        }
        handleEvent(msg);
      };
      ws.onclose = (e) => {
        if (e.code === 4401 && !unauthorized) unauthorized = { code: "unauthorized" };
        reject(new Error(`WebSocket closed (${e.code}${e.reason ? ": " + e.reason : ""})`));
        if (conn === c && !closed) lost(gen, `WebSocket closed (${e.code})`);
      };
    });
    try {
      await Promise.race([ready, timeout(8000, "WebSocket ready")]);
      return c;
    } catch (e) {
      c.close();
      if (!unauthorized) throw e;
      await refused(unauthorized.code, unauthorized.message);
      if (gen !== connectGen) throw e;
    }
  }
}

function onPcm(buf) {
  if (dropping || !worklet) return;
  const i16 = new Int16Array(buf);
  const f32 = new Float32Array(i16.length);
  for (let i = 0; i < i16.length; i++) f32[i] = i16[i] / 32768;
  worklet.port.postMessage(f32, [f32.buffer]);
  const u = current();
  if (u && u.firstBytesAt == null && !u.stoppedAt) u.firstBytesAt = performance.now();
}

function onWorklet(m) {
  if (m.type !== "level") return;
  metrics.worklet = m;
  if (state.transport !== "ws") return;
  metrics.bufferMs = Math.round(m.buffered * 1000);
  const u = current();
  if (u && u.underrunBase != null) metrics.underruns = m.underruns - u.underrunBase;
  if (u && !u.finished && u.serverDone && !m.playing && m.buffered === 0) finishUtterance(u);
}

// Stop: ask the server to cancel, and silence what is already here. `expectCancelled`: the server still works on an
// utterance, so the WebSocket's late audio frames are dropped until its `cancelled` arrives (2 s at most).
export function cancelAll(expectCancelled) {
  if (!conn) return;
  try { conn.send({ type: "cancel" }); } catch (_) { /* closed */ }
  if (conn.kind === "webrtc") muteRemote();
  if (conn.kind === "ws") {
    if (worklet) worklet.port.postMessage({ type: "clear" });
    if (expectCancelled) {
      dropping = true;
      clearTimeout(dropTimer);
      dropTimer = setTimeout(stopDropping, 2000);
    }
  }
}

// The server acknowledged a cancel: once nothing is left in flight, audio frames are played again.
export function cancelled() {
  if (dropping && !utterances.some(active)) stopDropping();
}

function stopDropping() {
  dropping = false;
  clearTimeout(dropTimer);
}

// The utterance has been sent completely: the WebSocket's player then knows running dry is its end.
export function utteranceSent() {
  if (state.transport === "ws" && worklet) worklet.port.postMessage({ type: "end" });
}

// WebRTC statistics: codec, jitter-buffer level, concealment.
let statsTimer = null;
let lastJb = null;
function startRtcStats(c) {
  clearInterval(statsTimer);
  lastJb = null;
  statsTimer = setInterval(() => { if (conn === c) rtcStats(); else clearInterval(statsTimer); }, 100);
  rtcStats();
}

// One getStats() poll; resolves to the inbound audio figures (metrics.inbound), or undefined.
export async function rtcStats() {
  if (!conn || conn.kind !== "webrtc") return;
  const report = await conn.pc.getStats();
  let inbound = null;
  const codecs = {};
  report.forEach((s) => {
    if (s.type === "inbound-rtp" && (s.kind === "audio" || s.mediaType === "audio")) inbound = s;
    if (s.type === "codec") codecs[s.id] = s;
  });
  if (!inbound) return;
  const codec = codecs[inbound.codecId];
  if (codec) {
    const name = codec.mimeType.replace(/^audio\//i, "");
    state.codec = `${name} ${codec.clockRate / 1000} kHz${codec.channels ? " · " + codec.channels + " ch" : ""}`;
    $("codec").textContent = state.codec;
  }
  metrics.inbound = {
    packetsReceived: inbound.packetsReceived,
    packetsLost: inbound.packetsLost,
    jitter: inbound.jitter,
    jitterBufferDelay: inbound.jitterBufferDelay,
    jitterBufferTargetDelay: inbound.jitterBufferTargetDelay,
    jitterBufferEmittedCount: inbound.jitterBufferEmittedCount,
    totalSamplesReceived: inbound.totalSamplesReceived,
    concealedSamples: inbound.concealedSamples,
    concealmentEvents: inbound.concealmentEvents,
    totalAudioEnergy: inbound.totalAudioEnergy,
    audioLevel: inbound.audioLevel,
    codecId: inbound.codecId,
    mimeType: codec ? codec.mimeType : null,
  };
  metrics.concealmentEvents = inbound.concealmentEvents;
  metrics.concealedSamples = inbound.concealedSamples;
  // Buffer ahead: mean jitter-buffer delay of the samples emitted since the previous poll.
  const jb = { d: inbound.jitterBufferDelay, t: inbound.jitterBufferTargetDelay, n: inbound.jitterBufferEmittedCount };
  if (lastJb && jb.n > lastJb.n) {
    metrics.bufferMs = Math.round(((jb.d - lastJb.d) / (jb.n - lastJb.n)) * 1000);
    if (jb.t != null && lastJb.t != null) metrics.jitterTargetMs = Math.round(((jb.t - lastJb.t) / (jb.n - lastJb.n)) * 1000);
  }
  lastJb = jb;
  const u = current();
  if (u && u.concealBase != null && !u.finished) {
    // The utterance's own count: from its first audio to its end (then it stays as it was).
    u.concealmentEvents = inbound.concealmentEvents - u.concealBase;
    metrics.underruns = u.concealmentEvents;
  }
  if (u && !u.finished && u.serverDone && u.firstAudible != null) {
    const end = u.firstAudible + u.serverDone.audio_seconds * 1000 + 150;
    if (performance.now() > end && performance.now() - lastLoudAt > 150) finishUtterance(u);
  }
  return metrics.inbound;
}
