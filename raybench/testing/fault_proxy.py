"""FaultProxy: a loopback HTTP proxy in front of an S3-compatible server that answers 503 for a while.

For tests of storage outages: `fail_for(seconds)` makes every request in that window get an S3-style
`SlowDown` (or `ServiceUnavailable`) error; outside it requests are forwarded unchanged (headers
included, so signatures still match the Host the client signed).
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import aiohttp
from aiohttp import web

__all__ = ["FaultProxy"]

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "content-length"}
_ERROR_BODY = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    "<Error><Code>{code}</Code><Message>{message}</Message><RequestId>raybench-fault-proxy</RequestId></Error>"
)
_MESSAGES = {
    "SlowDown": "Please reduce your request rate.",
    "ServiceUnavailable": "Service is unable to handle request.",
}


class FaultProxy:
    """Forwards to `upstream` (http://host:port) from 127.0.0.1:<free port>, on its own loop thread."""

    def __init__(self, upstream: str, error_code: str = "SlowDown") -> None:
        if error_code not in _MESSAGES:
            raise ValueError(f"error_code must be one of {sorted(_MESSAGES)}")
        self.upstream = upstream.rstrip("/")
        self.error_code = error_code
        self.failed = 0  # requests answered 503
        self.forwarded = 0
        self._fail_until = 0.0  # time.monotonic() instant
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="raybench-fault-proxy", daemon=True)
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self.url = ""

    def start(self) -> str:
        """Start serving; returns the proxy's URL (an S3 endpoint to give the client)."""
        self._thread.start()
        port = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)
        self.url = f"http://127.0.0.1:{port}"
        return self.url

    def fail_for(self, seconds: float) -> None:
        """Answer every request with 503 for the next `seconds` (from now)."""
        self._fail_until = time.monotonic() + seconds

    def stop(self) -> None:
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(timeout=10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)

    def __enter__(self) -> FaultProxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _start(self) -> int:
        self._session = aiohttp.ClientSession(auto_decompress=False, timeout=aiohttp.ClientTimeout(total=60))
        app = web.Application(client_max_size=1 << 30)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server: Any = site._server  # the bound port of port 0
        return int(server.sockets[0].getsockname()[1])

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()  # read even when failing: the client sent it whole
        if time.monotonic() < self._fail_until:
            self.failed += 1
            text = _ERROR_BODY.format(code=self.error_code, message=_MESSAGES[self.error_code])
            return web.Response(status=503, text=text, content_type="application/xml")
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        async with self._session.request(
            request.method, self.upstream + request.rel_url.raw_path_qs, headers=headers, data=body,
            allow_redirects=False,
        ) as upstream:  # fmt: skip
            payload = await upstream.read()
            response = web.StreamResponse(status=upstream.status)
            for key, value in upstream.headers.items():
                if key.lower() not in _HOP_BY_HOP:
                    response.headers.add(key, value)
            # HEAD answers carry the object's size without a body: keep the upstream's length
            response.content_length = int(upstream.headers.get("Content-Length", len(payload)))
            await response.prepare(request)
            if payload:
                await response.write(payload)
            await response.write_eof()
        self.forwarded += 1
        return response
