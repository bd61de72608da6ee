"""A TCP proxy on loopback that adds a store's request latency in front of a loopback server:
every burst of bytes that follows a pause in one direction (a request, or its response) waits
``delay`` seconds before it is passed on. A loopback S3 server answers in about a millisecond;
a real store's first byte takes tens of milliseconds, which is what overlapping requests saves.
The bytes pass unchanged (the server, its protocol and its answers stay real)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

PAUSE = 0.002
"""Bytes arriving this long (seconds) after the last ones in the same direction start a new
burst, which waits for the delay."""


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                delay: float) -> None:
    last = 0.0
    try:
        while data := await reader.read(1 << 16):
            now = time.monotonic()
            if now - last > PAUSE:
                await asyncio.sleep(delay)
            writer.write(data)
            await writer.drain()
            last = time.monotonic()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


@contextmanager
def latency_proxy(host: str, port: int, delay: float) -> Iterator[str]:
    """A proxy to ``host:port`` adding ``delay`` seconds to each request and each response
    (so about ``2 * delay`` to a round trip) while the context lasts; yields its
    ``http://127.0.0.1:<port>`` endpoint."""
    loop = asyncio.new_event_loop()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    endpoint = f"http://127.0.0.1:{listener.getsockname()[1]}"

    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            server_r, server_w = await asyncio.open_connection(host, port)
        except OSError:
            client_w.close()
            return
        try:
            await asyncio.gather(_pump(client_r, server_w, delay),
                                 _pump(server_r, client_w, delay))
        except asyncio.CancelledError:  # the proxy stops: the connections end with it
            client_w.close()
            server_w.close()

    started = threading.Event()
    server: list[asyncio.AbstractServer] = []

    def serve() -> None:
        asyncio.set_event_loop(loop)
        server.append(loop.run_until_complete(asyncio.start_server(handle, sock=listener)))
        started.set()
        loop.run_forever()

    thread = threading.Thread(target=serve, name="latency-proxy", daemon=True)
    thread.start()
    started.wait()
    try:
        yield endpoint
    finally:
        async def shutdown() -> None:
            server[0].close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        loop.close()


__all__ = ["latency_proxy"]
