"""``chatterbox-fast``: every command and every flag, each flag with an environment-variable twin. One place.

This module imports nothing heavy at the top: ``serve`` never imports torch; ``engine`` imports it in its own process.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence


@dataclass(frozen=True)
class Option:
    flag: str
    env: str
    help: str
    type: Callable[[str], Any] = str
    default: Any = None
    choices: Sequence[str] | None = None

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        raw = os.environ.get(self.env)
        default = self.type(raw) if raw not in (None, "") else self.default
        parser.add_argument(self.flag, type=self.type, default=default, choices=self.choices,
                            help=f"{self.help} [env {self.env}; default {default!r}]")


def _bool(value: str) -> bool:
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {value!r}")


def _list(value: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in value.split(",") if item.strip())


ENGINE_OPTIONS = (
    Option("--engine", "CBF_ENGINE", "speech engine; auto = chatterbox-turbo when weights and a GPU are found, "
           "else the embedded eSpeak voice", default="auto",
           choices=("auto", "chatterbox-turbo", "espeak", "simulated")),
    Option("--model-dir", "CBF_MODEL_DIR", "directory with Chatterbox-Turbo weights (from_local layout)", Path),
    Option("--weights", "CBF_WEIGHTS", "pretrained weights, or random ones to measure compute cost only",
           default="pretrained", choices=("pretrained", "random")),
    Option("--device", "CBF_DEVICE", "torch device for chatterbox-turbo (auto, cuda, cuda:1, cpu)", default="auto"),
    Option("--dtype", "CBF_DTYPE", "chatterbox-turbo dtype (auto = bfloat16 on CUDA)", default="auto",
           choices=("auto", "bfloat16", "float16", "float32")),
    Option("--tf32", "CBF_TF32", "allow TF32 matmuls on CUDA", _bool, True),
    Option("--sdpa", "CBF_SDPA", "use scaled-dot-product attention in T3", _bool, True),
    Option("--voices-dir", "CBF_VOICES_DIR", "where predefined and cloned voices live", Path, Path("voices")),
    Option("--sim-fixed", "CBF_SIM_FIXED", "simulated engine: fixed seconds per chunk", float, 0.15),
    Option("--sim-rtf", "CBF_SIM_RTF", "simulated engine: real-time factor", float, 3.0),
    Option("--first-chunk-words", "CBF_FIRST_CHUNK_WORDS", "minimum words in an utterance's first chunk", int, 3),
    Option("--max-chunk-chars", "CBF_MAX_CHUNK_CHARS", "hard cap on a chunk's text (Turbo drifts past ~350)", int, 300),
    Option("--safety-margin", "CBF_SAFETY_MARGIN", "seconds of buffered audio the planner keeps in reserve",
           float, 0.3),
    Option("--shared-chunk-seconds", "CBF_SHARED_CHUNK_SECONDS", "while several utterances share the device, the "
           "longest a chunk may take to generate (bounds how long one caller can hold up another)", float, 1.0),
)

GATEWAY_OPTIONS = (
    Option("--host", "CBF_HOST", "address to listen on", default="0.0.0.0"),
    Option("--port", "CBF_PORT", "port to listen on", int, 8197),
    Option("--api-key", "CBF_API_KEYS", "API keys, comma-separated; when set every request needs one", _list, ()),
    Option("--max-sessions", "CBF_MAX_SESSIONS", "concurrent sessions and streams before 503", int, 32),
    Option("--max-text-chars", "CBF_MAX_TEXT_CHARS", "text per utterance", int, 5000),
    Option("--max-upload-bytes", "CBF_MAX_UPLOAD_BYTES", "voice upload size", int, 10 * 1024 * 1024),
    Option("--ice-server", "CBF_ICE_SERVERS", "STUN/TURN URLs, comma-separated (turn:user:pass@host:port); "
           "none by default", _list, ()),
    Option("--engine-url", "CBF_ENGINE_URL", "use running engine workers (ws://host:port or unix:/path, "
           "comma-separated; utterances go to the least busy) instead of starting one", _list, ()),
)

LOG_OPTION = Option("--log-level", "CBF_LOG_LEVEL", "log level", default="info",
                    choices=("debug", "info", "warning", "error"))


def engine_settings(args: argparse.Namespace):  # -> EngineSettings (imported lazily: no torch in the gateway)
    from engine.settings import EngineSettings

    return EngineSettings(
        engine=args.engine, model_dir=args.model_dir, weights=args.weights, device=args.device, dtype=args.dtype,
        tf32=args.tf32, sdpa=args.sdpa, voices_dir=args.voices_dir, sim_fixed_s=args.sim_fixed, sim_rtf=args.sim_rtf,
        first_chunk_words=args.first_chunk_words, max_chunk_chars=args.max_chunk_chars,
        safety_margin_s=args.safety_margin, shared_chunk_s=args.shared_chunk_seconds,
    )


def engine_argv(args: argparse.Namespace) -> list[str]:
    """The engine flags of ``args`` as a command line for a worker process."""
    argv: list[str] = []
    for option in ENGINE_OPTIONS:
        value = getattr(args, option.dest)
        if value is not None:
            argv += [option.flag, str(value)]
    return argv


def _setup_logging(level: str) -> None:
    logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        stream=sys.stderr)


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from gateway.app import create_app
    from gateway.state import GatewaySettings

    from gateway.webrtc import ice_servers

    try:
        ice_servers(args.ice_server)
    except ValueError as exc:
        print(f"chatterbox-fast serve: {exc}", file=sys.stderr)
        return 2
    settings = GatewaySettings(
        host=args.host, port=args.port, api_keys=args.api_key, max_sessions=args.max_sessions,
        max_text_chars=args.max_text_chars, max_upload_bytes=args.max_upload_bytes, ice_servers=args.ice_server,
        engine_urls=args.engine_url, engine_args=tuple(engine_argv(args) + ["--log-level", args.log_level]),
    )
    uvicorn.run(create_app(settings), host=args.host, port=args.port, log_level=args.log_level,
                timeout_graceful_shutdown=5, ws_max_size=1024 * 1024)
    return 0


def cmd_engine(args: argparse.Namespace) -> int:
    os.environ.setdefault("TQDM_DISABLE", "1")  # upstream S3Gen draws a progress bar on every chunk
    from engine.watermark import WatermarkUnavailable
    from engine.worker import build_worker, serve_worker

    try:
        worker = build_worker(engine_settings(args))
    except WatermarkUnavailable as exc:
        logging.getLogger("chatterbox_fast.engine").critical("refusing to start: %s", exc)
        return 3
    asyncio.run(serve_worker(worker, args.listen))
    return 0


def cmd_say(args: argparse.Namespace) -> int:
    from gateway.say import say

    return asyncio.run(say(args, engine_argv(args)))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="chatterbox-fast", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def command(name: str, help: str, run: Callable[[argparse.Namespace], int],
                *groups: Sequence[Option]) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help)
        for group in groups:
            for option in group:
                option.add_to(p)
        LOG_OPTION.add_to(p)
        p.set_defaults(run=run)
        return p

    command("serve", "run the gateway (and its embedded engine worker)", cmd_serve, GATEWAY_OPTIONS, ENGINE_OPTIONS)
    p = command("engine", "run an engine worker on its own", cmd_engine, ENGINE_OPTIONS)
    p.add_argument("--listen", default=os.environ.get("CBF_LISTEN", "127.0.0.1:8198"),
                   help="HOST:PORT or unix:/path [env CBF_LISTEN; default 127.0.0.1:8198]")
    p = command("say", "speak one text into a WAV file through a worker", cmd_say, ENGINE_OPTIONS)
    p.add_argument("text")
    p.add_argument("--voice", default="default")
    p.add_argument("--out", type=Path, default=Path("out.wav"))

    bench = sub.add_parser("bench", help="benchmarks that print figures").add_subparsers(dest="target", required=True)
    for name, module, help in (("engine", "gateway.bench_engine", "time to first chunk and real-time factor"),
                               ("gateway", "gateway.bench_gateway", "client-side latency through a transport")):
        p = bench.add_parser(name, help=help)
        _lazy(p, module, ENGINE_OPTIONS)
    p = sub.add_parser("gate", help="the A-B deploy gate against a running server")
    _lazy(p, "gateway.gate", ())
    return parser


def _lazy(parser: argparse.ArgumentParser, module: str, options: Sequence[Option]) -> None:
    """Subcommands whose flags live in their own module (``add_arguments``/``run``)."""
    import importlib

    mod = importlib.import_module(module)
    for option in options:
        option.add_to(parser)
    mod.add_arguments(parser)
    if not any(a.dest == "log_level" for a in parser._actions):
        LOG_OPTION.add_to(parser)
    parser.set_defaults(run=mod.run)


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    _setup_logging(args.log_level)
    sys.exit(args.run(args))


if __name__ == "__main__":
    main()
