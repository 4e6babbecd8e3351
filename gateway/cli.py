"""``chatterbox-fast``: every command and every flag, each flag with an environment-variable twin. One place.

This module imports nothing heavy at the top, and each command imports its own modules when it runs: ``serve`` never
imports torch, ``engine`` (the worker process) never imports aiortc, httpx (but for ``--engine http``) or Starlette,
and the operator tools (``say``, ``bench``, ``gate``, in the ``cbf_tools`` package) load only for their own command.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from engine.protocol import NORMALIZE_MODES
from gateway.cli_values import (Option, Parser, boolean, comma_list, devices, engine_devices, engine_urls, lead_seconds,
                                 listen_address, number, port, positive_gib, positive_seconds, seconds_or_auto, whole,
                                 whole_numbers)
from gateway.guard.origins import parse_origins


def _networks(value: str) -> tuple[str, ...]:
    from gateway.telephony.audiosocket import parse_networks

    try:
        parse_networks(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return comma_list(value)


def _zeroconf_name(value: str) -> str:
    from gateway.wyoming.announce import instance_name

    try:
        return instance_name(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


ENGINE_OPTIONS = (
    Option("--engine", "CBF_ENGINE", "speech engine; auto = chatterbox-turbo when weights and a GPU are found, "
           "else the embedded eSpeak voice", default="auto",
           choices=("auto", "chatterbox-turbo", "espeak", "simulated", "http")),
    Option("--model-dir", "CBF_MODEL_DIR", "directory with Chatterbox-Turbo weights (from_local layout)", Path),
    Option("--weights", "CBF_WEIGHTS", "pretrained weights, or random ones to measure compute cost only",
           default="pretrained", choices=("pretrained", "random")),
    Option("--device", "CBF_DEVICE", "where chatterbox-turbo loads: cpu, or the cards to try in order (cuda:0,cuda:1 "
           "or GPU-<uuid>,GPU-<uuid>; the first with room for its estimated need; auto: every card, the most free "
           "memory first, else the CPU)", devices, "auto"),
    Option("--dtype", "CBF_DTYPE", "chatterbox-turbo dtype (auto = bfloat16 on CUDA)", default="auto",
           choices=("auto", "bfloat16", "float16", "float32")),
    Option("--tf32", "CBF_TF32", "allow TF32 matmuls on CUDA", boolean, True),
    Option("--sdpa", "CBF_SDPA", "scaled-dot-product attention in upstream's T3 forward (only the GPU kit's "
           "baseline runs it: the Turbo decode path always uses SDPA)", boolean, True),
    Option("--decode", "CBF_DECODE", "chatterbox-turbo T3 decode: auto = CUDA graphs on CUDA, eager elsewhere",
           default="auto", choices=("auto", "eager", "graph")),
    Option("--vocode", "CBF_VOCODE", "chatterbox-turbo S3Gen: auto = CUDA graphs per (batch, length) bucket on CUDA, "
           "eager elsewhere", default="auto", choices=("auto", "eager", "graph")),
    Option("--batch-slots", "CBF_BATCH_SLOTS",
           "chatterbox-turbo: chunks decoded together (0 = 64 on CUDA, 8 elsewhere)", whole, 0),
    Option("--vocode-window-ms", "CBF_VOCODE_WINDOW_MS", "chatterbox-turbo: the longest a chunk's S3Gen call waits "
           "for other callers' chunks to vocode with it (less for a listener past its deadline; 0 = no wait)",
           number, 10.0),
    Option("--prompt-cache-voices", "CBF_PROMPT_CACHE_VOICES", "chatterbox-turbo: voices whose prompt keys and "
           "values stay on the device (~37 MB each in bf16), least recently used forgotten first", whole, 64),
    Option("--voices-dir", "CBF_VOICES_DIR", "where predefined and cloned voices live", Path, Path("voices")),
    Option("--lexicons-dir", "CBF_LEXICONS_DIR", "where pronunciation lexicons live (W3C PLS or ElevenLabs rules "
           "JSON; `default` applies to every utterance, one named after a voice to that voice's; default: "
           "VOICES_DIR/lexicons)", Path),
    Option("--sim-fixed", "CBF_SIM_FIXED", "simulated engine: fixed seconds per chunk", number, 0.15),
    Option("--sim-rtf", "CBF_SIM_RTF", "simulated engine: real-time factor", number, 3.0),
    Option("--engine-http-url", "CBF_ENGINE_HTTP_URL", "--engine http: base URL of a buffered TTS server, driven "
           "one chunk per request: http://HOST:PORT, or http://HOST:PORT/v1 as OpenAI clients write it (the "
           "dialect's own leading path is not doubled; a proxy's prefix is kept)"),
    Option("--engine-http-dialect", "CBF_ENGINE_HTTP_DIALECT", "--engine http: what the server speaks: openai "
           "(POST /v1/audio/speech), devnen (POST /tts), fish (POST /v1/tts)", default="openai",
           choices=("openai", "devnen", "fish")),
    Option("--engine-http-key", "CBF_ENGINE_HTTP_KEY", "--engine http: the server's API key (sent as a bearer "
           "token)", secret=True),
    Option("--engine-http-concurrency", "CBF_ENGINE_HTTP_CONCURRENCY", "--engine http: requests in flight to the "
           "server at once (most buffered servers serve one at a time)", whole, 1),
    Option("--engine-http-timeout", "CBF_ENGINE_HTTP_TIMEOUT", "--engine http: seconds one chunk's request may "
           "take before the utterance fails with engine_unavailable", number, 60.0),
    Option("--engine-http-voices", "CBF_ENGINE_HTTP_VOICES", "--engine http: voice names the server knows, "
           "comma-separated (the first is 'default'); listed from the server too where it can list them",
           comma_list, ()),
    Option("--first-chunk-words", "CBF_FIRST_CHUNK_WORDS", "minimum words in an utterance's first chunk", whole, 3),
    Option("--max-chunk-chars", "CBF_MAX_CHUNK_CHARS", "hard cap on a chunk's text (Turbo drifts past ~350)", whole,
           300),
    Option("--safety-margin", "CBF_SAFETY_MARGIN", "seconds of buffered audio the planner keeps in reserve",
           number, 0.3),
    Option("--first-audio-target", "CBF_FIRST_AUDIO_TARGET", "seconds the first chunk's generation may take: the "
           "planner starts with the longest natural unit the learnt cost model says fits (auto = 0.12 on a GPU "
           "engine, off elsewhere; 0 = off: the shortest natural unit)", seconds_or_auto, "auto"),
    Option("--shared-chunk-seconds", "CBF_SHARED_CHUNK_SECONDS", "while several utterances share the device, the "
           "longest a chunk may take to generate (bounds how long one caller can hold up another)", number, 1.0),
    Option("--gpu-memory", "CBF_GPU_MEMORY", "GiB of its card a chatterbox-turbo worker may take: its batch slots are "
           "sized to fit inside (or a --batch-slots that does not fit is refused), it is placed only on a card with "
           "that much free, and torch's allocator is capped there; no cap when not set", positive_gib),
    Option("--unload-after", "CBF_UNLOAD_AFTER", "seconds with no utterance after which the worker frees its model "
           "(the device's memory, or a CPU engine's weights) and keeps only its voices' conditionals; the next "
           "utterance loads it again, its first audio paying the reload; off when not set", positive_seconds),
    Option("--device-stall-seconds", "CBF_DEVICE_STALL_SECONDS", "a device call (one chunk, one voice) running this "
           "long has hung: the worker exits with code 4 for its supervisor to restart it", number, 30.0),
)

GATEWAY_OPTIONS = (
    Option("--host", "CBF_HOST", "address to listen on: this machine only by default; 0.0.0.0 (every address) "
           "opens it to the network, with a warning unless an API key is set", default="127.0.0.1"),
    Option("--port", "CBF_PORT", "port to listen on", port, 8197),
    Option("--api-key", "CBF_API_KEYS", "API keys, comma-separated; when set every request needs one", comma_list, (),
           secret=True),
    Option("--keys-file", "CBF_KEYS_FILE", "a TOML file of clients, one [keys.NAME] table each: its key (or "
           "key_sha256) and limits (max_sessions, max_utterances_in_flight, chars_per_minute, voices, routes, admin); "
           "read again when it changes and on SIGHUP (docs/keys-and-tenants.md)"),
    Option("--token-secret", "CBF_TOKEN_SECRET", "signs the short-lived tokens of POST /v1/tokens (at least 16 "
           "characters); servers given the same one accept each other's tokens; not set: one is generated at start, "
           "shared by --processes, and tokens end with the server", secret=True),
    Option("--tls-cert", "CBF_TLS_CERT", "serve https and wss on --port with this PEM certificate (its chain "
           "after it; needs --tls-key); not set: plain http and ws"),
    Option("--tls-key", "CBF_TLS_KEY", "the PEM private key of --tls-cert (unencrypted)"),
    Option("--cors-origins", "CBF_CORS_ORIGINS", "browser origins allowed, comma-separated "
           "(https://app.example,http://localhost:3000): CORS answers those exactly and a WebSocket upgrade from "
           "another origin gets 403; none set: every origin (CORS *)", parse_origins, ()),
    Option("--max-sessions", "CBF_MAX_SESSIONS", "concurrent sessions and streams before 503", whole, 32),
    Option("--max-text-chars", "CBF_MAX_TEXT_CHARS", "text per utterance", whole, 5000),
    Option("--max-upload-bytes", "CBF_MAX_UPLOAD_BYTES", "voice upload size", whole, 10 * 1024 * 1024),
    Option("--stall-timeout", "CBF_STALL_TIMEOUT", "seconds a client may take no audio before it is closed", number,
           30.0),
    Option("--client-lead", "CBF_CLIENT_LEAD", "seconds of audio the engine may generate ahead of what a client has "
           "taken (read, or played where it reports that), past what its longest chunk needs: a client that stops "
           "reading holds this much, and no more, in the gateway and the worker (0.5-60)", lead_seconds, 3.0),
    Option("--request-timeout", "CBF_REQUEST_TIMEOUT", "seconds an HTTP request (a WebSocket's opening one too) may "
           "take to arrive whole, head and body, before the client gets a 408 and the connection is closed", number,
           60.0),
    Option("--barge-in", "CBF_BARGE_IN", "what a caller's speech does while the gateway speaks, on calls whose "
           "audio reaches it (phone streams, WebRTC peers that send): vad stops at once, pause pauses and cancels "
           "after 0.5 s of speech, off leaves it to the controller", default="vad", choices=("vad", "pause", "off")),
    Option("--vad-threshold", "CBF_VAD_THRESHOLD", "Silero VAD speech probability for a voiced window", number, 0.5),
    Option("--vad-min-speech-ms", "CBF_VAD_MIN_SPEECH_MS", "voiced time before the caller's speech counts as "
           "started", number, 120.0),
    Option("--vad-min-silence-ms", "CBF_VAD_MIN_SILENCE_MS", "unvoiced time before it counts as stopped", number,
           300.0),
    Option("--echo-margin-db", "CBF_ECHO_MARGIN_DB", "the echo guard: caller audio more than this many dB below "
           "what the gateway is sending is taken for its own voice coming back (with the echo canceller on, only "
           "where --echo-guard is)", number, 15.0),
    Option("--echo-canceller", "CBF_ECHO_CANCELLER", "take the gateway's own voice coming back on a call (a phone "
           "line, a WebRTC peer's loudspeaker) out of the caller's audio (WebRTC's AEC3) before the VAD hears it "
           "and, unless its listen says \"aec\": false, the controller; false leaves the level rule "
           "(--echo-margin-db) alone, which cannot hear a caller quieter than its margin", boolean, True),
    Option("--echo-guard", "CBF_ECHO_GUARD", "with the echo canceller on, also hold the caller to --echo-margin-db "
           "below the gateway's voice (a last guard; it misses callers quieter than that)", boolean, False),
    Option("--vad-batch", "CBF_VAD_BATCH", "hear every call's VAD windows that fall due in one pass of the event "
           "loop in one batched model run (a third of the VAD's CPU per talking caller at 16 calls; each window "
           "waits a pass of the loop: under heavy load onset to clear's tail was longer, so off by default)",
           boolean, False),
    Option("--wyoming-port", "CBF_WYOMING_PORT", "serve Home Assistant's Wyoming TTS protocol on this TCP port "
           "(10200 is the usual one); off when not set", port),
    Option("--wyoming-host", "CBF_WYOMING_HOST", "address the Wyoming port listens on (Wyoming has no "
           "authentication: with API keys set the default is 127.0.0.1, else --host)"),
    Option("--wyoming-zeroconf", "CBF_WYOMING_ZEROCONF", "announce the Wyoming port by zeroconf as "
           "NAME._wyoming._tcp.local., for Home Assistant to discover (needs --wyoming-port); off when not set",
           _zeroconf_name),
    Option("--audiosocket-port", "CBF_AUDIOSOCKET_PORT", "serve Asterisk's AudioSocket protocol on this TCP port "
           "(AudioSocket() or Dial(AudioSocket/...) in the dialplan; each connection a call an agent drives by its "
           "UUID); off when not set", port),
    Option("--audiosocket-host", "CBF_AUDIOSOCKET_HOST", "address the AudioSocket port listens on (default: --host); "
           "beyond loopback it needs --audiosocket-key or --audiosocket-allow"),
    Option("--audiosocket-key", "CBF_AUDIOSOCKET_KEY", "a shared secret the dialplan tags each call's UUID with "
           "(docs/protocols/phone.md): a call whose UUID it did not tag, or tagged over 5 minutes from this server's "
           "clock, is hung up before any audio", secret=True),
    Option("--audiosocket-allow", "CBF_AUDIOSOCKET_ALLOW", "addresses or networks that may connect to the "
           "AudioSocket port, comma-separated (10.0.0.5,192.168.1.0/24); others are closed at once; none: any",
           _networks, ()),
    Option("--idle-timeout", "CBF_IDLE_TIMEOUT", "seconds a Wyoming connection, or an ElevenLabs socket without an "
           "inactivity_timeout query, may receive and send nothing before it is closed (not counting time its speech "
           "is under way and its audio not yet sent)", number, 20.0),
    Option("--max-unauthenticated", "CBF_MAX_UNAUTHENTICATED", "connections at once whose key may still come in a "
           "message (ElevenLabs sockets without a key header; phone media streams before their start; Wyoming "
           "connections before their first event); more "
           "are refused", whole, 64),
    Option("--twilio-auth-token", "CBF_TWILIO_AUTH_TOKEN", "Twilio auth token: /v1/twilio then refuses an upgrade "
           "without a valid X-Twilio-Signature", secret=True),
    Option("--webrtc-setup-timeout", "CBF_WEBRTC_SETUP_TIMEOUT", "seconds a WebRTC peer (/v1/webrtc/offer, "
           "/v1/whep) has to connect, with its data channel where it offered one, before its session is dropped",
           number, 15.0),
    Option("--ice-server", "CBF_ICE_SERVERS", "STUN/TURN URLs, comma-separated (turn:user:pass@host:port); "
           "none by default", comma_list, ()),
    Option("--rtc-ports", "CBF_RTC_PORTS", "UDP port range LOW-HIGH for WebRTC media (host networking behind a "
           "firewall); with --processes each process gets its own slice; none = any port the kernel picks"),
    Option("--engine-url", "CBF_ENGINE_URL", "use running engine workers (ws://host:port, unix:/path, or "
           "dns+ws://name:port for every address of a name, re-resolved; comma-separated; utterances go to the "
           "least busy) instead of starting one", engine_urls, ()),
    Option("--engine-devices", "CBF_ENGINE_DEVICES", "start one embedded engine worker per entry, each supervised "
           "(restarted when it dies) and all sharing the utterances (least busy first, failover among them): "
           "cuda:N, GPU-<uuid> or cpu (cpu,cpu: two CPU workers), comma-separated, or auto (every card nvidia-smi "
           "lists that CUDA_VISIBLE_DEVICES leaves visible; none listed: one worker, on --device auto); each entry "
           "is its worker's --device; not set: one worker", engine_devices, ()),
    Option("--engine-resolve-interval", "CBF_ENGINE_RESOLVE_INTERVAL", "seconds between resolutions of a "
           "dns+ws:// engine URL (new addresses are added, vanished ones drained)", number, 5.0),
    Option("--failover-wait", "CBF_FAILOVER_WAIT", "seconds an utterance whose worker went away waits for another "
           "(or the restarted one) to go on with the rest of its text, and a new one that finds no worker "
           "connected waits for one; 0 = no failover: either ends with engine_unavailable at once", number, 10.0),
    Option("--max-failovers", "CBF_MAX_FAILOVERS", "times one utterance may move to another worker before it ends "
           "with engine_unavailable (a text that kills every worker it reaches)", whole, 2),
    Option("--cache-mib", "CBF_CACHE_MIB", "the prompt cache: MiB of whole utterances kept in memory, the least "
           "recently used dropped first; a repeated prompt (voice, text, reading settings) is served from it "
           "(docs/prompt-cache.md); 0 = off", number, 64.0),
    Option("--cache-dir", "CBF_CACHE_DIR", "a directory the prompt cache also keeps its entries in, so they outlive "
           "a restart; one that cannot be used or fills up is a warning (the cache goes on in memory); none by "
           "default"),
    Option("--cache-dir-mib", "CBF_CACHE_DIR_MIB", "MiB of entries kept in --cache-dir, the least recently used "
           "deleted first", number, 1024.0),
    Option("--cache-shared-across-keys", "CBF_CACHE_SHARED_ACROSS_KEYS", "with API keys set, let a prompt cached "
           "for one key be served to another (off: each key hears only its own, so no tenant can tell by timing what "
           "another said)", boolean, False),
    Option("--prompts", "CBF_PROMPTS", "a file of prompts said into the prompt cache at start, one a line (text, or "
           "a JSON object with text, voice, latency, normalize, speed, lexicons); a bad line refuses the start"),
    Option("--processes", "CBF_PROCESSES", "gateway processes sharing the port (SO_REUSEPORT) and one engine "
           "worker (or the --engine-url ones); 40 Opus streams per process measured", whole, 1),
    Option("--reuse-port", "CBF_REUSE_PORT", "share the port with other processes that set it too (SO_REUSEPORT); "
           "--processes sets it for its own", boolean, False),
    Option("--drain-grace", "CBF_DRAIN_GRACE", "seconds a drain (SIGTERM, SIGHUP, POST /v1/admin/drain) lets the "
           "utterances in flight go on before it closes the rest with 1012 (above the longest utterance: "
           "--max-text-chars 5000 is about 5.5 min of speech)", number, 360.0),
)

TRACE_OPTIONS = (
    Option("--otlp-endpoint", "CBF_OTLP_ENDPOINT", "export a trace of every utterance, gateway and worker, over "
           "OTLP/HTTP to this collector (http://HOST:4318, or a full URL ending in /v1/traces); the embedded worker "
           "gets it too; off when not set"),
    Option("--trace-text", "CBF_TRACE_TEXT", "put the callers' text in the traces (each text piece, each chunk's "
           "text); never audio", boolean, False),
)

ENGINE_SECRET = (Option("--engine-secret", "CBF_ENGINE_SECRET", "shared secret of a gateway and its engine workers: a "
                        "worker refuses connections without it, a gateway presents it to --engine-url workers (the "
                        "embedded worker gets a generated one)", secret=True),)

GATE_CHECKS = ("speed", "similarity", "intelligibility", "seams")


def _checks(value: str) -> tuple[str, ...]:
    chosen = comma_list(value)
    if not chosen or set(chosen) - set(GATE_CHECKS):
        raise argparse.ArgumentTypeError(f"expected some of {','.join(GATE_CHECKS)}, got {value!r}")
    return tuple(c for c in GATE_CHECKS if c in chosen)


GATE_OPTIONS = (
    Option("--checks", "CBF_GATE_CHECKS", "criteria to judge, comma-separated: speed (ttfa, rtf, underrun, "
           "watermark), similarity, intelligibility, seams", _checks, GATE_CHECKS),
    Option("--texts", "CBF_GATE_TEXTS", "a file of texts, one a line, instead of the built-in four", Path),
    Option("--reference-dir", "CBF_GATE_REFERENCE_DIR", "reference clips (wav, flac, ogg, mp3; at least 5 s of one "
           "voice each) to clone on both servers (default: the two synthetic ones in cbf_tools/gate/references)", Path),
    Option("--model-dir", "CBF_MODEL_DIR", "Chatterbox weights: with ve.safetensors there, similarity uses "
           "Chatterbox's own voice encoder instead of Resemblyzer's", Path),
    Option("--similarity-margin", "CBF_GATE_SIMILARITY_MARGIN", "how far below the baseline's similarity to its "
           "reference each clone may fall (cosine)", number, 0.03),
    Option("--min-similarity", "CBF_GATE_MIN_SIMILARITY", "the similarity each clone needs when there is no "
           "baseline (cosine)", number, 0.75),
    Option("--wer-margin", "CBF_GATE_WER_MARGIN", "how much higher than the baseline's the word error rate may be, "
           "as a fraction of the baseline's (at least 0.05 absolute)", number, 0.25),
    Option("--max-wer", "CBF_GATE_MAX_WER", "the word error rate the candidate may never exceed (alone when there "
           "is no baseline; noise and silence score 1)", number, 0.95),
    Option("--report-dir", "CBF_GATE_REPORT_DIR", "where report.json and the blind listening page go", Path,
           Path("gate-report")),
    Option("--seed", "CBF_GATE_SEED", "seed of the listening page's X/Y order (default: a random one)", whole),
)

LISTEN_OPTION = Option("--listen", "CBF_LISTEN", "HOST:PORT or unix:/path", listen_address, "127.0.0.1:8198")

LOG_OPTION = Option("--log-level", "CBF_LOG_LEVEL", "log level", default="info",
                    choices=("debug", "info", "warning", "error"))


def engine_settings(args: argparse.Namespace):  # -> EngineSettings (imported lazily: no torch in the gateway)
    from engine.settings import EngineSettings

    return EngineSettings(
        engine=args.engine, model_dir=args.model_dir, weights=args.weights, device=args.device, dtype=args.dtype,
        tf32=args.tf32, sdpa=args.sdpa, decode=args.decode, vocode=args.vocode, batch_slots=args.batch_slots, voices_dir=args.voices_dir,
        lexicons_dir=args.lexicons_dir,
        vocode_window_s=args.vocode_window_ms / 1000,
        prompt_cache_voices=args.prompt_cache_voices,
        sim_fixed_s=args.sim_fixed, sim_rtf=args.sim_rtf,
        http_url=args.engine_http_url, http_dialect=args.engine_http_dialect, http_key=args.engine_http_key,
        http_concurrency=args.engine_http_concurrency, http_timeout_s=args.engine_http_timeout,
        http_voices=args.engine_http_voices,
        first_chunk_words=args.first_chunk_words, max_chunk_chars=args.max_chunk_chars,
        safety_margin_s=args.safety_margin, shared_chunk_s=args.shared_chunk_seconds,
        first_audio_target_s=args.first_audio_target, unload_after_s=args.unload_after,
        gpu_memory_gib=args.gpu_memory,
    )


def engine_argv(args: argparse.Namespace) -> list[str]:
    """The engine flags of ``args`` as a command line for a worker process. A secret one goes into this process's
    environment instead, which the worker inherits: never onto a command line."""
    argv: list[str] = []
    for option in (*ENGINE_OPTIONS, *(TRACE_OPTIONS if hasattr(args, "otlp_endpoint") else ())):
        value = getattr(args, option.dest)
        if value is None or value == ():
            continue
        if option.secret:
            os.environ[option.env] = str(value)
        else:
            argv += [option.flag, ",".join(value) if isinstance(value, tuple) else str(value)]
    return argv


def options_env(args: argparse.Namespace, options: Sequence[Option]) -> dict[str, str]:
    """The values of ``options`` in ``args`` as their environment variables (for a child process: no secret on its
    command line)."""
    env: dict[str, str] = {}
    for option in options:
        value = getattr(args, option.dest)
        if isinstance(value, tuple):
            env[option.env] = ",".join(value)
        elif isinstance(value, bool):
            env[option.env] = "true" if value else "false"
        elif value is not None:
            env[option.env] = str(value)
    return env


def _setup_logging(level: str) -> None:
    logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        stream=sys.stderr)


def _refuse(args: argparse.Namespace, reason: str, exc: BaseException | None = None) -> int:
    """A start-up failure no restart fixes: one sentence with the fix (the traceback only at --log-level debug).
    A worker started by a supervisor writes it to its --refusal-report file instead, for the supervisor to say."""
    logging.getLogger("chatterbox_fast").debug("refusing to start", exc_info=exc)
    report = getattr(args, "refusal_report", None)
    if report:
        Path(report).write_text(reason + "\n")
    else:
        print(f"chatterbox-fast {args.command}: refusing to start: {reason}", file=sys.stderr)
    from gateway.engine_link.process import REFUSED_EXIT_CODE

    return REFUSED_EXIT_CODE


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from gateway.app import create_app
    from gateway.host.bind import CannotListen, bind_tcp
    from gateway.host.draining import DrainingServer
    from gateway.host.protocols import BoundedWebSocketProtocol, http_protocol
    from gateway.engine_link.devices import resolve as resolve_devices
    from gateway.engine_link.discovery import PREFIX, parse_dns_url
    from gateway.listen.detector import VadConfig
    from gateway.guard.operator_safety import redact_keys_in_logs
    from gateway.settings import GatewaySettings
    from gateway.webrtc.signalling import ice_servers
    from gateway.webrtc.udp_ports import parse_port_range, split_range
    from gateway.wyoming.server import listen_host
    from gateway.telephony.audiosocket_server import listen_refusal
    from engine.traces import traces_url

    if args.processes < 1:
        print(f"chatterbox-fast serve: --processes (CBF_PROCESSES) expected at least 1, got {args.processes}",
              file=sys.stderr)
        return 2
    if args.token_secret is not None and len(args.token_secret) < 16:  # (its value is never said)
        print(f"chatterbox-fast serve: --token-secret (CBF_TOKEN_SECRET) expected at least 16 characters, got "
              f"{len(args.token_secret)}", file=sys.stderr)
        return 2
    if (tls_refusal := tls_problem(args.tls_cert, args.tls_key)) is not None:
        print(f"chatterbox-fast serve: {tls_refusal}", file=sys.stderr)
        return 2
    audiosocket_host = args.audiosocket_host or args.host
    if args.audiosocket_port is not None and (refusal := listen_refusal(audiosocket_host, args.audiosocket_key,
                                                                         args.audiosocket_allow)):
        print(f"chatterbox-fast serve: {refusal}", file=sys.stderr)
        return 2
    if args.wyoming_zeroconf and args.wyoming_port is None:
        print("chatterbox-fast serve: --wyoming-zeroconf (CBF_WYOMING_ZEROCONF) announces the Wyoming port: set "
              "--wyoming-port (CBF_WYOMING_PORT) too, e.g. 10200", file=sys.stderr)
        return 2
    if (refusal := engine_devices_problem(args)) is not None:
        print(f"chatterbox-fast serve: {refusal}", file=sys.stderr)
        return 2
    try:
        ice_servers(args.ice_server)
        if args.otlp_endpoint:
            traces_url(args.otlp_endpoint)
        for url in args.engine_url:
            if url.startswith(PREFIX):
                parse_dns_url(url)
        rtc_ports = parse_port_range(args.rtc_ports) if args.rtc_ports else None
        vad = VadConfig(args.vad_threshold, args.vad_min_speech_ms, args.vad_min_silence_ms, args.echo_margin_db)
        cache = cache_settings(args)
        if rtc_ports is not None:
            split_range(*rtc_ports, args.processes)
    except ValueError as exc:
        print(f"chatterbox-fast serve: {exc}", file=sys.stderr)
        return 2
    if args.keys_file:
        from gateway.guard.keys_file import KeysFileError
        from gateway.guard.tenancy import load

        try:
            load(args.keys_file)
        except KeysFileError as exc:
            return _refuse(args, f"the keys file {args.keys_file}, {exc}")
    worker_devices = resolve_devices(args.engine_devices, os.environ) if args.engine_devices else ()
    if args.engine_devices == ("auto",):
        logging.getLogger("chatterbox_fast.gateway").info(
            "--engine-devices auto: %s", ", ".join(worker_devices) or "nvidia-smi lists no card: one worker, on its "
            "own --device auto (the CPU where torch sees no GPU)")
    wyoming_sock = audiosocket_sock = None
    try:
        sock = bind_tcp(args.host, args.port, "--port (CBF_PORT)", reuse_port=args.reuse_port)
        if args.wyoming_port is not None:
            wyoming_sock = bind_tcp(listen_host(args.host, args.wyoming_host, bool(args.api_key or args.keys_file)),
                                    args.wyoming_port,
                                    "--wyoming-port (CBF_WYOMING_PORT)", reuse_port=args.reuse_port)
        if args.audiosocket_port is not None:
            audiosocket_sock = bind_tcp(audiosocket_host, args.audiosocket_port,
                                        "--audiosocket-port (CBF_AUDIOSOCKET_PORT)", reuse_port=args.reuse_port)
    except CannotListen as exc:
        return _refuse(args, str(exc), exc)
    if args.processes > 1:  # the ports are free: the gateway processes bind them together
        sock.close()
        for extra in (wyoming_sock, audiosocket_sock):
            if extra is not None:
                extra.close()
        from gateway.host.processes import serve_processes

        env = {**os.environ, **options_env(args, (*GATEWAY_OPTIONS, *ENGINE_SECRET, *ENGINE_OPTIONS, *TRACE_OPTIONS,
                                                  LOG_OPTION))}
        if not args.token_secret:  # one secret for every process: a token minted by one is taken by the others
            import secrets

            env["CBF_TOKEN_SECRET"] = secrets.token_urlsafe(32)
        env.pop("CBF_ENGINE_DEVICES", None)  # the supervisor starts them; each gateway process gets their URLs
        code, refusal = serve_processes(args.processes, env, engine_argv(args) + ["--log-level", args.log_level],
                                        worker_devices,
                                        split_range(*rtc_ports, args.processes) if rtc_ports else None,
                                        args.drain_grace)
        return _refuse(args, refusal) if refusal else code
    settings = GatewaySettings(
        host=args.host, port=sock.getsockname()[1], api_keys=args.api_key, keys_file=args.keys_file,
        token_secret=args.token_secret, cors_origins=args.cors_origins,
        max_sessions=args.max_sessions,
        max_text_chars=args.max_text_chars, max_upload_bytes=args.max_upload_bytes, ice_servers=args.ice_server,
        webrtc_setup_timeout_s=args.webrtc_setup_timeout,
        stall_timeout_s=args.stall_timeout, client_lead_s=args.client_lead, idle_timeout_s=args.idle_timeout,
        barge_in=args.barge_in, vad=vad, echo_canceller=args.echo_canceller, echo_guard=args.echo_guard,
        vad_batch=args.vad_batch,
        max_unauthenticated=args.max_unauthenticated, twilio_auth_token=args.twilio_auth_token,
        engine_urls=args.engine_url, engine_secret=args.engine_secret,
        engine_args=tuple(engine_argv(args) + ["--log-level", args.log_level]), engine_devices=worker_devices,
        engine_resolve_interval_s=args.engine_resolve_interval,
        failover_wait_s=args.failover_wait, max_failovers=args.max_failovers, rtc_ports=rtc_ports,
        wyoming_zeroconf=args.wyoming_zeroconf, audiosocket_key=args.audiosocket_key,
        audiosocket_allow=args.audiosocket_allow, cache=cache,
        shared_dir=os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None, drain_grace_s=args.drain_grace,
        supervisor_pid=int(os.environ["CBF_SUPERVISOR_PID"]) if os.environ.get("CBF_SUPERVISOR_PID") else None,
        otlp_endpoint=args.otlp_endpoint, trace_text=args.trace_text, tls=bool(args.tls_cert),
    )
    refusals: list[str] = []

    def engine_refused(reason: str) -> None:  # the first worker cannot start: stop serving and say why
        refusals.append(reason)
        server.should_exit = True

    app = create_app(settings, on_engine_refusal=engine_refused, wyoming_socket=wyoming_sock,
                     audiosocket_socket=audiosocket_sock)
    server = DrainingServer(uvicorn.Config(app, log_level=args.log_level, timeout_graceful_shutdown=5,
                                           http=http_protocol(args.request_timeout), ws=BoundedWebSocketProtocol,
                                           ws_max_size=1024 * 1024, ssl_certfile=args.tls_cert,
                                           ssl_keyfile=args.tls_key),
                            app.state.gateway.drain)
    redact_keys_in_logs()  # after uvicorn's logging set-up
    # A SIGTERM once the server has stopped serving (a second one, during its shutdown) is a stop too, not the default
    # action, which would end this process with 143 under a container's init, where it is not PID 1.
    signal.signal(signal.SIGTERM, lambda *_: setattr(server, "should_exit", True))
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn raises the SIGINT it caught again once it has shut down: Ctrl-C, no traceback
        return 128 + signal.SIGINT
    if server.interrupted:  # the same, where SIGINT was ignored when this process started, so raising it did nothing
        return 128 + signal.SIGINT
    return _refuse(args, refusals[0]) if refusals else 0


def engine_devices_problem(args: argparse.Namespace) -> str | None:
    """Why ``--engine-devices`` contradicts another setting, in one sentence (None: it does not, or is not set)."""
    if not args.engine_devices:
        return None
    if args.engine_url:
        return ("--engine-devices (CBF_ENGINE_DEVICES) starts embedded workers and --engine-url (CBF_ENGINE_URL) "
                "uses running ones: set one of them")
    if args.device != "auto":
        return (f"--engine-devices (CBF_ENGINE_DEVICES) gives each worker its device, so --device (CBF_DEVICE) "
                f"{args.device} would be overridden: leave --device unset, or list its cards in --engine-devices")
    return None


def tls_problem(cert: str | None, key: str | None) -> str | None:
    """Why ``--tls-cert`` and ``--tls-key`` cannot serve TLS, in one sentence (None: they can, or neither is set):
    one without the other, a file missing or unreadable, not PEM, an encrypted key, or a key that is not the
    certificate's. Checked with the ``ssl`` module as uvicorn will load them, before anything starts."""
    import ssl

    if not cert and not key:
        return None
    if not cert or not key:
        given, missing = ("--tls-cert (CBF_TLS_CERT)", "--tls-key (CBF_TLS_KEY)") if cert else (
            "--tls-key (CBF_TLS_KEY)", "--tls-cert (CBF_TLS_CERT)")
        return f"{given} is set but {missing} is not: TLS needs the certificate and its private key"
    for flag, path in (("--tls-cert (CBF_TLS_CERT)", cert), ("--tls-key (CBF_TLS_KEY)", key)):
        try:
            with open(path, "rb") as file:
                file.read(1)
        except OSError as exc:
            return f"{flag} {path} cannot be read ({exc.strerror or exc})"

    class Encrypted(Exception):
        pass

    def no_password() -> bytes:
        raise Encrypted

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_verify_locations(cafile=cert)  # the certificate alone: a bad one is named as such
    except ssl.SSLError as exc:
        return f"--tls-cert (CBF_TLS_CERT) {cert} holds no PEM certificate ({exc.reason or exc})"
    try:
        context.load_cert_chain(cert, key, password=no_password)
    except Encrypted:
        return f"--tls-key (CBF_TLS_KEY) {key} is encrypted: give the key unencrypted (openssl pkey -in {key} -out FILE)"
    except ssl.SSLError as exc:
        if exc.reason in ("KEY_VALUES_MISMATCH", "NO_CERTIFICATE_ASSIGNED"):  # (the latter: another kind of key)
            return f"--tls-key (CBF_TLS_KEY) {key} is not the private key of the certificate in {cert}"
        return f"--tls-key (CBF_TLS_KEY) {key} holds no PEM private key"
    return None


