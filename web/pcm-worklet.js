// PCM playback for the WebSocket transport: a ring buffer inside an AudioWorklet.
//
// Messages in (port):
//   {type: "config", rate}        sample rate of the PCM that follows (resampled linearly if it differs)
//   Float32Array                  mono samples at `rate`, appended to the ring
//   {type: "end"}                 the current utterance has been completely received: running dry after its last
//                                 sample is the end, not an underrun
//   {type: "clear"}               barge-in: drop everything buffered now
// Messages out (port), about every 20 ms and at every change of state:
//   {type: "level", buffered (seconds), underruns, received (seconds of output-rate audio taken since the last clear),
//    ended (the utterance's end taken, nothing since), playing, dry}
"use strict";

class PcmPlayer extends AudioWorkletProcessor {
  constructor() {
    super();
    this.capacity = sampleRate * 60; // 60 s of output-rate audio
    this.ring = new Float32Array(this.capacity);
    this.readIdx = 0; // absolute sample counters (output rate)
    this.writeIdx = 0;
    this.endAt = -1; // writeIdx at the moment the utterance ended (-1: not ended)
    this.playing = false; // true between the first sample of an utterance and its end
    this.dry = false; // currently starved mid-utterance
    this.underruns = 0;
    this.received = 0; // output samples taken since the last clear
    this.ended = false; // the utterance's "end" taken and no sample since
    this.inRate = sampleRate;
    this.frac = 0; // resampler phase
    this.last = 0; // last input sample (for interpolation across messages)
    this.lastReport = 0;
    this.port.onmessage = (e) => this.onMessage(e.data);
  }

  onMessage(msg) {
    if (msg instanceof Float32Array) {
      this.push(msg);
      this.ended = false;
      if (!this.playing) {
        this.playing = true;
        this.dry = false;
      }
      this.endAt = -1;
      return;
    }
    if (!msg || typeof msg !== "object") return;
    if (msg.type === "config") {
      this.inRate = msg.rate || sampleRate;
      this.frac = 0;
    } else if (msg.type === "end") {
      this.endAt = this.writeIdx;
      this.ended = true;
      if (this.readIdx >= this.endAt) this.finish();
      this.report(true);
    } else if (msg.type === "clear") {
      this.readIdx = this.writeIdx;
      this.endAt = -1;
      this.playing = false;
      this.dry = false;
      this.received = 0;
      this.ended = false;
      this.frac = 0;
      this.report(true);
    } else if (msg.type === "reset") {
      this.underruns = 0;
      this.report(true);
    }
  }

  finish() {
    this.playing = false;
    this.dry = false;
    this.endAt = -1;
  }

  push(input) {
    let space = this.capacity - (this.writeIdx - this.readIdx);
    const write = (v) => {
      if (space <= 0) return;
      this.ring[this.writeIdx % this.capacity] = v;
      this.writeIdx++;
      this.received++;
      space--;
    };
    if (this.inRate === sampleRate) {
      for (let i = 0; i < input.length; i++) write(input[i]);
      return;
    }
    // Linear interpolation over the stream [last, ...input]; `frac` is the read position with `last` at -1.
    const step = this.inRate / sampleRate;
    const n = input.length;
    let pos = this.frac;
    while (pos < n - 1) {
      const i = Math.floor(pos);
      const t = pos - i;
      const a = i < 0 ? this.last : input[i];
      write(a + (input[i + 1] - a) * t);
      pos += step;
    }
    this.frac = pos - n;
    this.last = input[n - 1];
  }

  report(force) {
    if (!force && currentTime - this.lastReport < 0.02) return;
    this.lastReport = currentTime;
    this.port.postMessage({
      type: "level",
      buffered: (this.writeIdx - this.readIdx) / sampleRate,
      underruns: this.underruns,
      received: this.received / sampleRate,
      ended: this.ended,
      playing: this.playing,
      dry: this.dry,
    });
  }

  process(inputs, outputs) {
    const out = outputs[0];
    const ch0 = out[0];
    const n = ch0.length;
    let i = 0;
    for (; i < n && this.readIdx < this.writeIdx; i++) {
      ch0[i] = this.ring[this.readIdx % this.capacity];
      this.readIdx++;
    }
    if (i > 0 && this.dry) this.dry = false;
    if (i < n) {
      ch0.fill(0, i);
      if (this.playing) {
        if (this.endAt >= 0 && this.readIdx >= this.endAt) {
          this.finish();
          this.report(true);
        } else if (!this.dry) {
          // Ran dry with the utterance still unfinished: an underrun (counted once per dry spell).
          this.dry = true;
          this.underruns++;
          this.report(true);
        }
      }
    }
    for (let c = 1; c < out.length; c++) out[c].set(ch0);
    this.report(false);
    return true;
  }
}

registerProcessor("pcm-player", PcmPlayer);
