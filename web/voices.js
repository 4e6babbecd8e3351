// Voices: the picker (the server's list), delete (two presses), and cloning from an uploaded clip or a recording
// from the microphone (decoded here and uploaded as 16-bit WAV). The server's error messages are shown as they are.

import { $, state } from "./state.js";
import { api, errorText } from "./api.js";
import { audio } from "./audio.js";

export const VOICE_STORE = "cbf.voice";
export let voices; // the latest list from the server (cbf.voices)

const voiceSel = $("voice");

// Fill the picker from the server; select `select` (default: the voice in use). Resolves to the list.
export async function loadVoices(select) {
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
  voices = list;
  return list;
}

// The voice controls' handlers.
export function wireVoices() {
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
}

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

function setCloneStatus(text, bad) {
  const el = $("clone-status");
  el.textContent = text;
  el.className = "status" + (bad ? " error" : text ? " ok" : "");
}
function setVoiceStatus(text, bad) {
  setCloneStatus(text, bad);
}