def cache_settings(args: argparse.Namespace) -> Any:
    """The prompt cache's settings, its --prompts file read and checked (``ValueError`` naming the bad line)."""
    from gateway.prompt_cache.prompts_file import parse_prompts
    from gateway.prompt_cache.store import CacheSettings

    if args.cache_mib < 0 or args.cache_dir_mib < 0:
        raise ValueError("--cache-mib and --cache-dir-mib cannot be negative")
    prompts: list[Any] = []
    if args.prompts:
        try:
            content = Path(args.prompts).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"--prompts {args.prompts}: cannot read it ({exc})") from None
        try:
            prompts = parse_prompts(content, args.max_text_chars)
        except ValueError as exc:
            raise ValueError(f"--prompts {args.prompts}: {exc}") from None
    return CacheSettings(args.cache_mib, args.cache_dir, args.cache_dir_mib, args.cache_shared_across_keys,
                         tuple(prompts))


def cmd_engine(args: argparse.Namespace) -> int:
    os.environ.setdefault("TQDM_DISABLE", "1")  # upstream S3Gen draws a progress bar on every chunk
    from engine.startup_checks import Misconfigured, start_worker
    from engine.traces import start_tracing, traces_url
    from engine.worker import ENGINE_SERVICE, serve_worker
    from gateway.host.bind import CannotListen, bind_tcp

    from engine.watchdog import exit_on_sticky_errors, exit_with_parent, watch_device
    from gateway.engine_link.process import STALLED_EXIT_CODE

    if args.parent_pid:  # from the start: a gateway killed while this worker loads its model takes it along
        exit_with_parent(args.parent_pid)
    host, _, port = args.listen.rpartition(":")
    try:
        if args.otlp_endpoint:
            traces_url(args.otlp_endpoint)
        sock = None if args.listen.startswith("unix:") else bind_tcp(host or "127.0.0.1", int(port),
                                                                      "--listen (CBF_LISTEN)")
        worker = start_worker(engine_settings(args))
    except (CannotListen, Misconfigured, ValueError) as exc:
        return _refuse(args, str(exc), exc)
    if args.otlp_endpoint:
        worker.traces = start_tracing(args.otlp_endpoint, ENGINE_SERVICE, args.trace_text)
    watch_device(worker.synth.watched(), args.device_stall_seconds, STALLED_EXIT_CODE, args.refusal_report)
    exit_on_sticky_errors(STALLED_EXIT_CODE, args.refusal_report)

    async def serve_until_terminated() -> None:  # SIGTERM (docker stop, the gateway stopping it) is a clean exit
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await serve_worker(worker, args.listen, stop=stop, sock=sock, secret=args.engine_secret)

    asyncio.run(serve_until_terminated())
    worker.traces.shutdown()  # the spans still queued
    # Nothing is left to save: skip the interpreter's teardown of torch and the model (seconds on a busy host, inside
    # the gateway's and `docker stop`'s grace periods).
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def cmd_say(args: argparse.Namespace) -> int:
    from cbf_tools.say import dry_run, say

    if args.dry_run:
        print(dry_run(args.text, args.normalize))
        return 0
    return asyncio.run(say(args, engine_argv(args)))


