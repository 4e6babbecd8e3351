"""The gate's blind listening page: each text's baseline and candidate audio as X and Y in random order, a static
``index.html`` that plays them from the folder (no network) and records which of each pair the listener prefers, or
"same", and the key to unblind in its own file (``key.json``). The gate only prepares it; the counts stay with the
person."""

from __future__ import annotations

import html
import json
import random
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.protocol import SAMPLE_RATE

PAGE, KEY, AUDIO = "index.html", "key.json", "audio"
SIDES = ("baseline", "candidate")


@dataclass(frozen=True)
class Pair:
    """One text as both servers said it (24 kHz s16le mono PCM each)."""

    name: str
    text: str
    baseline: bytes
    candidate: bytes


def write_wav(path: Path, pcm: bytes) -> None:
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(SAMPLE_RATE)
        out.writeframes(pcm[: len(pcm) // 2 * 2])


def write(directory: Path, pairs: list[Pair], rng: random.Random, servers: dict[str, str]) -> dict[str, Any]:
    """Write the page, its audio and the key into ``directory``; returns where they are (for the report).

    Audio files the gate wrote there before are replaced; nothing else in the folder is touched."""
    audio = directory / AUDIO
    audio.mkdir(parents=True, exist_ok=True)
    for old in audio.glob("pair-*.wav"):
        old.unlink()
    key = []
    for number, pair in enumerate(pairs, 1):
        order = list(SIDES)
        rng.shuffle(order)
        for label, side in zip("xy", order):
            write_wav(audio / f"pair-{number:02d}-{label}.wav", getattr(pair, side))
        key.append({"pair": number, "name": pair.name, "x": order[0], "y": order[1]})
    (directory / PAGE).write_text(page([(n, p.text) for n, p in enumerate(pairs, 1)]), encoding="utf-8")
    (directory / KEY).write_text(json.dumps({"servers": servers, "pairs": key}, indent=2) + "\n", encoding="utf-8")
    return {"dir": str(directory), "page": str(directory / PAGE), "key": str(directory / KEY), "pairs": len(pairs)}


def page(texts: list[tuple[int, str]]) -> str:
    """The listening page: one row per pair; the choices stay in the browser (localStorage) and can be copied."""
    rows = "\n".join(
        f"""<section><h2>{number}. {html.escape(text)}</h2>
<p>X <audio controls preload="none" src="{AUDIO}/pair-{number:02d}-x.wav"></audio>
Y <audio controls preload="none" src="{AUDIO}/pair-{number:02d}-y.wav"></audio></p>
<p>{''.join(f'<label><input type="radio" name="p{number}" value="{v}"> {label}</label> '
             for v, label in (("x", "X is better"), ("y", "Y is better"), ("same", "the same")))}</p></section>"""
        for number, text in texts)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>chatterbox-fast gate: blind listening</title>
<style>body{{font:16px system-ui,sans-serif;max-width:60em;margin:2em auto;padding:0 1em}}
section{{border-top:1px solid #ccc;padding:.5em 0}}h2{{font-size:1em;font-weight:normal}}
label{{margin-right:1.5em}}textarea{{width:100%;height:8em}}</style></head>
<body><h1>Blind listening</h1>
<p>Each pair is one text spoken by the current server and by the candidate, in random order as X and Y. Pick the
better one, or "the same". Your choices stay in this browser. When done, copy them below and unblind them with
<code>{KEY}</code> beside this page (do not open it before).</p>
{rows}
<h2>Your choices</h2><textarea id="choices" readonly></textarea>
<script>
const store = "cbf-gate-choices:" + location.pathname;
const saved = JSON.parse(localStorage.getItem(store) || "{{}}");
function show() {{ document.getElementById("choices").value = JSON.stringify(saved, null, 1); }}
for (const input of document.querySelectorAll("input[type=radio]")) {{
  if (saved[input.name.slice(1)] === input.value) input.checked = true;
  input.addEventListener("change", () => {{
    saved[input.name.slice(1)] = input.value; localStorage.setItem(store, JSON.stringify(saved)); show();
  }});
}}
show();
</script></body></html>
"""
