// chatterbox-fast audition page. Plain script, no build step, no external resources.
// Protocol: docs/protocol.md. Test hooks: window.cbf.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const KEY_STORE = "cbf.api_key";
  const VOICE_STORE = "cbf.voice";
  const MODE_STORE = "cbf.transport";
  const CODEC_STORE = "cbf.codec";
  const THRESH = 0.01; // |sample| at or above this counts as audible (-40 dBFS)
  const WEBRTC_AUTO_TIMEOUT_MS = 4000; // auto mode: fall back to the WebSocket after this
  const WEBRTC_FORCED_TIMEOUT_MS = 10000;
  const STOP_WINDOW_MS = 1500; // how long after Stop the page watches for audio

  // ---------------------------------------------------------------- state and test hooks
  const state = {
    mode: "auto", // the toggle: auto | webrtc | ws
    transport: null, // what is in use: "webrtc" | "ws" | null
    codec: null,
    connected: false,
    connecting: false,
    session: null,
    engine: null,
    limits: null,
    voice: "",
    speaking: false,
    fallbackReason: null,
    sampleRate: null,
  };
  const metrics = {
    ttfaMs: null, // Speak -> first audible sample, measured here by the AnalyserNode
    serverTtfaMs: null, // done.ttfa from the server
    bufferMs: null, // audio buffered ahead of the listener
    jitterTargetMs: null,
    underruns: null, // this utterance: WS worklet dry spells, or WebRTC concealment events after first audio
    concealmentEvents: null, // WebRTC: cumulative concealmentEvents (getStats)
    concealedSamples: null,
    stopToSilenceMs: null,
    stopWasAudible: null,
    rtf: null,
    audioSeconds: null,
    chunks: 0,
    level: 0, // peak of the latest analyser window
    rms: 0,
    inbound: null, // WebRTC: latest inbound-rtp audio stats (subset)
    worklet: null, // WS: latest worklet report
    history: [], // recent ttfaMs values
  };
  const utterances = [];
  const events = [];
  const cbf = {
    state, metrics, utterances, events, speak, stop, connect, loadVoices, THRESH,
    audibleWithin: (ms) => performance.now() - lastLoudAt <= ms, // was an audible sample seen in the last `ms`?
    rtcStats: () => rtcStats(),
  };
  window.cbf = cbf;

  // ---------------------------------------------------------------- API key (401 -> ask once, keep per tab)
  const apiKey = () => sessionStorage.getItem(KEY_STORE) || "";
  function withKey(url) {
    const u = new URL(url, location.href);
    const k = apiKey();
    if (k) u.searchParams.set("api_key", k);
    return u.toString();
  }
  let keyWait = null;
  function askKey(message) {
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
  async function errorText(r) {
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
  async function api(path, opts = {}) {
    for (;;) {
      const r = await fetch(withKey(path), opts);
      if (r.status !== 401) return r;
      const msg = apiKey() ? `That key was refused: ${await errorText(r)}` : "";
      if (apiKey()) sessionStorage.removeItem(KEY_STORE);
      await askKey(msg);
    }
  }

  // ---------------------------------------------------------------- audio graph and the onset meter
  let ctx = null;
  let analyser = null;
  let sink = null; // analyser -> zero gain -> destination, so the analyser is always pulled
  let worklet = null;
  let workletLoading = null;
  let rtcSource = null;
  const remoteAudio = $("remote-audio");

  function audio() {
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
  async function loadWorklet() {
    audio();
    if (!workletLoading) {
      workletLoading = ctx.audioWorklet.addModule("pcm-worklet.js").then(() => {
        worklet = new AudioWorkletNode(ctx, "pcm-player", { numberOfInputs: 0, outputChannelCount: [1] });
        worklet.connect(ctx.destination);
        worklet.connect(analyser);
        worklet.port.onmessage = (e) => onWorklet(e.data);
      });
    }
    return workletLoading;
  }
  function resumeAudio() {
    audio();
    if (ctx.state !== "running") ctx.resume().catch(() => {});
    if (remoteAudio.srcObject && remoteAudio.paused) remoteAudio.play().catch(() => {});
  }

  let tbuf = null;
  let stopWatch = null; // {t0, lastLoud, until, wasAudible}
  let lastLoudAt = -1e9;
  let unmuteWhenQuiet = false;
  function poll() {
    if (!analyser) return;
    if (!tbuf || tbuf.length !== analyser.fftSize) tbuf = new Float32Array(analyser.fftSize);
    analyser.getFloatTimeDomainData(tbuf);
    const now = performance.now();
    const n = tbuf.length;
    const msPer = 1000 / ctx.sampleRate;
    let peak = 0, sum = 0, first = -1, last = -1;
    for (let i = 0; i < n; i++) {
      const a = Math.abs(tbuf[i]);
      sum += a * a;
      if (a > peak) peak = a;
      if (a >= THRESH) {
        if (first < 0) first = i;
        last = i;
      }
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
      if (stopWatch) stopWatch.lastLoud = now;
    }
    if (unmuteWhenQuiet && remoteAudio.muted && now - lastLoudAt > 40) remoteAudio.muted = false;
    if (!remoteAudio.muted) unmuteWhenQuiet = false;
    if (stopWatch && now >= stopWatch.until) {
      const ms = Math.max(0, stopWatch.lastLoud - stopWatch.t0);
      metrics.stopToSilenceMs = Math.round(ms);
      metrics.stopWasAudible = stopWatch.wasAudible;
      stopWatch = null;
    }
  }
  setInterval(poll, 5);

  // Utterances whose end the audio path cannot tell (no first audio seen) still finish.
  setInterval(() => {
    const now = performance.now();
    for (const u of utterances) {
      if (u.finished || !u.serverDone) continue;
      const start = u.firstAudible != null ? u.firstAudible : u.doneAt;
      if (now > start + u.serverDone.audio_seconds * 1000 + 1500) finishUtterance(u);
    }
  }, 100);
  function frame() {
    poll();
    drawMeters();
    requestAnimationFrame(frame);
  }
  requestAnimationFrame(frame);

  // ---------------------------------------------------------------- utterances
  let nextLocalId = 1;
  const current = () => utterances[utterances.length - 1] || null;
  const active = (u) => !u.serverDone && !u.serverCancelled && !u.failed;
  const playing = (u) => !u.finished;

  function recordFor(serverId) {
    if (serverId == null) return null;
    let u = utterances.find((x) => x.serverId === serverId);
    if (u) return u;
    u = utterances.find((x) => x.serverId == null && !x.failed);
    if (u) u.serverId = serverId;
    return u || null;
  }

  function onFirstAudio(u) {
    u.ttfaMs = u.firstAudible - u.t0;
    metrics.ttfaMs = Math.round(u.ttfaMs);
    metrics.history.push(metrics.ttfaMs);
    if (metrics.history.length > 24) metrics.history.shift();
    if (state.transport === "webrtc") {
      // Concealment counted from here on; take a fresh snapshot (the periodic one may be 100 ms old).
      u.concealBase = metrics.concealmentEvents;
      rtcStats().then(() => {
        if (u.concealBase == null || metrics.concealmentEvents < u.concealBase) u.concealBase = metrics.concealmentEvents;
      });
    } else {
      u.underrunBase = metrics.worklet ? metrics.worklet.underruns : 0;
    }
    setStatus(`first audio after ${metrics.ttfaMs} ms`);
    dirty = true;
  }

  function finishUtterance(u) {
    if (u.finished) return;
    u.finished = true;
    u.finishedAt = performance.now();
    if (!utterances.some(playing)) state.speaking = false;
    dirty = true;
  }

  // ---------------------------------------------------------------- transports
  let conn = null; // {kind, send(obj), close(), pc?, ws?}
  let connectGen = 0;
  let connectPromise = null;
  let dropping = false; // WS: drop audio frames of cancelled utterances until `cancelled` arrives
  let dropTimer = null;

  function setConn(kind, text) {
    $("conn-dot").className = "dot " + kind;
    $("conn-text").textContent = text;
  }
  function wsUrl(path) {
    const u = new URL(path, location.href);
    u.protocol = location.protocol === "https:" ? "wss:" : "ws:";
    return withKey(u.toString());
  }
  function timeout(ms, what) {
    return new Promise((_, rej) => setTimeout(() => rej(new Error(`${what} did not happen within ${ms / 1000} s`)), ms));
  }

  function connect() {
    const gen = ++connectGen;
    disconnect();
    state.mode = $("transport").value;
    $("codec-pref").disabled = state.mode === "ws";
    state.connecting = true;
    state.connected = false;
    state.fallbackReason = null;
    setConn("wait", "connecting…");
    const p = (async () => {
      let c = null;
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
      const fb = state.fallbackReason && c.kind === "ws" ? ` (WebRTC fell back: ${state.fallbackReason})` : "";
      setConn("ok", `connected · ${c.kind === "webrtc" ? "WebRTC" : "WebSocket"}${fb}`);
      $("transport-used").textContent = c.kind === "webrtc" ? "WebRTC" : "WebSocket";
      if (c.kind === "ws") {
        state.codec = `PCM s16le ${c.rate / 1000} kHz`;
        $("codec").textContent = state.codec;
      }
      return c;
    })();
    connectPromise = p;
    return p;
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
      send: (obj) => c.dc.send(JSON.stringify(obj)),
      close: () => {
        closed = true;
        try { c.dc && c.dc.close(); } catch (_) { /* closed */ }
        pc.close();
        if (rtcSource) { rtcSource.disconnect(); rtcSource = null; }
        remoteAudio.srcObject = null;
      },
    };
    try {
      pc.addTransceiver("audio", { direction: "recvonly" });
      // The data channel must exist before the offer (its m=application line is in the BUNDLE group).
      const dc = pc.createDataChannel("control", { ordered: true });
      c.dc = dc;
      dc.onmessage = (e) => onEvent(e.data);
      const gotTrack = new Promise((resolve) => {
        pc.ontrack = (e) => {
          const stream = (e.streams && e.streams[0]) || new MediaStream([e.track]);
          remoteAudio.srcObject = stream; // Chromium only feeds WebAudio from a remote stream an element plays
          remoteAudio.play().catch(() => {});
          if (rtcSource) rtcSource.disconnect();
          rtcSource = ctx.createMediaStreamSource(stream);
          rtcSource.connect(analyser);
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
      startRtcStats(c);
      return c;
    } catch (e) {
      c.close();
      throw e;
    }
  }

  async function connectWS(gen) {
    await loadWorklet();
    const rate = ctx.sampleRate >= 44100 ? 48000 : 24000;
    worklet.port.postMessage({ type: "config", rate });
    worklet.port.postMessage({ type: "clear" });
    for (;;) {
      const ws = new WebSocket(wsUrl("/v1/stream"));
      ws.binaryType = "arraybuffer";
      let closed = false;
      let unauthorized = false;
      const c = {
        kind: "ws",
        ws,
        rate,
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
          if (msg.type === "error" && msg.code === "unauthorized") {
            unauthorized = true;
            reject(new Error(msg.message || "unauthorized"));
            return;
          }
          if (msg.type === "ready") resolve();
          onEvent(msg);
        };
        ws.onclose = (e) => {
          if (e.code === 4401) unauthorized = true;
          reject(new Error(`WebSocket closed (${e.code}${e.reason ? ": " + e.reason : ""})`));
          if (conn === c && !closed) lost(gen, `WebSocket closed (${e.code})`);
        };
        ws.onopen = () => c.send({ type: "config", format: "pcm_s16le", sample_rate: rate });
      });
      try {
        await Promise.race([ready, timeout(8000, "WebSocket ready")]);
        return c;
      } catch (e) {
        c.close();
        if (!unauthorized) throw e;
        if (apiKey()) sessionStorage.removeItem(KEY_STORE);
        await askKey(apiKey() ? "" : "This server needs an API key.");
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

  // WebRTC statistics: codec, jitter-buffer level, concealment.
  let statsTimer = null;
  let lastJb = null;
  function startRtcStats(c) {
    clearInterval(statsTimer);
    lastJb = null;
    statsTimer = setInterval(() => { if (conn === c) rtcStats(); else clearInterval(statsTimer); }, 100);
    rtcStats();
  }
  async function rtcStats() {
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
    if (u && u.concealBase != null) {
      u.concealmentEvents = inbound.concealmentEvents - u.concealBase;
      metrics.underruns = u.concealmentEvents;
    }
    if (u && !u.finished && u.serverDone && u.firstAudible != null) {
      const end = u.firstAudible + u.serverDone.audio_seconds * 1000 + 150;
      if (performance.now() > end && performance.now() - lastLoudAt > 150) finishUtterance(u);
    }
  }

  // ---------------------------------------------------------------- server events (data channel or WebSocket)
  function onEvent(data) {
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
        dirty = true;
        break;
      }
      case "done": {
        const u = recordFor(msg.utterance);
        if (!u) break;
        u.serverDone = msg;
        u.doneAt = now;
        if (u.stoppedAt) break;
        metrics.serverTtfaMs = msg.ttfa != null ? Math.round(msg.ttfa * 1000) : null;
        metrics.rtf = msg.rtf;
        metrics.audioSeconds = msg.audio_seconds;
        if (state.transport === "ws" && worklet) worklet.port.postMessage({ type: "end" });
        dirty = true;
        break;
      }
      case "cancelled": {
        const u = recordFor(msg.utterance);
        if (u) u.serverCancelled = true;
        if (dropping && !utterances.some(active)) stopDropping();
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
        break;
    }
  }

  function stopDropping() {
    dropping = false;
    clearTimeout(dropTimer);
  }

  // ---------------------------------------------------------------- Speak / Stop
  async function speak() {
    const text = $("text").value.trim();
    if (!text) {
      setStatus("type something to say", true);
      return null;
    }
    const t0 = performance.now();
    resumeAudio();
    unmuteWhenQuiet = true; // after a Stop: unmute once the old stream has gone quiet, so no stale tail is heard
    if (!conn) {
      if (!state.connecting) connect();
      setStatus("waiting for the connection…");
      await connectPromise;
      if (!conn) {
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
    metrics.underruns = null;
    metrics.rtf = null;
    metrics.audioSeconds = null;
    metrics.chunks = 0;
    const msg = { type: "speak", text };
    if (state.voice) msg.voice = state.voice;
    try {
      conn.send(msg);
    } catch (e) {
      u.failed = true;
      finishUtterance(u);
      setStatus(`could not send: ${e.message}`, true);
      return u;
    }
    setStatus(queued ? "queued behind the previous utterance" : "speaking…");
    dirty = true;
    return u;
  }

  function stop() {
    const t0 = performance.now();
    const anyServer = utterances.some((u) => active(u) && !u.failed);
    if (conn) {
      try { conn.send({ type: "cancel" }); } catch (_) { /* closed */ }
    }
    if (conn && conn.kind === "webrtc") {
      // What the listener hears stops now; the analyser still watches the stream itself (server-side stop).
      remoteAudio.muted = true;
      unmuteWhenQuiet = false;
    }
    if (conn && conn.kind === "ws") {
      if (worklet) worklet.port.postMessage({ type: "clear" });
      if (anyServer) {
        dropping = true;
        clearTimeout(dropTimer);
        dropTimer = setTimeout(stopDropping, 2000);
      }
    }
    const wasAudible = t0 - lastLoudAt < 300;
    stopWatch = { t0, lastLoud: t0, until: t0 + STOP_WINDOW_MS, wasAudible };
    metrics.stopToSilenceMs = null;
    for (const u of utterances) {
      if (!u.finished) {
        u.stoppedAt = t0;
        finishUtterance(u);
      }
    }
    state.speaking = false;
    setStatus("stopped");
  }

  // ---------------------------------------------------------------- voices
  const voiceSel = $("voice");
  async function loadVoices(select) {
    let list = [];
    try {
      const r = await api("/v1/voices");
      if (!r.ok) throw new Error(await errorText(r));
      list = (await r.json()).voices || [];
    } catch (e) {
      setVoiceStatus(`could not list voices: ${e.message}`, true);
      return [];
    }
    const want = select !== undefined ? select : state.voice;
    voiceSel.textContent = "";
    const names = list.map((v) => v.name);
    if (!names.includes("default")) voiceSel.append(new Option("server default", ""));
    for (const v of list) {
      const bits = [v.kind, v.duration_s != null ? `${(+v.duration_s).toFixed(1)} s` : null].filter(Boolean);
      voiceSel.append(new Option(bits.length ? `${v.name} (${bits.join(", ")})` : v.name, v.name));
    }
    voiceSel.value = names.includes(want) ? want : voiceSel.options[0] ? voiceSel.options[0].value : "";
    state.voice = voiceSel.value;
    cbf.voices = list;
    return list;
  }
  voiceSel.addEventListener("change", () => {
    state.voice = voiceSel.value;
    sessionStorage.setItem(VOICE_STORE, state.voice);
  });

  let deleteArmed = null;
  $("delete-voice").addEventListener("click", async () => {
    const name = voiceSel.value;
    const btn = $("delete-voice");
    if (!name) {
      setVoiceStatus("the server default voice cannot be deleted", true);
      return;
    }
    if (deleteArmed !== name) {
      // Two presses: the first one arms, so a stray key press deletes nothing.
      deleteArmed = name;
      btn.textContent = `Press again to delete “${name}”`;
      setTimeout(() => { if (deleteArmed === name) { deleteArmed = null; btn.textContent = "Delete selected voice"; } }, 4000);
      return;
    }
    deleteArmed = null;
    btn.textContent = "Delete selected voice";
    const r = await api(`/v1/voices/${encodeURIComponent(name)}`, { method: "DELETE" });
    if (r.ok) {
      setVoiceStatus(`deleted “${name}”`);
      await loadVoices("");
    } else {
      setVoiceStatus(await errorText(r), true);
    }
  });
  $("refresh-voices").addEventListener("click", () => loadVoices());

  let cloneSource = null; // {file: File, label}
  $("clone-file").addEventListener("change", () => {
    const f = $("clone-file").files[0];
    cloneSource = f ? { file: f, label: f.name } : null;
    setCloneStatus(f ? `will upload ${f.name} (${(f.size / 1024).toFixed(0)} KiB)` : "");
  });

  $("clone-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const name = $("clone-name").value.trim();
    if (!name) return setCloneStatus("give the voice a name", true);
    if (!cloneSource) return setCloneStatus("choose a reference clip or record one", true);
    const fd = new FormData();
    fd.append("name", name);
    fd.append("file", cloneSource.file, cloneSource.file.name);
    $("clone").disabled = true;
    setCloneStatus(`uploading ${cloneSource.label}…`);
    try {
      const r = await api("/v1/voices", { method: "POST", body: fd });
      if (r.ok) {
        let v = null;
        try { v = (await r.json()).voice; } catch (_) { /* no body */ }
        const d = v && v.duration_s != null ? ` from ${(+v.duration_s).toFixed(1)} s of audio` : "";
        setCloneStatus(`voice “${name}” cloned${d}`);
        await loadVoices(name);
        sessionStorage.setItem(VOICE_STORE, name);
      } else {
        setCloneStatus(await errorText(r), true);
      }
    } catch (err) {
      setCloneStatus(`upload failed: ${err.message}`, true);
    } finally {
      $("clone").disabled = false;
    }
  });

  // Record a reference clip from the microphone; it is decoded and uploaded as 16-bit WAV.
  let recorder = null;
  $("record").addEventListener("click", async () => {
    const btn = $("record");
    if (recorder) {
      recorder.stop();
      return;
    }
    let stream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({ audio: { echoCancellation: false, noiseSuppression: false } });
    } catch (e) {
      $("record-status").textContent = `no microphone: ${e.message}`;
      return;
    }
    const parts = [];
    const started = performance.now();
    recorder = new MediaRecorder(stream);
    recorder.ondataavailable = (e) => e.data.size && parts.push(e.data);
    const tick = setInterval(() => {
      $("record-status").textContent = `recording ${((performance.now() - started) / 1000).toFixed(1)} s (5 to 30 s; press again to stop)`;
    }, 200);
    recorder.onstop = async () => {
      clearInterval(tick);
      stream.getTracks().forEach((t) => t.stop());
      recorder = null;
      btn.setAttribute("aria-pressed", "false");
      btn.textContent = "Record from microphone";
      try {
        const blob = new Blob(parts, { type: parts[0] ? parts[0].type : "audio/webm" });
        const decoded = await audio().decodeAudioData(await blob.arrayBuffer());
        const wav = encodeWav(decoded);
        const file = new File([wav], "recording.wav", { type: "audio/wav" });
        cloneSource = { file, label: `the recording (${decoded.duration.toFixed(1)} s)` };
        $("clone-file").value = "";
        $("record-status").textContent = `recorded ${decoded.duration.toFixed(1)} s; it will be uploaded`;
      } catch (e) {
        $("record-status").textContent = `could not use the recording: ${e.message}`;
      }
    };
    recorder.start(250);
    btn.setAttribute("aria-pressed", "true");
    btn.textContent = "Stop recording";
  });

  function encodeWav(buf) {
    const n = buf.length;
    const mono = new Float32Array(n);
    for (let c = 0; c < buf.numberOfChannels; c++) {
      const d = buf.getChannelData(c);
      for (let i = 0; i < n; i++) mono[i] += d[i] / buf.numberOfChannels;
    }
    const out = new DataView(new ArrayBuffer(44 + n * 2));
    const str = (o, s) => { for (let i = 0; i < s.length; i++) out.setUint8(o + i, s.charCodeAt(i)); };
    str(0, "RIFF"); out.setUint32(4, 36 + n * 2, true); str(8, "WAVE");
    str(12, "fmt "); out.setUint32(16, 16, true); out.setUint16(20, 1, true); out.setUint16(22, 1, true);
    out.setUint32(24, buf.sampleRate, true); out.setUint32(28, buf.sampleRate * 2, true);
    out.setUint16(32, 2, true); out.setUint16(34, 16, true);
    str(36, "data"); out.setUint32(40, n * 2, true);
    for (let i = 0; i < n; i++) out.setInt16(44 + i * 2, Math.max(-1, Math.min(1, mono[i])) * 32767, true);
    return out.buffer;
  }

  // ---------------------------------------------------------------- drawing
  let dirty = true;
  let lastText = 0;
  function fmt(v, digits = 0) {
    return v == null || Number.isNaN(v) ? "–" : (+v).toFixed(digits);
  }
  function drawMeters() {
    const db = metrics.level > 0 ? 20 * Math.log10(metrics.level) : -100;
    const lv = Math.max(0, Math.min(1, (db + 60) / 60));
    $("level-bar").style.width = `${(lv * 100).toFixed(1)}%`;
    $("level-meter").setAttribute("aria-valuenow", lv.toFixed(2));
    const b = metrics.bufferMs || 0;
    $("buf-bar").style.width = `${Math.min(100, (b / 2000) * 100).toFixed(1)}%`;
    $("buf-meter").setAttribute("aria-valuenow", String(b));
    const now = performance.now();
    if (now - lastText < 100 && !dirty) return;
    lastText = now;
    const u = current();
    $("ttfa").textContent = u && u.queued && u.firstAudible == null && !u.finished ? "queued" : fmt(metrics.ttfaMs);
    $("ttfa-server").textContent = fmt(metrics.serverTtfaMs);
    $("buffer").textContent = fmt(metrics.bufferMs);
    $("underruns").textContent = fmt(metrics.underruns);
    $("stop-silence").textContent = metrics.stopToSilenceMs == null ? "–"
      : metrics.stopToSilenceMs >= STOP_WINDOW_MS - 50 ? `≥${STOP_WINDOW_MS}` : String(metrics.stopToSilenceMs);
    $("rtf").textContent = fmt(metrics.rtf, 2);
    $("audio-s").textContent = fmt(metrics.audioSeconds, 1);
    $("chunks").textContent = u ? String(u.chunks.length) : "–";
    drawHistory();
    drawTimeline(u);
    dirty = false;
  }

  function canvasCtx(cv) {
    const dpr = window.devicePixelRatio || 1;
    const w = cv.clientWidth || cv.width;
    const h = cv.clientHeight || cv.height;
    if (cv.width !== Math.round(w * dpr) || cv.height !== Math.round(h * dpr)) {
      cv.width = Math.round(w * dpr);
      cv.height = Math.round(h * dpr);
    }
    const g = cv.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    return { g, w, h };
  }

  function drawHistory() {
    const { g, w, h } = canvasCtx($("ttfa-history"));
    const hs = metrics.history;
    if (!hs.length) return;
    const max = Math.max(500, ...hs);
    const bw = w / 24;
    hs.forEach((v, i) => {
      const bh = Math.max(2, (v / max) * (h - 12));
      g.fillStyle = i === hs.length - 1 ? "#4fb3ff" : "#2f5d85";
      g.fillRect(i * bw + 1, h - bh, bw - 2, bh);
    });
    g.fillStyle = "#93a1b0";
    g.font = "10px sans-serif";
    g.fillText(`last ${hs.length} (scale 0–${Math.round(max)} ms)`, 2, 10);
  }

  function drawTimeline(u) {
    const { g, w, h } = canvasCtx($("timeline"));
    const list = $("tl-list");
    if (!u) {
      g.fillStyle = "#93a1b0";
      g.font = "13px sans-serif";
      g.fillText("Speak to see each chunk: when it was generated, received and played.", 12, 24);
      list.textContent = "";
      return;
    }
    const rel = (t) => t - u.t0;
    const rows = u.chunks.map((c) => {
      const recv = rel(c.recvAt);
      const genStart = Math.max(0, recv - c.genTime * 1000);
      const play = u.firstAudible != null ? rel(u.firstAudible) + c.offset * 1000 : null;
      return { c, recv, genStart, play, playEnd: play != null ? play + c.duration * 1000 : null };
    });
    u.timeline = rows.map((r) => ({ seq: r.c.seq, text: r.c.text, genStartMs: r.genStart, recvMs: r.recv, playMs: r.play, playEndMs: r.playEnd }));
    let span = 1000;
    for (const r of rows) span = Math.max(span, r.recv, r.playEnd || 0);
    if (u.firstAudible != null) span = Math.max(span, rel(u.firstAudible));
    span *= 1.05;
    const left = 8, right = w - 8, top = 18;
    const x = (ms) => left + (ms / span) * (right - left);
    // axis
    g.strokeStyle = "#2a3542";
    g.fillStyle = "#93a1b0";
    g.font = "10px sans-serif";
    const step = span > 8000 ? 2000 : span > 4000 ? 1000 : span > 1500 ? 500 : 250;
    for (let t = 0; t <= span; t += step) {
      g.beginPath(); g.moveTo(x(t), top - 4); g.lineTo(x(t), h); g.stroke();
      g.fillText(`${t}`, x(t) + 2, 10);
    }
    const laneH = Math.max(8, Math.min(22, (h - top - 4) / Math.max(1, rows.length)));
    rows.forEach((r, i) => {
      const y = top + i * laneH;
      const bh = Math.max(4, laneH - 5);
      g.fillStyle = "#ffb454";
      g.fillRect(x(r.genStart), y, Math.max(2, x(r.recv) - x(r.genStart)), bh / 2);
      g.fillStyle = "#ffffff";
      g.fillRect(x(r.recv) - 1, y, 2, bh);
      if (r.play != null) {
        g.fillStyle = "#4fb3ff";
        g.fillRect(x(r.play), y + bh / 2, Math.max(2, x(r.playEnd) - x(r.play)), bh / 2);
      }
      if (laneH >= 14) {
        g.fillStyle = "#e6edf3";
        g.font = "11px sans-serif";
        const tx = r.play != null ? x(r.play) + 4 : x(r.recv) + 4;
        const label = r.c.text.length > 60 ? r.c.text.slice(0, 57) + "…" : r.c.text;
        if (tx < right - 40) g.fillText(label, tx, y + bh - 1, right - tx);
      }
    });
    if (u.firstAudible != null) {
      const fx = x(rel(u.firstAudible));
      g.strokeStyle = "#5ed18a";
      g.lineWidth = 2;
      g.beginPath(); g.moveTo(fx, top - 4); g.lineTo(fx, h); g.stroke();
      g.lineWidth = 1;
      g.fillStyle = "#5ed18a";
      g.font = "bold 11px sans-serif";
      g.fillText(`heard ${Math.round(rel(u.firstAudible))} ms`, Math.min(fx + 4, right - 90), h - 6);
    }
    if (u.stoppedAt) {
      const sx = x(rel(u.stoppedAt));
      g.strokeStyle = "#ff6b6b";
      g.beginPath(); g.moveTo(sx, top - 4); g.lineTo(sx, h); g.stroke();
    }
    // text list (also what a screen reader gets)
    const items = rows.map((r) => {
      const li = document.createElement("li");
      const b = document.createElement("b");
      b.textContent = r.c.text;
      li.append(b, ` — generated in ${Math.round(r.c.genTime * 1000)} ms, received at ${Math.round(r.recv)} ms` +
        (r.play != null ? `, plays ${Math.round(r.play)}–${Math.round(r.playEnd)} ms` : ""));
      return li;
    });
    list.replaceChildren(...items);
  }

  // ---------------------------------------------------------------- status lines, keys, start-up
  function setStatus(text, bad) {
    const el = $("speak-status");
    el.textContent = text;
    el.className = "status" + (bad ? " error" : "");
  }
  function setCloneStatus(text, bad) {
    const el = $("clone-status");
    el.textContent = text;
    el.className = "status" + (bad ? " error" : text ? " ok" : "");
  }
  function setVoiceStatus(text, bad) {
    setCloneStatus(text, bad);
  }

  $("speak").addEventListener("click", () => speak());
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
})();