def cmd_bench_engine(args: argparse.Namespace) -> int:
    from cbf_tools.bench import engine as bench_engine

    return bench_engine.run(args, engine_argv(args), engine_settings(args))


def cmd_bench_text(args: argparse.Namespace) -> int:
    from cbf_tools.bench import text as bench_text

    return bench_text.run(args)


def cmd_bench_gateway(args: argparse.Namespace) -> int:
    from cbf_tools.bench import gateway as bench_gateway

    return bench_gateway.run(args, engine_argv(args))


def cmd_bench_cpu(args: argparse.Namespace) -> int:
    from cbf_tools.bench import cpu as bench_cpu

    return bench_cpu.run(args, engine_argv(args))


def cmd_bench_edge(args: argparse.Namespace) -> int:
    from cbf_tools.bench import edge as bench_edge

    return bench_edge.run(args, engine_argv(args))


def cmd_bench_faults(args: argparse.Namespace) -> int:
    from cbf_tools.bench import faults as bench_faults

    return bench_faults.run(args)


def cmd_bench_tenants(args: argparse.Namespace) -> int:
    from cbf_tools.bench import tenants as bench_tenants

    return bench_tenants.run(args)


def cmd_bench_tokens(args: argparse.Namespace) -> int:
    from cbf_tools.bench import tokens as bench_tokens

    return bench_tokens.run(args)


