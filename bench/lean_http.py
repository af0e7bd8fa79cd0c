"""A lean HTTP/1.1 client for load generators: one connection, written by hand.

With 64 clients, httpx spent more CPU per request than the API did (on two
cores the load generator and the server compete), which measured httpx, not
the API. A connection is kept alive unless the server closes it (uWSGI's
``--http-socket`` answers one request per connection) or ``keep_alive`` is off.
"""

from __future__ import annotations

import asyncio
import re
from urllib.parse import urlsplit

_LENGTH = re.compile(rb"\r\ncontent-length: *(\d+)")


class Connection:
    def __init__(self, url: str, headers: dict[str, str], *, keep_alive: bool = True) -> None:
        parsed = urlsplit(url)
        self.host, self.port = parsed.hostname or "127.0.0.1", parsed.port or 80
        fixed = {"host": "bench", **headers}
        if not keep_alive:
            fixed["connection"] = "close"
        self.keep_alive = keep_alive
        self._headers = "".join(f"{name}: {value}\r\n" for name, value in fixed.items())
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        """Send one request; its status and body. OSError or IncompleteReadError
        when the connection fails (it is closed then, and reopened next time).
        A kept connection the server closed while idle (uvicorn does after 5 s)
        answers nothing at all: the request is sent again on a new one."""
        reused = self.reader is not None
        try:
            return await self._exchange(method, path, body)
        except asyncio.IncompleteReadError as exc:
            if not reused or exc.partial:
                raise
        return await self._exchange(method, path, body)

    async def _exchange(self, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        if self.reader is None or self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        head = f"{method} {path} HTTP/1.1\r\n{self._headers}"
        if body is not None:
            head += f"content-type: application/json\r\ncontent-length: {len(body)}\r\n"
        self.writer.write(head.encode() + b"\r\n" + (body or b""))
        try:
            answer = (await self.reader.readuntil(b"\r\n\r\n")).lower()
            length = _LENGTH.search(answer)
            content = await self.reader.readexactly(int(length.group(1))) if length else b""
        except BaseException:
            await self.close()
            raise
        if not self.keep_alive or b"\r\nconnection: close" in answer:
            await self.close()
        return int(answer[9:12]), content

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None
