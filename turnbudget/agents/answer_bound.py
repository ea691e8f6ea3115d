"""Reading an LLM server's answers to at most so many bytes (`ChatAgent`'s ``max_answer_bytes``).

The ``openai`` client reads an answer whole into memory, and decompresses it whole: a
broken or hostile server that sends an endless body, or a gzip bomb (a small compressed
body that expands to gigabytes), costs the process that much memory, or its life. Here an
answer is read a chunk at a time from the HTTP response the client hands over (httpx's, or
httpx2's under openai 3: only their common public methods are used), counting its bytes as
sent (``num_bytes_downloaded``) and as decompressed (the chunks of ``iter_bytes``), and
reading stops the moment either count passes the bound: `AnswerRefused`, the rest of the
body never read.

Decompression is the HTTP package's, a chunk at a time: httpx2 expands at most 1 MiB per
step, whatever the chunk; httpx expands each chunk it receives whole (at most about 1000
times the chunk: some 64 MiB for a 64 KiB read). A coding either expands without such a
limit in httpx (brotli, zstd, or gzip twice over: the second layer expands the first's
output whole) is never asked for (`ACCEPT_ENCODING`) and refused unread if sent anyway.

- `read_answer` / `aread_answer`: a response's body, bounded (a 2xx answer the agent
  reads through the client's streaming API, ``with_streaming_response``).
- `error_hooks`: the HTTP client's event hooks that read every other answer (4xx, 5xx,
  3xx), bounded, before it is read whole: by the ``openai`` client to build its exception
  (``APIStatusError``), streamed or not, or by the HTTP client before it follows a
  redirect.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

__all__ = [
    "ACCEPT_ENCODING",
    "MAX_ANSWER_BYTES",
    "AnswerRefused",
    "aread_answer",
    "error_hooks",
    "read_answer",
    "refused_answer",
]

#: The most bytes of one answer an agent reads (`ChatAgent`'s ``max_answer_bytes``), as
#: sent and decompressed. A reply to the agent's requests is a few KiB (``max_tokens`` is
#: small); the longest answer is ``GET /models`` from a hosted API with hundreds of models,
#: on the order of 1 MiB: 16 MiB leaves room for it many times over.
MAX_ANSWER_BYTES = 16 * 2**20

#: The codings asked for: those httpx and httpx2 both decompress with a bound per chunk.
ACCEPT_ENCODING = "gzip, deflate"
_ASKED = ("gzip", "deflate")
# The codings httpx and httpx2 decompress (any other is handed over as it came: harmless).
_DECOMPRESSED = (*_ASKED, "br", "zstd")


class AnswerRefused(Exception):
    """An answer read no further: longer than the bound, or in a content coding that was not
    asked for. Deterministic (the same request gets the same answer): never retried."""


def read_answer(response: Any, max_bytes: int | None) -> bytes:
    """The body of ``response`` (an httpx or httpx2 response, not yet read), decompressed;
    `AnswerRefused` as soon as it passes ``max_bytes`` (None: no bound)."""
    body = _Body(response, max_bytes)
    with contextlib.closing(response.iter_bytes()) as chunks:
        for chunk in chunks:
            body.add(chunk)
    return body.bytes()


async def aread_answer(response: Any, max_bytes: int | None) -> bytes:
    """`read_answer` on an async response."""
    body = _Body(response, max_bytes)
    async with contextlib.aclosing(response.aiter_bytes()) as chunks:
        async for chunk in chunks:
            body.add(chunk)
    return body.bytes()


def error_hooks(max_bytes: int, *, is_async: bool = False) -> dict[str, list[Callable]]:
    """``event_hooks`` for the HTTP client under an ``openai`` client (its
    ``DefaultHttpxClient`` / ``DefaultAsyncHttpxClient``): an answer that is not a 2xx is
    read here, bounded, and what was read is what the clients read after (the ``openai``
    client builds its exception from it). A 2xx answer is left to `read_answer`."""
    if is_async:

        async def read_error(response: Any) -> None:
            if not 200 <= response.status_code < 300:
                _keep(response, await aread_answer(response, max_bytes))

        return {"response": [read_error]}

    def read_error_sync(response: Any) -> None:
        if not 200 <= response.status_code < 300:
            _keep(response, read_answer(response, max_bytes))

    return {"response": [read_error_sync]}


def refused_answer(exc: BaseException | None) -> AnswerRefused | None:
    """The `AnswerRefused` behind ``exc``: itself, or the cause an ``openai`` client wrapped
    it in (an older client wraps what an event hook raises in ``APIConnectionError``)."""
    for _ in range(8):  # (a chain is short; a cycle in one ends here)
        if exc is None or isinstance(exc, AnswerRefused):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


class _Body:
    """One answer's body as it is read: counted, refused past the bound."""

    def __init__(self, response: Any, max_bytes: int | None):
        self._response = response
        self._max_bytes = max_bytes
        self._parts: list[bytes] = []
        self._size = 0
        request = response.request
        self._what = f"{request.method} {request.url.path}"
        codings = [
            coding.strip().lower()
            for coding in response.headers.get("content-encoding", "").split(",")
            if coding.strip()
        ]
        self._compressed = [coding for coding in codings if coding in _DECOMPRESSED]
        if max_bytes is not None:
            self._check_headers(codings, response.headers.get("content-length", ""))

    def _check_headers(self, codings: list[str], length: str) -> None:
        if len(self._compressed) > 1 or any(c not in _ASKED for c in self._compressed):
            raise AnswerRefused(
                f"answered {self._what} in Content-Encoding {', '.join(codings)!r}, which it "
                f"was not asked for (it was asked for {ACCEPT_ENCODING!r}: one layer, which "
                "is decompressed with a bound), and was read no further"
            )
        if length.strip().isdigit() and int(length) > self._max_bytes:  # (before any byte)
            raise AnswerRefused(self._too_long(f"Content-Length: {length.strip()}"))

    def add(self, chunk: bytes) -> None:
        self._size += len(chunk)
        if self._max_bytes is not None:
            if getattr(self._response, "num_bytes_downloaded", 0) > self._max_bytes:
                raise AnswerRefused(self._too_long("as sent"))
            if self._size > self._max_bytes:
                raise AnswerRefused(
                    self._too_long("decompressed" if self._compressed else "as sent")
                )
        self._parts.append(chunk)

    def bytes(self) -> bytes:
        return b"".join(self._parts)

    def _too_long(self, how: str) -> str:
        return (
            f"answered {self._what} with more than {self._max_bytes} bytes ({how}; the bound "
            "is `max_answer_bytes`), and was read no further"
        )


def _keep(response: Any, body: bytes) -> None:
    """Keep an answer's body, read, where the response's ``read()`` keeps it (httpx and
    httpx2 alike): whoever reads it next (``read()``, ``text``) finds it read."""
    response._content = body