def cmd_bench_soak(args: argparse.Namespace) -> int:
    from cbf_tools.bench import soak as bench_soak

    return bench_soak.run(args)


def cmd_bench_fleet(args: argparse.Namespace) -> int:
    from cbf_tools.bench import fleet as bench_fleet

    return bench_fleet.run(args)


def cmd_bench_failover(args: argparse.Namespace) -> int:
    from cbf_tools.bench import failover as bench_failover

    return bench_failover.run(args)


def cmd_bench_drain(args: argparse.Namespace) -> int:
    from cbf_tools.bench import drain as bench_drain

    return bench_drain.run(args)


def cmd_bench_barge_in(args: argparse.Namespace) -> int:
    from cbf_tools.bench import barge_in as bench_barge_in

    return bench_barge_in.run(args)


def cmd_gate(args: argparse.Namespace) -> int:
    from cbf_tools.gate import deploy as deploy_gate

    return deploy_gate.run(args)


def cmd_doctor(args: argparse.Namespace) -> int:
    from cbf_tools.doctor import command as doctor

    return doctor.run(args, engine_settings(args), engine_argv(args))


def cmd_weights_download(args: argparse.Namespace) -> int:
    from cbf_tools import weights

    return weights.download(args.to)


def cmd_weights_verify(args: argparse.Namespace) -> int:
    from cbf_tools import weights

    return weights.verify(args.dir)


