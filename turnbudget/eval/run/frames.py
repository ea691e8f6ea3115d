"""`multiprocessing.connection`'s frames (a 4-byte length, then the message) on a socket,
read and written by the evaluator itself, never waiting past a deadline.

``Connection.recv_bytes`` reads a whole frame once any of it has come: a process that sent
a frame's length and a few bytes, then nothing (stopped, or killed with a process it forked
still holding its end), held its reader past every limit. Here the evaluator's end is a
non-blocking socket: `send_frame` writes within a deadline, and `FrameReader` takes what
has come and hands over whole frames only. The other end reads and writes with an
ordinary ``Connection`` (a sealed agent's process, a pool's worker).
"""

from __future__ import annotations

import math
import select
import socket
import struct
import time

__all__ = ["FrameReader", "FrameTooLong", "Late", "milliseconds", "send_frame"]

#: The bytes a frame longer than this sends its length and its message in (as
#: ``Connection.send_bytes`` does).
_INLINE = 16384


class Late(Exception):
    """A deadline passed before a frame was written whole (`send_frame`)."""


class FrameTooLong(Exception):
    """A frame longer than its reader's limit (`FrameReader`)."""


def milliseconds(deadline: float | None) -> int | None:
    """The milliseconds left until ``deadline`` for ``poll`` (None: wait for ever)."""
    if deadline is None:
        return None
    return max(0, math.ceil((deadline - time.monotonic()) * 1000))


def send_frame(sock: socket.socket, message: bytes, deadline: float | None) -> None:
    """Write ``message`` as one frame on the non-blocking ``sock``; `Late` if the other end
    has not taken it all by ``deadline`` (None: wait as long as it takes)."""
    size = len(message)
    header = struct.pack("!i", size) if size <= 0x7FFFFFFF else struct.pack("!iQ", -1, size)
    if size > _INLINE:
        _send_all(sock, memoryview(header), deadline)
        _send_all(sock, memoryview(message), deadline)
    else:
        _send_all(sock, memoryview(header + message), deadline)


def _send_all(sock: socket.socket, view: memoryview, deadline: float | None) -> None:
    while view:
        try:
            view = view[sock.send(view) :]
        except BlockingIOError:  # its side is full: it is not reading
            writable = select.poll()
            writable.register(sock, select.POLLOUT)
            if not writable.poll(milliseconds(deadline)):
                raise Late from None


class FrameReader:
    """The frames that come on the non-blocking ``sock``, whole, never waiting for one.

    Args:
        sock: the reading end (non-blocking).
        limit: the most bytes a frame may hold (None: any).
    """

    def __init__(self, sock: socket.socket, limit: int | None = None):
        self.sock = sock
        self.limit = limit
        self._data = bytearray()
        self._scratch = bytearray(1 << 16)

    def take(self) -> bytes | None:
        """The next whole frame: read what the socket holds now (no wait), None while no
        frame has come whole. `EOFError` once the other end closed with none whole,
        `FrameTooLong` for one longer than ``limit``. A negative length (which no
        ``Connection`` sends) is an empty frame, for its decoder to refuse."""
        while (frame := self._whole()) is None:
            try:
                n = self.sock.recv_into(self._scratch)
            except BlockingIOError:  # (nothing more for now)
                return None
            if not n:
                raise EOFError
            self._data += memoryview(self._scratch)[:n]
        return frame

    def _whole(self) -> bytes | None:
        """The first frame of the bytes read, taken off them, if it is whole."""
        data = self._data
        if len(data) < 4:
            return None
        (size,) = struct.unpack_from("!i", data)
        start = 4
        if size == -1:  # (a length past 2 GiB follows)
            if len(data) < 12:
                return None
            (size,) = struct.unpack_from("!Q", data, 4)
            start = 12
        if self.limit is not None and size > self.limit:
            raise FrameTooLong(size)
        if size < 0:
            del data[:start]
            return b""
        if len(data) < start + size:
            return None
        with memoryview(data) as view:
            frame = bytes(view[start : start + size])
        del data[: start + size]
        return frame
