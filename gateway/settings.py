"""The gateway's settings, filled by the CLI from flags and environment variables."""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.listen.detector import VadConfig
from gateway.prompt_cache.store import CacheSettings


@dataclass
class GatewaySettings:
    host: str = "127.0.0.1"
    port: int = 8197
    api_keys: tuple[str, ...] = ()
    keys_file: str | None = None  # the tenants' keys and limits (gateway/guard/keys_file.py), watched for changes
    token_secret: str | None = None  # signs POST /v1/tokens' tokens (gateway/guard/tokens.py); None: generated
    cors_origins: tuple[str, ...] = ()  # browser origins allowed (CORS, WebSocket upgrades); none: every one
    max_sessions: int = 32
    max_text_chars: int = 5000
    max_upload_bytes: int = 10 * 1024 * 1024
    stall_timeout_s: float = 30.0  # a client that takes no audio for this long is closed
    client_lead_s: float = 3.0  # audio generated ahead of what a client has taken, past what the longest chunk needs
    barge_in: str = "vad"  # what a caller's speech does to the gateway's (gateway/listen/barge_in.py)
    vad: VadConfig = field(default_factory=VadConfig)  # the caller's voice activity (gateway/listen/detector.py)
    echo_canceller: bool = True  # the gateway's voice taken out of the caller's audio (gateway/listen/aec.py)
    echo_guard: bool = False  # the level rule (gateway/listen/echo.py) judges too; without the canceller it always does
    vad_batch: bool = False  # callers' VAD windows due together heard in one model run (gateway/listen/tick.py)
    wyoming_zeroconf: str | None = None  # the Wyoming port's zeroconf name (gateway/wyoming/announce.py)
    idle_timeout_s: float = 20.0  # a Wyoming connection (an ElevenLabs socket by default) silent this long is closed
    max_unauthenticated: int = 64  # connections whose key may still come in a message (gateway/guard/silent_sockets.py)
    twilio_auth_token: str | None = None  # when set, /v1/twilio checks X-Twilio-Signature
    audiosocket_key: str | None = None  # tags the AudioSocket calls' UUIDs (gateway/telephony/audiosocket.py)
    audiosocket_allow: tuple[str, ...] = ()  # the peers that may connect to the AudioSocket port; none: any
    ice_servers: tuple[str, ...] = ()
    webrtc_setup_timeout_s: float = 15.0  # a WebRTC peer not connected (with its data channel, if offered) by then is
    # dropped, its session with it
    rtc_ports: tuple[int, int] | None = None  # UDP range for WebRTC media; None: the kernel picks
    engine_urls: tuple[str, ...] = ()  # running engine workers; none starts the embedded worker
    engine_secret: str | None = None  # presented to the engine_urls workers (the embedded one gets its own)
    engine_args: tuple[str, ...] = ()  # flags for the embedded worker
    engine_devices: tuple[str, ...] = ()  # one embedded worker per device (serve --engine-devices); none: one
    engine_resolve_interval_s: float = 5.0  # how often dns+ws:// engine URLs are resolved again
    failover_wait_s: float = 10.0  # how long an utterance waits for a worker: its own went away, or none is connected
    # as it starts (0: no failover, no wait)
    max_failovers: int = 2  # moves of one utterance to another worker before it fails
    shared_dir: str | None = None  # set in each of `serve --processes N`'s processes: metrics and /health shared
    drain_grace_s: float = 360.0  # a drain lets utterances in flight go on this long (gateway/host/drain.py)
    cache: CacheSettings = field(default_factory=CacheSettings)  # the prompt cache (gateway/prompt_cache/)
    supervisor_pid: int | None = None  # `serve --processes N`'s: POST /v1/admin/drain drains it, every process
    otlp_endpoint: str | None = None  # where traces go (engine/traces.py); None: no traces
    trace_text: bool = False  # the callers' text in the traces
    tls: bool = False  # served over TLS (--tls-cert, --tls-key): https and wss on the one port