CONFIG_REFERENCE = "docs/configuration.md"
REGENERATE = ("make config-reference", f"chatterbox-fast config-reference > {CONFIG_REFERENCE}")


def config_reference() -> str:
    """docs/configuration.md: every command's flags, from this parser built with no CBF_* variable set (the code's
    defaults, never this shell's), the engine's flags once."""
    from gateway.config_reference import render

    saved = {name: value for name, value in os.environ.items() if name.startswith("CBF_")}
    for name in saved:
        del os.environ[name]
    try:
        parser = build_parser()
    finally:
        os.environ.update(saved)
    return render(parser, groups=[("Engine options", [option.flag for option in ENGINE_OPTIONS])],
                  regenerate=REGENERATE, check="tests/test_configuration_reference.py")


def cmd_config_reference(args: argparse.Namespace) -> int:
    sys.stdout.write(config_reference())
    return 0


def _api_key_default() -> str | None:
    """For the tools that call a server: CBF_API_KEY, else the first of the server's own CBF_API_KEYS."""
    keys = os.environ.get("CBF_API_KEYS", "").split(",")
    return os.environ.get("CBF_API_KEY") or keys[0].strip() or None


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="chatterbox-fast", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def command(parent: Any, name: str, help: str, run: Callable[[argparse.Namespace], int],
                *groups: Sequence[Option]) -> argparse.ArgumentParser:
        p = parent.add_parser(name, help=help)
        for group in groups:
            for option in group:
                option.add_to(p)
        LOG_OPTION.add_to(p)
        p.set_defaults(run=run)
        return p

    command(sub, "serve", "run the gateway (and its embedded engine worker)", cmd_serve, GATEWAY_OPTIONS,
            ENGINE_SECRET, TRACE_OPTIONS, ENGINE_OPTIONS)
    p = command(sub, "engine", "run an engine worker on its own", cmd_engine, ENGINE_OPTIONS, ENGINE_SECRET,
                TRACE_OPTIONS)
    LISTEN_OPTION.add_to(p)
    p.add_argument("--refusal-report", type=Path, default=os.environ.get("CBF_REFUSAL_REPORT"),
                   help="when the worker cannot start (exit code 3), write the reason here instead of to stderr; "
                        "when its device stalls (exit code 4), write that here too (for a supervisor) "
                        "[env CBF_REFUSAL_REPORT]")
    p.add_argument("--parent-pid", type=whole, help="exit when this process (the gateway that started the worker) is "
                                                  "gone")
    p = command(sub, "say", "speak one text into a WAV file through a worker", cmd_say, ENGINE_OPTIONS)
    p.add_argument("text")
    p.add_argument("--voice", default="default")
    p.add_argument("--out", type=Path, default=Path("out.wav"))
    p.add_argument("--normalize", choices=NORMALIZE_MODES, default=None,
                   help="how the text is read: auto and on as a person would say it, off as written (default auto)")
    p.add_argument("--dry-run", action="store_true",
                   help="print what would be spoken, and what each rewritten piece of the text becomes; no audio")

    bench = sub.add_parser("bench", help="benchmarks that print figures").add_subparsers(dest="target", required=True)
    p = command(bench, "engine", "time to first chunk and real-time factor", cmd_bench_engine, ENGINE_OPTIONS,
                ENGINE_SECRET)
    p.add_argument("--runs", type=whole, default=3, help="times each text is spoken (after one warm-up)")
    p.add_argument("--voice", default="default")
    p.add_argument("--engine-url", default=None, help="bench a running worker instead of starting one")
    p = command(bench, "text", "what the text front end costs: a text read whole, each streamed token", cmd_bench_text)
    p.add_argument("--repeats", type=whole, default=200, help="times each text is read, each way")
    p.add_argument("--json", action="store_true", help="print only the JSON object")
    p.add_argument("--cases", type=Path, default=None,
                   help="score the front end on this file of written/spoken pairs (TSV with a header, or JSON lines)")
    p.add_argument("--readings", type=Path, default=None,
                   help="with --cases: score these readings (a TSV of written and reading) instead of the front end's")
    p.add_argument("--judged", type=Path, default=None,
                   help="with --cases: our verdicts on misses (a TSV of written, reading, verdict, why): a miss judged "
                        "same-words or convention counts as acceptable, dubious is set aside, and one whose exact "
                        "reading has no verdict is unjudged and stays a miss")
    p.add_argument("--locale", choices=("en-US", "en-GB"), default=None, help="with --cases: the locale read in")
    p.add_argument("--misses", type=whole, default=0, help="with --cases: print this many misses")
    p = command(bench, "gateway", "client-side latency through a transport", cmd_bench_gateway, ENGINE_OPTIONS,
                TRACE_OPTIONS)
    _bench_gateway_arguments(p)
    p = command(bench, "cpu", "CPU per WebRTC stream-second of one gateway process vs a bare aiortc peer, each pinned "
                "to one core", cmd_bench_cpu, ENGINE_OPTIONS)
    _bench_cpu_arguments(p)
    p = command(bench, "edge", "first audio of the product vs a bare aiortc + Starlette peer with an instant tone",
                cmd_bench_edge, ENGINE_OPTIONS)
    _espeak_default(p)
    p.add_argument("--rounds", type=whole, default=10, help="alternating rounds (each: every measure, both sides)")
    p.add_argument("--text", default=None, help="what each utterance says (default: the issue 24 sentence)")
    p.add_argument("--no-chrome", action="store_true", help="skip Chromium even where Playwright and it are installed")
    p = command(bench, "faults", "hostile inputs on every JSON surface: server errors, dropped engine connections, "
                "leaked sessions and client connections (all must be 0)", cmd_bench_faults)
    p.add_argument("--count", type=whole, default=1000, help="generated inputs per surface")
    p.add_argument("--seeds", type=whole, default=1, help="runs on the same server, seeds --seed, --seed + 1, ...; "
                   "then one line of their totals")
    p.add_argument("--request-timeout", type=number, default=60.0, help="--url's --request-timeout, which its slow "
                   "clients wait out (a server started here runs with 5)")
    p.add_argument("--token-secret", default=os.environ.get("CBF_TOKEN_SECRET") or None,
                   help="--url's --token-secret, where known: the tokens surface then signs claims the server never "
                   "minted with it too [env CBF_TOKEN_SECRET]")
    p.add_argument("--allowed-origin", help="one origin of --url's --cors-origins, where known: the origins surface "
                   "then tries near misses of it and checks it is still allowed")
    _served_bench_arguments(p)
    p = command(bench, "soak", "callers of every transport that speak, barge in, stall and hang up for minutes: "
                "errors, first audio, leaked sessions and connections, gateway and worker memory; chaos: workers "
                "killed, gateway processes restarted", cmd_bench_soak)
    p.add_argument("--minutes", type=number, default=10.0)
    p.add_argument("--callers", "--sessions", dest="sessions", type=whole, default=20,
                   help="concurrent callers of every transport, shared as the flags below say (each unsaid: a share "
                        "of what is left), the WebSocket's the rest")
    for name, what in (("webrtc", "use WebRTC (Opus and PCMU in turn)"),
                       ("phone", "place phone calls (Twilio, Telnyx, Asterisk, jambonz, Plivo, Vonage, Exotel, "
                                 "FreeSWITCH and AudioSocket in turn)"),
                       ("sse", "use OpenAI's SSE speech stream"), ("http", "stream POST /v1/tts"),
                       ("elevenlabs", "use ElevenLabs' multi-stream-input socket"),
                       ("cartesia", "use Cartesia's socket (/cartesia/tts/websocket)"),
                       ("deepgram", "use Deepgram's speak socket"), ("vapi", "call the Vapi custom-voice webhook"),
                       ("wyoming", "use the Wyoming port (none with --url unless --wyoming-port is given)")):
        p.add_argument(f"--{name}", type=whole, help=f"how many of the callers {what} (default: its share)")
    p.add_argument("--phone-stacks", type=comma_list, default=None, help="the phone stacks the phone callers call "
                   "from, in turn, comma-separated (default: twilio,telnyx,asterisk,jambonz,freeswitch,audiosocket)")
    p.add_argument("--report-every", type=number, default=60.0, help="seconds between the lines printed as it runs")
    p.add_argument("--warm-up", type=number, default=5.0, help="minutes of the run (at most half) left out of the "
                   "memory growth")
    p.add_argument("--max-growth", type=number, default=2.0,
                   help="MiB per minute the gateway's memory may grow after the warm-up (runs of 4 min or more)")
    p.add_argument("--processes", type=whole, default=1, help="the server's gateway processes (serve --processes; "
                   "phone callers then use jambonz only)")
    p.add_argument("--workers", type=whole, default=0, help="engine workers the soak starts itself for the server "
                   "(--engine-url); 0: the server's embedded one")
    p.add_argument("--sim-rtf", type=number, help="the simulated engine at this real-time factor (eSpeak slowed "
                   "down, as a GPU model speaks) instead of eSpeak: utterances are in flight when a worker dies")
    p.add_argument("--kill-worker-every", type=number, metavar="S", help="chaos: SIGKILL an engine worker every S "
                   "seconds (the embedded one; with --workers, the soak's own in turn)")
    p.add_argument("--restart-gateway-every", type=number, metavar="S", help="chaos (with --processes 2 or more): "
                   "SIGTERM one gateway process every S seconds, none while the last one still drains")
    p.add_argument("--unload-after", type=positive_seconds, metavar="S", help="the server's (and the soak's own "
                   "workers') --unload-after: the model freed after S s with no utterance, reloaded by the next")
    p.add_argument("--gap", type=number, default=0.0, metavar="S", help="every caller keeps quiet in the second half "
                   "of each 2 x S s, all together, so the server goes idle (with --unload-after: unloads and reloads)")
    _served_bench_arguments(p)

    p = command(bench, "failover", "utterances whose engine worker is SIGKILLed mid-way while another is up: "
                "completed, gaps, every word said once", cmd_bench_failover)
    p.add_argument("--utterances", type=whole, default=100, help="utterances, WebSocket and HTTP in turn, one "
                   "killed worker each")
    p.add_argument("--sim-rtf", type=number, default=3.0, help="the simulated workers' real-time factor")
    p = command(bench, "fleet", "2 gateways x 2 engine workers behind nginx on this host, then one of each killed",
                cmd_bench_fleet)
    p.add_argument("--ws-sessions", type=whole, default=20, help="WebSocket sessions through the balancer")
    p.add_argument("--webrtc-sessions", type=whole, default=4, help="WebRTC sessions through the balancer")
    p.add_argument("--steady", type=number, default=20.0, help="seconds before one gateway and one worker are killed")
    p.add_argument("--after", type=number, default=20.0, help="seconds the sessions go on after the kill")
    p.add_argument("--pause", type=number, default=0.5, help="seconds a session waits between utterances")
    p.add_argument("--stagger", type=number, default=4.0, help="seconds over which the sessions start, evenly")
    p = command(bench, "drain", "a rolling restart (SIGHUP) of serve --processes 2 on this host under calls: "
                "dropped calls (must be 0)", cmd_bench_drain)
    p.add_argument("--calls", type=whole, default=50, help="calls placed, each on a fresh connection")
    p.add_argument("--interval", type=number, default=0.15, help="seconds between the starts of two calls")
    p.add_argument("--drain-grace", type=number, default=30.0, help="the server's --drain-grace")
    p = command(bench, "tokens", "what a token costs: mint, verify and a request's check (microseconds); forged and "
                "tampered tokens over seeds: none let through", cmd_bench_tokens)
    p.add_argument("--iterations", type=whole, default=20000, help="calls timed for each figure")
    p.add_argument("--seeds", type=whole, default=10, help="seeds of forgeries")
    p.add_argument("--forgeries", type=whole, default=1000, help="forged or tampered tokens per seed")
    p = command(bench, "tenants", "the keys file's checks per request and per chunk (microseconds); a tenant "
                "flooding at 10x its limit vs at 1x: another tenant's first audio p95", cmd_bench_tenants)
    p.add_argument("--checks", type=whole, default=20000, help="iterations of the in-process checks")
    p.add_argument("--sessions", type=whole, default=4, help="the steady tenant's streams at once")
    p.add_argument("--utterances", type=whole, default=5, help="utterances each steady stream speaks in a phase")
    p.add_argument("--rounds", type=whole, default=3, help="times the three phases (alone, flood 1x, 10x) alternate")
    p.add_argument("--flood-limit", type=whole, default=2, help="the flooding tenant's max_utterances_in_flight")
    p.add_argument("--flood-cpm", type=whole, default=1800, help="the flooding tenant's chars_per_minute")
    p.add_argument("--no-flood", action="store_true", help="only the in-process checks")
    p = command(bench, "barge-in", "phone callers talking over the gateway: onset to clear; false barge-ins on "
                "echo and noise; phone line models, the echo canceller beside the level rule; VAD CPU; a slow listener",
                cmd_bench_barge_in)
    p.add_argument("--trials", type=whole, default=50, help="trials of each kind: speech, echo, noise")
    p.add_argument("--concurrency", type=whole, default=1, help="calls at once (1: clean figures)")
    p.add_argument("--echo-db", type=number, default=-20.0, help="the echo trials' level of the gateway's own voice")
    p.add_argument("--line-trials", type=whole, default=10, help="trials of each phone line model "
                   "(cbf_tools/bench/line.py); 0: none")
    p.add_argument("--line-compare", type=boolean, default=True, help="the line models on a server with "
                   "--echo-canceller false too (the level rule), where the bench starts its own")
    p.add_argument("--webrtc-trials", type=whole, default=5, help="trials of each of the WebRTC line models (a "
                   "peer on a loudspeaker: a loud caller, callers 17 and 20 dB below the gateway, the echo alone), "
                   "with the line models; 0: none")
    p.add_argument("--lines-only", action="store_true", help="only the line models and the caller's side CPU")
    p.add_argument("--call-seconds", type=number, default=5.0, help="how long each echo, noise and slow-listener "
                   "call speaks, and each CPU window")
    p.add_argument("--seed", type=whole, default=1)
    p.add_argument("--url", help="a running server (http://HOST:PORT) instead of one started on eSpeak here")
    p.add_argument("--api-key", "--key", default=_api_key_default(),
                   help="API key for --url [env CBF_API_KEY, else the first of CBF_API_KEYS]")
    p.add_argument("--json", action="store_true", help="print only the JSON object")

    p = command(sub, "gate", "the A-B deploy gate against a running server", cmd_gate)
    _gate_arguments(p)
    p = command(sub, "doctor", "check this host, the weights and the engine; exit 0 when all pass", cmd_doctor,
                ENGINE_OPTIONS)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    weights = sub.add_parser("weights", help="fetch and check Chatterbox-Turbo weights").add_subparsers(
        dest="action", required=True)
    p = command(weights, "download", "download the weights into a directory (resumable), then verify them",
                cmd_weights_download)
    model_dir = os.environ.get("CBF_MODEL_DIR") or None
    p.add_argument("--to", type=Path, default=model_dir, required=model_dir is None,
                   help=f"the directory (then serve with --model-dir DIR) [env CBF_MODEL_DIR; default {model_dir!r}]")
    p = command(weights, "verify", "check every file of the from_local layout in a directory", cmd_weights_verify)
    p.add_argument("dir", type=Path, nargs="?" if model_dir else None, default=model_dir,
                   help=f"the directory [env CBF_MODEL_DIR; default {model_dir!r}]")
    sub.add_parser("config-reference", help=f"print the configuration reference ({CONFIG_REFERENCE}): every "
                   "command's flags, variables and defaults").set_defaults(run=cmd_config_reference, log_level="info")
    return parser


