// "Talk to interrupt": the switch, the microphone, and the gateway's events about the caller's side (speech_started,
// speech_stopped, interrupted, paused, resumed, barge_in). Over WebRTC only: the microphone is a track of the peer
// connection (transports.js adds it before the offer, so the offer's audio is sendrecv), the gateway's VAD hears it,
// and speech that starts while the gateway speaks stops it at the gateway (docs/protocol.md, "The caller's side").
//
// Two figures, each what it says and no more:
//   cut in (metrics.cutInMs)      the gateway's reaction_ms: from the onset's audio arriving at the gateway to the
//                                 gateway's silence (its outbound track is silent from the next 20 ms frame);
//   → silence here (metrics.interruptToSilenceMs)
//                                 from the `interrupted` event arriving in this page to the last audible sample the
//                                 page's analyser saw (what was already on its way or in the jitter buffer); 0 when
//                                 the stream was already silent as the event arrived.

import { $, state, metrics, utterances, view, recordFor, finishUtterance, setStatus } from "./state.js";
import { watchSilence } from "./audio.js";

const NEEDS_WEBRTC = "needs WebRTC: the microphone is sent on the WebRTC connection (not over the WebSocket)";
const ON_TITLE = "your microphone goes to the gateway; speech that starts while it speaks stops it";

let mic = null; // the open microphone (a MediaStream), kept across reconnects while the switch is on
let opening = null;
const heard = { speaking: false, last: "" }; // the status line: the caller's state, and the latest barge-in

function show() {
  if (!state.bargeIn) return; // what was noted (a refused microphone) stays
  let text;
  if (!state.micLive) text = mic ? "microphone open; connecting…" : "asking for the microphone…";
  else text = heard.speaking ? "speech heard" : "listening: talk while it speaks to interrupt";
  if (heard.last) text += ` · ${heard.last}`;
  $("barge-status").textContent = text;
}

function note(text, bad) {
  const el = $("barge-status");
  el.textContent = text;
  el.className = "status" + (bad ? " error" : "");
}

// The switch was flipped (the caller reconnects afterwards).
export function setBarge(on) {
  state.bargeIn = on;
  $("barge").checked = on;
  heard.speaking = false;
  heard.last = "";
  note("");
  if (!on) closeMic();
  show();
}

function closeMic() {
  if (mic) mic.getTracks().forEach((t) => t.stop());
  mic = null;
  state.micLive = false;
}

// The microphone, opened once while the switch is on (echo cancelling and noise suppression on); null when refused.
export async function openMic() {
  if (!state.bargeIn) return null;
  if (mic) return mic;
  if (!opening) {
    show();
    opening = navigator.mediaDevices.getUserMedia({ audio: { echoCancellation: true, noiseSuppression: true } })
      .then((stream) => {
        if (state.bargeIn) mic = stream;
        else stream.getTracks().forEach((t) => t.stop());
        return mic;
      }, (e) => {
        setBarge(false);
        note(`no microphone: ${e.message || e.name}`, true);
        return null;
      })
      .finally(() => { opening = null; });
  }
  return opening;
}

// The transport in use or chosen: the switch works over WebRTC only. `connection`: the one that just came up.
export function bargeAvailability(connection) {
  const ws = state.mode === "ws" || (connection && connection.kind === "ws");
  const sw = $("barge");
  sw.disabled = ws;
  $("barge-label").title = ws ? NEEDS_WEBRTC : ON_TITLE;
  if (ws && state.bargeIn) {
    setBarge(false);
    note(state.mode === "ws" ? "talk to interrupt needs WebRTC" : "the WebSocket is in use: talk to interrupt needs WebRTC");
  }
  state.micLive = !!(connection && connection.mic);
  show();
}

// A server event about the caller's side; true when it was one.
export function onCallerEvent(msg, now) {
  switch (msg.type) {
    case "speech_started":
      heard.speaking = true;
      break;
    case "speech_stopped":
      heard.speaking = false;
      break;
    case "interrupted": {
      // The gateway has cancelled what it was saying (all of it, as a cancel does) and gone silent.
      for (const cut of msg.utterances || []) {
        const u = recordFor(cut.utterance);
        if (u) u.interrupted = { ...cut, reaction_ms: msg.reaction_ms };
      }
      for (const u of utterances) {
        if (u.finished) continue;
        u.stoppedAt = now;
        finishUtterance(u);
      }
      state.speaking = false;
      metrics.cutInMs = msg.reaction_ms;
      metrics.interruptToSilenceMs = null;
      watchSilence("interrupt", now, (ms) => { metrics.interruptToSilenceMs = ms; view.dirty = true; });
      heard.last = `interrupted · cut in: ${msg.reaction_ms} ms`;
      setStatus("interrupted by your speech");
      view.dirty = true;
      break;
    }
    case "paused":
      heard.last = "paused while you speak";
      break;
    case "resumed":
      heard.last = "resumed";
      break;
    case "barge_in":
      state.bargeMode = msg.mode;
      break;
    default:
      return false;
  }
  show();
  return true;
}

// A new Speak: the last barge-in's note goes (its figures stay until the next one).
export function bargeSpeak() {
  heard.last = "";
  show();
}

// The microphone's tracks for a new peer connection (none while the switch is off or the microphone is not open).
export const micTracks = () => (state.bargeIn && mic ? mic.getAudioTracks().filter((t) => t.readyState === "live") : []);
export const micStream = () => mic;
