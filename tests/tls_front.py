"""A TLS front for a test server (their SDKs speak only wss://, https://): a self-signed certificate for 127.0.0.1
and a relay terminating TLS in front of the gateway, as a deployment's proxy does."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import ssl
import threading
from pathlib import Path
from typing import Iterator


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@contextlib.contextmanager
def tls_front(server: str, directory: Path) -> Iterator[tuple[str, Path]]:
    """``https://127.0.0.1:PORT`` in front of ``server``; and the certificate a client must trust."""
    cert, key = self_signed(directory)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    host, port = server.removeprefix("http://").split(":")
    loop = asyncio.new_event_loop()
    started: list[int] = []
    stop = asyncio.Event()
    writers: set[asyncio.StreamWriter] = set()  # both ends of every connection relayed and not yet done
    relays: set[asyncio.Task] = set()

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    async def relay(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        relays.add(task)
        task.add_done_callback(relays.discard)
        writers.add(client_w)
        try:
            server_r, server_w = await asyncio.open_connection(host, int(port))
        except OSError:
            client_w.close()
            writers.discard(client_w)
            return
        writers.add(server_w)
        try:
            await asyncio.gather(pipe(client_r, server_w), pipe(server_r, client_w))
        finally:
            writers.difference_update((client_w, server_w))

    async def main() -> None:
        proxy = await asyncio.start_server(relay, "127.0.0.1", 0, ssl=context)
        started.append(proxy.sockets[0].getsockname()[1])
        await stop.wait()
        # Stopped: no new connection, and each one still open closed at both ends, so that its pipes end (no task
        # left pending, no connection to the server left open) rather than being cancelled mid-read.
        proxy.close()
        for writer in list(writers):
            writer.transport.abort()
        if relays:
            await asyncio.wait(relays, timeout=5)

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    while not started:
        if not thread.is_alive():
            raise RuntimeError("the TLS front did not start")
        thread.join(0.02)
    try:
        yield f"https://127.0.0.1:{started[0]}", cert
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(5)
        if not thread.is_alive():
            loop.close()
