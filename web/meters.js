// Drawing: the level and buffer meters, the figures, the time-to-first-audio history and the chunk timeline
// (a canvas, and the same as a list for screen readers). drawMeters() runs on every animation frame; the text and
// canvases are redrawn every 100 ms, or at once when view.dirty is set.

import { $, metrics, view, current } from "./state.js";
import { STOP_WINDOW_MS } from "./audio.js";

let lastText = 0;
function fmt(v, digits = 0) {
  return v == null || Number.isNaN(v) ? "–" : (+v).toFixed(digits);
}
export function drawMeters() {
  const db = metrics.level > 0 ? 20 * Math.log10(metrics.level) : -100;
  const lv = Math.max(0, Math.min(1, (db + 60) / 60));
  $("level-bar").style.width = `${(lv * 100).toFixed(1)}%`;
  $("level-meter").setAttribute("aria-valuenow", lv.toFixed(2));
  const b = metrics.bufferMs || 0;
  $("buf-bar").style.width = `${Math.min(100, (b / 2000) * 100).toFixed(1)}%`;
  $("buf-meter").setAttribute("aria-valuenow", String(b));
  const now = performance.now();
  if (now - lastText < 100 && !view.dirty) return;
  lastText = now;
  const u = current();
  $("ttfa").textContent = u && u.queued && u.firstAudible == null && !u.finished ? "queued" : fmt(metrics.ttfaMs);
  $("ttfa-server").textContent = fmt(metrics.serverTtfaMs);
  $("latency-applied").textContent = metrics.latencyApplied || "–";
  $("buffer").textContent = fmt(metrics.bufferMs);
  $("underruns").textContent = fmt(metrics.underruns);
  $("stop-silence").textContent = metrics.stopToSilenceMs == null ? "–"
    : metrics.stopToSilenceMs >= STOP_WINDOW_MS - 50 ? `≥${STOP_WINDOW_MS}` : String(metrics.stopToSilenceMs);
  $("cut-in").textContent = fmt(metrics.cutInMs);
  $("cut-silence").textContent = fmt(metrics.interruptToSilenceMs);
  $("rtf").textContent = fmt(metrics.rtf, 2);
  $("audio-s").textContent = fmt(metrics.audioSeconds, 1);
  $("chunks").textContent = u ? String(u.chunks.length) : "–";
  drawHistory();
  drawTimeline(u);
  view.dirty = false;
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