def _served_bench_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=whole, default=1)
    parser.add_argument("--url", help="a running server (http://HOST:PORT) instead of one started on eSpeak here")
    parser.add_argument("--wyoming-port", type=whole, help="--url's Wyoming port on the same host (without it, its "
                        "Wyoming surface is left out; a server started here has one)")
    parser.add_argument("--audiosocket-port", type=port, help="--url's AudioSocket port on the same host (without "
                        "it, its AudioSocket calls are left out; a server started here has one)")
    parser.add_argument("--audiosocket-key", default=os.environ.get("CBF_AUDIOSOCKET_KEY") or None,
                        help="--url's --audiosocket-key, where it has one [env CBF_AUDIOSOCKET_KEY]")
    parser.add_argument("--api-key", default=_api_key_default(),
                        help="API key for --url [env CBF_API_KEY, else the first of CBF_API_KEYS]")


def _espeak_default(parser: argparse.ArgumentParser) -> None:
    if not os.environ.get("CBF_ENGINE"):  # a started server uses eSpeak unless told otherwise: it answers at once
        parser.set_defaults(engine="espeak")
        for action in parser._actions:
            if action.dest == "engine" and action.help:
                action.help = action.help.replace("default 'auto'", "default 'espeak' here")


def _bench_gateway_arguments(parser: argparse.ArgumentParser) -> None:
    _espeak_default(parser)
    parser.add_argument("--transport", choices=("webrtc", "ws", "http"), default="webrtc")
    parser.add_argument("--sessions", type=whole, default=1, help="concurrent client sessions")
    parser.add_argument("--utterances", type=whole, default=3, help="utterances each session speaks, one at a time")
    parser.add_argument("--url", help="bench a running server (http://HOST:PORT) instead of starting one; "
                                      "server CPU is then not measured")
    parser.add_argument("--api-key", default=_api_key_default(),
                        help="API key for --url [env CBF_API_KEY, else the first of CBF_API_KEYS]")
    parser.add_argument("--keys-file", help="the started server's --keys-file (the key of one of its clients in "
                                            "--api-key): what its limit checks cost")
    parser.add_argument("--voice", default="default")
    parser.add_argument("--codec", choices=("opus", "pcmu", "pcma"), default="opus", help="WebRTC codec")
    parser.add_argument("--stagger", type=number, default=1.0,
                        help="seconds over which the sessions' first texts are spread evenly")
    parser.add_argument("--pause", type=number, default=0.2,
                        help="seconds a session waits after hearing an utterance before the next text (plus up to "
                             "0.2 s at random); longer pauses ask less of the engine per stream")
    parser.add_argument("--playback-rate", type=number, help="WebSocket: the listener plays the audio at this "
                        "multiple of real time as it arrives (0.9: a slow player) and counts its buffer running dry")
    parser.add_argument("--report-playout", action="store_true", help="WebSocket: the listener reports how far it "
                        "has played (playout, every 100 ms), so the server paces the utterance on it")
    parser.add_argument("--prompt-cache", action="store_true",
                        help="say each text twice in a row: first audio of prompt cache hits and of misses apart "
                             "(the server's --cache-mib must be above 0)")
    parser.add_argument("--tls", action="store_true",
                        help="ws and http: the started server serves https and wss with a certificate from a "
                             "throwaway CA the bench makes, and the clients trust that CA alone (not with --url)")
    parser.add_argument("--slow-readers", type=whole, default=0,
                        help="first open this many WebSocket clients that ask for 5,000 characters and never read: "
                             "the gateway's and workers' memory they cost, then the sessions beside them")
    parser.add_argument("--stall-timeout", type=positive_seconds,
                        help="the started server's --stall-timeout (with --url: that server's), which closes the slow "
                             "readers; their memory is read at half of it, 8 s at most (default: the server's, 30 s)")


