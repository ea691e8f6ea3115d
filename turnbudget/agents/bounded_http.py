"""HTTP clients for the ``openai`` client that read at most so many bytes of an answer.

httpx reads an answer whole into memory, and decompresses it whole: a broken or hostile
server that sends an endless body, or a gzip bomb (a small compressed body that expands to
gigabytes), costs the process that much memory, or its life. The clients here count every
answer's bytes as they arrive, before and after decompression, and stop reading at
``max_bytes``: what the request raises then is `AnswerRefused` (the ``openai`` client wraps
it in its ``APIConnectionError``; `refused_answer` finds it), and the rest of the body is
never read (the connection is dropped).

They ask for ``gzip, deflate`` only, and decompress those themselves, in bounded pieces
(``zlib`` with ``max_length``: httpx's decoders expand each chunk whole). An answer in a
coding that was not asked for and that httpx would expand (``br``, ``zstd``), or compressed
twice over, is refused too; any other coding passes as raw bytes, as httpx passes it.

Everything else is the ``openai`` client's own default (its ``DefaultHttpxClient``: its
connection limits, redirects followed, proxies and certificates from the environment):
the bound is put on by event hooks, which leave the transport alone.

Needs ``httpx`` (the ``llm`` extra brings it with ``openai``).
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx

__all__ = ["AnswerRefused", "bounded_http_client", "refused_answer"]

# Decompressed bytes produced per step: a bomb never expands more than this at once.
_PIECE = 64 * 1024

# What is asked for: the codings decompressed here, with a bound.
_ACCEPTED = {"gzip": zlib.MAX_WBITS | 16, "deflate": zlib.MAX_WBITS}
# Codings httpx would expand whole, which are not asked for: refused.
_REFUSED = ("br", "zstd")


class AnswerRefused(Exception):
    """An answer that was not read to its end: longer than the bound, or in a coding that
    cannot be decompressed with one. Deterministic: the server's fault, not retried."""


def bounded_http_client(
    openai: Any, max_bytes: int, *, is_async: bool = False, **kwargs: Any
) -> Any:
    """The ``openai`` client's default httpx client (``kwargs`` passed on), sync or async,
    whose answers are read to at most ``max_bytes`` bytes (raw, and decompressed)."""
    headers = {"Accept-Encoding": ", ".join(_ACCEPTED)}
    if is_async:

        async def bound_async(response: httpx.Response) -> None:
            response.stream = _AsyncBounded(response.stream, _Reader.of(response, max_bytes))

        hooks = {"response": [bound_async]}
        return openai.DefaultAsyncHttpxClient(headers=headers, event_hooks=hooks, **kwargs)

    def bound(response: httpx.Response) -> None:
        response.stream = _SyncBounded(response.stream, _Reader.of(response, max_bytes))

    return openai.DefaultHttpxClient(headers=headers, event_hooks={"response": [bound]}, **kwargs)


def refused_answer(exc: BaseException | None) -> AnswerRefused | None:
    """The `AnswerRefused` behind ``exc`` (itself, or a cause the client wrapped), if any."""
    for _ in range(8):  # (a chain is short; a cycle in it ends here)
        if exc is None or isinstance(exc, AnswerRefused):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


class _Inflater:
    """One gzip or deflate layer, expanded at most `_PIECE` bytes at a time. Like httpx's
    decoder, a ``deflate`` body may be zlib-wrapped or raw (servers send both)."""

    def __init__(self, coding: str):
        self._coding = coding
        self._zlib = zlib.decompressobj(_ACCEPTED[coding])
        self._started = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        while True:
            piece = self._decompress(data)
            data = self._zlib.unconsumed_tail
            if piece:
                yield piece
            # A full piece may leave output inside zlib even when all input is in.
            if not data and len(piece) < _PIECE:
                return

    def flush(self) -> bytes:
        return self._zlib.flush()  # (small: `feed` drained it)

    def _decompress(self, data: bytes) -> bytes:
        first, self._started = not self._started, True
        try:
            return self._zlib.decompress(data, _PIECE)
        except zlib.error as exc:
            if first and self._coding == "deflate":  # raw deflate, without the zlib wrapper
                self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                return self._decompress(data)
            raise httpx.DecodingError(f"{self._coding} answer: {exc}") from None


class _Reader:
    """Counts one answer's bytes as they arrive and as they are decompressed, and raises
    `AnswerRefused` the moment either count passes the bound."""

    def __init__(self, max_bytes: int, what: str, inflater: _Inflater | None):
        self._max_bytes = max_bytes
        self._what = what
        self._inflater = inflater
        self._raw = self._decoded = 0

    @classmethod
    def of(cls, response: httpx.Response, max_bytes: int) -> _Reader:
        """The reader of ``response``, which it takes the decompression over from: its
        ``Content-Encoding`` header goes, so httpx reads the body as it is handed."""
        what = f"{response.request.method} {response.request.url.path}"
        codings = [
            coding.strip().lower()
            for coding in response.headers.get_list("content-encoding", split_commas=True)
        ]
        compressed = [coding for coding in codings if coding in _ACCEPTED or coding in _REFUSED]
        refused = [coding for coding in compressed if coding in _REFUSED]
        if refused or len(compressed) > 1:
            raise AnswerRefused(
                f"answered {what} in Content-Encoding {', '.join(codings)!r}, which it was not "
                "asked for (only one layer of gzip or deflate is decompressed: with a bound)"
            )
        length = response.headers.get("content-length", "")
        if length.isdigit() and int(length) > max_bytes:  # (refused before any byte is read)
            raise AnswerRefused(_too_long(what, max_bytes, f"Content-Length: {length}"))
        response.headers.pop("content-encoding", None)
        return cls(max_bytes, what, _Inflater(compressed[0]) if compressed else None)

    def decode(self, raw: bytes) -> Iterator[bytes]:
        self._raw += len(raw)
        self._check(self._raw, "as sent")
        pieces = (raw,) if self._inflater is None else self._inflater.feed(raw)
        for piece in pieces:
            yield self._counted(piece)

    def end(self) -> Iterator[bytes]:
        if self._inflater is not None and (rest := self._inflater.flush()):
            yield self._counted(rest)

    def _counted(self, piece: bytes) -> bytes:
        self._decoded += len(piece)
        self._check(self._decoded, "decompressed")
        return piece

    def _check(self, count: int, how: str) -> None:
        if count > self._max_bytes:
            raise AnswerRefused(_too_long(self._what, self._max_bytes, how))


def _too_long(what: str, max_bytes: int, how: str) -> str:
    return (
        f"answered {what} with more than {max_bytes} bytes ({how}; the bound is "
        "`max_answer_bytes`), and was read no further"
    )


class _SyncBounded(httpx.SyncByteStream):
    def __init__(self, stream: Any, reader: _Reader):
        self._stream = stream
        self._reader = reader

    def __iter__(self) -> Iterator[bytes]:
        for raw in self._stream:
            yield from self._reader.decode(raw)
        yield from self._reader.end()

    def close(self) -> None:
        self._stream.close()


class _AsyncBounded(httpx.AsyncByteStream):
    def __init__(self, stream: Any, reader: _Reader):
        self._stream = stream
        self._reader = reader

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for raw in self._stream:
            for piece in self._reader.decode(raw):
                yield piece
        for piece in self._reader.end():
            yield piece

    async def aclose(self) -> None:
        await self._stream.aclose()
