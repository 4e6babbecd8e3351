"""What keeps an operator from exposing the gateway by accident: API keys and tokens never written to logs, and a loud warning
when it listens beyond loopback with no keys (the Wyoming port, which has none, with or without them)."""

from __future__ import annotations

import ipaddress
import logging
import re

_KEY_IN_QUERY = re.compile(r"((?<![A-Za-z0-9_])(?:api_key|key|token)=)[^&\s\"']*")
REDACTED = "[redacted]"
ACCESS_LOGGERS = ("uvicorn.access", "uvicorn.error")  # HTTP access lines; WebSocket "accepted" lines


class RedactKeys(logging.Filter):
    """Rewrites ``?api_key=...``, ``?key=...`` (the phone stacks that dial a URL without headers: Plivo, Vonage,
    Exotel, FreeSWITCH) and ``?token=...`` in a record's message and arguments (uvicorn logs the path with its
    query)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(_KEY_IN_QUERY.sub(rf"\1{REDACTED}", a) if isinstance(a, str) else a
                                for a in record.args)
        if isinstance(record.msg, str):
            record.msg = _KEY_IN_QUERY.sub(rf"\1{REDACTED}", record.msg)
        return True


def redact_keys_in_logs() -> None:
    """Install ``RedactKeys`` on the server's access loggers (after uvicorn configured them)."""
    for name in ACCESS_LOGGERS:
        logging.getLogger(name).addFilter(RedactKeys())


def loopback(host: str) -> bool:
    """Whether ``host`` reaches this machine only."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def exposure_warning(host: str, guarded: bool) -> str | None:
    """The warning to log when ``host`` reaches beyond this machine and no API key guards it; None otherwise."""
    if guarded or loopback(host):
        return None
    return (f"SERVING ON {host} WITH NO API KEY: anyone who can reach this port can speak, upload and delete voices, "
            "and read the metrics (CORS allows every origin). Set --api-key (CBF_API_KEYS) or --keys-file, or listen on "
            "127.0.0.1.")


def wyoming_exposure_warning(host: str) -> str | None:
    """The warning to log when the Wyoming port (which has no authentication) reaches beyond this machine."""
    if loopback(host):
        return None
    return (f"SERVING WYOMING ON {host}, WHICH HAS NO AUTHENTICATION: anyone who can reach this port can speak with "
            "any voice, API keys or not. Listen on 127.0.0.1 (--wyoming-host) unless a firewall keeps others out.")
