"""The listening socket every server of the project is handed (gateway/host/bind.py)."""

from __future__ import annotations

import asyncio
import socket

from gateway.host.bind import bind_tcp


async def test_connections_accepted_on_a_bound_port_send_small_frames_at_once() -> None:
    """asyncio turns Nagle off (TCP_NODELAY) only for sockets that say they are TCP: on a socket made with proto 0,
    a chunk event and its first audio frame went out ~40 ms apart (the client's delayed ACK)."""
    sock = bind_tcp("127.0.0.1", 0, "--port")
    nodelay: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nodelay.set_result(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(accepted, sock=sock)
    try:
        _, writer = await asyncio.open_connection(*sock.getsockname())
        assert await asyncio.wait_for(nodelay, 10) != 0
        writer.close()
    finally:
        server.close()
        await server.wait_closed()