def _bench_cpu_arguments(parser: argparse.ArgumentParser) -> None:
    if not os.environ.get("CBF_ENGINE"):  # the gateway's own work is measured: a cheap engine, fast enough for 40
        parser.set_defaults(engine="simulated")
        parser.set_defaults(**{dest: value for dest, env, value in (("sim_rtf", "CBF_SIM_RTF", 100.0),
                                                                    ("sim_fixed", "CBF_SIM_FIXED", 0.005))
                               if not os.environ.get(env)})
    parser.add_argument("--streams", type=whole_numbers, default=(10, 20, 40),
                        help="stream counts, comma-separated")
    parser.add_argument("--codecs", type=comma_list, default=("opus", "pcmu"), help="WebRTC codecs, comma-separated")
    parser.add_argument("--seconds", type=number, default=15.0, help="the measured window of each point")
    parser.add_argument("--warm-up", type=number, default=3.0, help="seconds of speech before each window")
    parser.add_argument("--server-core", type=whole, default=0, help="the core both servers are pinned to")
    parser.add_argument("--client-core", type=whole, default=1,
                        help="the core of this process, its listeners and (without --engine-core) the gateway's "
                             "engine worker")
    parser.add_argument("--engine-core", type=whole, help="the core of the gateway's engine worker (default: the "
                        "client core); its CPU is never counted as the gateway's")
    parser.add_argument("--client-nice", type=whole, default=10,
                        help="how much lower the listeners' thread runs than the rest (the servers keep their "
                             "priority): they stand in for callers on other machines, so an engine worker sharing "
                             "their core goes first")


def _gate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", required=True, help="the server under test, e.g. http://HOST:8197")
    parser.add_argument("--baseline-url", help="the current server, measured beside it for comparison (not judged)")
    parser.add_argument("--api-key", default=_api_key_default(),
                        help="API key for --url [env CBF_API_KEY, else the first of CBF_API_KEYS]")
    parser.add_argument("--baseline-api-key", default=os.environ.get("CBF_BASELINE_API_KEY"),
                        help="API key for --baseline-url [env CBF_BASELINE_API_KEY]")
    parser.add_argument("--voice", default="default", help="voice on the server under test")
    parser.add_argument("--baseline-voice", help="voice on the baseline (default: --voice); for a baseline without "
                                                 "voice upload add REF=NAME items naming its clone of each reference "
                                                 "clip, e.g. default,low=low.wav,high=high.wav")
    parser.add_argument("--max-ttfa-p50", type=number, default=0.6, help="fail unless TTFA p50 is below this (s)")
    parser.add_argument("--min-rtf", type=number, default=3.0, help="fail unless audio_s/total_s is above this")
    parser.add_argument("--min-watermark", type=number, default=0.5, help="PerTh confidence an utterance needs")
    parser.add_argument("--timeout", type=number, default=120.0, help="seconds to wait for any response bytes")
    parser.add_argument("--json-only", action="store_true", help="print only the JSON result line")
    for option in GATE_OPTIONS:
        option.add_to(parser)


def main(argv: Sequence[str] | None = None) -> None:
    from gateway.engine_link.process import WorkerRefused

    args = build_parser().parse_args(argv)
    _setup_logging(args.log_level)
    try:
        code = args.run(args)
    except WorkerRefused as exc:  # a tool's own worker cannot start
        code = _refuse(args, str(exc), exc)
    sys.exit(code)


if __name__ == "__main__":
    main()
