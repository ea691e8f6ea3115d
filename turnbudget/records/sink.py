"""The durable sink: finished episodes' records to memory, a callback or a JSONL file.

A records file is appended one whole episode at a time, under a lock, flushed
and fsync-ed; a writer killed mid-write leaves at most a torn tail, which the
next append (or `repair_torn_tail`) cuts off.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from turnbudget._checks import brief, check_bool
from turnbudget.records.files import naming_errors
from turnbudget.records.schema import OutcomeRecord, dumps_lines

__all__ = ["RecordSink", "repair_torn_tail"]

logger = logging.getLogger(__name__)


def repair_torn_tail(path: str | os.PathLike[str]) -> int:
    """Cut the part of an episode that a writer killed mid-write left at the end of a
    records file; return the bytes cut (0 for a whole file).

    A whole file ends with a newline and an episode record. Otherwise its last line is
    torn: it goes, and so do the whole lines before it that belong to the same episode
    (those after the last episode record); a file that ends with a newline after a step
    record was cut where a line ended, and its steps after the last episode record go (a
    file of step records alone, such as `evaluate`'s steps.jsonl, is left whole). Episodes are delivered in one write each, so only the last can be
    torn. (A team file's torn delivery goes whole: the members' records it holds before the
    torn line go with it.)
    A last line that is a whole episode record only lost its newline (an editor strips
    it): the newline is added and nothing is cut. A file that holds no record at all is
    not a records log: it is refused (`ValueError`), never cut.
    The file is locked while it is checked, as `RecordSink` locks it to append.
    """
    fd = os.open(path, os.O_RDWR)
    try:
        _lock(fd)
        return _cut_torn_tail(fd, path)
    finally:
        os.close(fd)


def _open_to_append(path: str | os.PathLike[str]) -> int:
    """``path`` opened to append (created if missing) and locked, with its torn tail cut."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        _lock(fd)
        _cut_torn_tail(fd, path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _lock(fd: int) -> None:
    """Hold an exclusive lock on the file until ``fd`` is closed (POSIX; a no-op elsewhere).

    Every `RecordSink` takes it to append, so a file whose last line is torn once the
    lock is held was left so by a writer that died mid-write (the OS drops a dead
    process's locks), never by one still writing.
    """
    try:
        import fcntl
    except ImportError:  # (Windows: no flock)
        return
    fcntl.flock(fd, fcntl.LOCK_EX)


def _read_at(fd: int, offset: int, size: int) -> bytes:
    os.lseek(fd, offset, os.SEEK_SET)
    chunks = []
    while size > 0 and (chunk := os.read(fd, size)):
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _cut_torn_tail(fd: int, path: str | os.PathLike[str]) -> int:
    """`repair_torn_tail` on an open, locked file."""
    info = os.fstat(fd)
    size = info.st_size
    if not stat.S_ISREG(info.st_mode) or size == 0:
        return 0
    ended = _read_at(fd, size - 1, 1) == b"\n"
    if ended:
        # (whole, unless its last line is a step's: a write cut where a line ended, which a
        # cut of a page does about once per line length, left an episode's steps without it)
        last = _line_start(fd, size - 1)
        if _read_at(fd, last, len(_STEP_START)) != _STEP_START:
            return 0
    # Read back from the end until an episode record's line (or the start) is in view.
    span = 1 << 16
    while True:
        start = max(0, size - span)
        tail = _read_at(fd, start, size - start)
        whole = tail.rfind(b"\n") + 1  # the torn line starts here
        # (the last line in view whole: it may be a whole episode record but for its newline)
        if (whole or start == 0) and _is_episode_record(tail[whole:]):
            os.lseek(fd, 0, os.SEEK_END)
            os.write(fd, b"\n")
            logger.warning("Added the newline missing at the end of %s", os.fspath(path))
            return 0
        end = tail.rfind(b'{"record":"episode"', 0, whole)
        if end >= 0 and (start + end == 0 or tail[end - 1 : end] == b"\n"):
            keep = start + tail.index(b"\n", end) + 1
            keep = _team_delivery_start(fd, start + end, keep, size)
            break
        if start == 0:
            if ended:  # (no episode record at all: a file of steps alone, `evaluate`'s
                return 0  # steps.jsonl, is whole when it ends in a newline)
            keep = 0
            break
        span *= 2
    if keep == 0 and not _read_at(fd, 0, len(_RECORD_START)) == _RECORD_START:
        raise ValueError(
            f"{brief(os.fspath(path))} holds no record and does not end in a newline: it is "
            "not a records log (nothing was cut; give a new file or one records were written to)"
        )
    os.ftruncate(fd, keep)
    logger.warning(
        "Cut %d bytes from the end of %s: the torn episode of a writer killed mid-write",
        size - keep,
        os.fspath(path),
    )
    return size - keep


# How every record's line starts (`dumps` of a record: its "record" key comes first).
_RECORD_START = b'{"record":'
_STEP_START = b'{"record":"step"'


def _team_delivery_start(fd: int, line_start: int, keep: int, size: int) -> int:
    """Where to cut a torn tail that follows the whole episode record at ``line_start``
    (which ends at ``keep``): ``keep``, unless that record is one member's of a team episode
    (`RecordTeamOutcomes` writes each member's steps and episode record, member after
    member, in one delivery) and the torn tail goes on with the same team episode: then the
    start of the delivery, so no team episode is left with some of its members."""
    try:
        record = json.loads(_read_at(fd, line_start, keep - line_start))
    except ValueError:
        return keep
    team = record.get("team_episode_id") if isinstance(record, dict) else None
    if not isinstance(team, str):
        return keep
    # Every line of the delivery names a member of it: ``"episode_id":"TEAM#agent"``.
    marker = _member_marker(team)
    head = _read_at(fd, keep, min(size - keep, 256 + len(marker)))
    at = head.find(b'"episode_id":')
    if at >= 0 and not (head[at:].startswith(marker) or marker.startswith(head[at:])):
        return keep  # (a delivery of its own began after it: that one alone was torn)
    start, members = _delivery(fd, line_start, marker)
    said = at >= 0 and head[at:].startswith(marker)
    if not said and start > 0:  # (torn before its id says: whole if it has as many members
        # as the delivery before it)
        before = _line_start(fd, start - 1)
        try:
            previous = json.loads(_read_at(fd, before, start - before)).get("team_episode_id")
        except (ValueError, AttributeError):
            previous = None
        if (
            isinstance(previous, str)
            and members >= _delivery(fd, before, _member_marker(previous))[1]
        ):
            return keep
    # (the same team episode: cut the whole delivery, which a resume plays again)
    return start


def _member_marker(team: str) -> bytes:
    """How every record line of team episode ``team``'s members starts its id."""
    return b'"episode_id":' + json.dumps(team + "#").encode()[:-1]


def _delivery(fd: int, line_start: int, marker: bytes) -> tuple[int, int]:
    """The start of the delivery whose lines hold ``marker``, from its line at ``line_start``
    back, and how many episode records (members) it holds."""
    start, members = line_start, 0
    while True:
        line = _read_at(fd, start, _line_end(fd, start) - start)  # (the delivery's: counted)
        members += line.startswith(b'{"record":"episode"')
        if start == 0:
            return 0, members
        before = _line_start(fd, start - 1)
        if marker not in _read_at(fd, before, start - before):
            return start, members
        start = before


def _line_start(fd: int, end: int) -> int:
    """The offset of the line whose newline is at ``end`` (the file's start for the first)."""
    span = 1 << 12
    while True:
        begin = max(0, end - span)
        newline = _read_at(fd, begin, end - begin).rfind(b"\n")
        if newline >= 0:
            return begin + newline + 1
        if begin == 0:
            return 0
        span *= 2


def _line_end(fd: int, start: int) -> int:
    """The offset just past the newline of the line that starts at ``start``."""
    span = 1 << 12
    while True:
        data = _read_at(fd, start, span)
        newline = data.find(b"\n")
        if newline >= 0:
            return start + newline + 1
        if len(data) < span:
            return start + len(data)
        span *= 2


def _is_episode_record(line: bytes) -> bool:
    """Whether ``line`` is a whole episode record (a torn one is not valid JSON)."""
    if not line.startswith(b'{"record":"episode"'):
        return False
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:  # (torn: not JSON, or cut inside a UTF-8 sequence)
        return False


def _is_dir(path: Path) -> bool:
    """``path.is_dir()``, False also where the OS cannot look (a name too long for it)."""
    try:
        return path.is_dir()
    except OSError:
        return False


def _check_takes_a_record(callback: Callable[..., Any]) -> None:
    """A ValueError unless ``callback`` can be called with one record: one that could not
    was taken, then failed on an episode's last step, which never returned."""
    try:
        inspect.signature(callback).bind(object())
    except TypeError:
        raise ValueError(
            f"Expect `callback` to take one argument (a record), got {brief(callback)}"
        ) from None
    except ValueError:  # (no signature to inspect, as for some builtins: taken)
        pass


class RecordSink:
    """Where finished episodes' records go: a list in memory, a callback, a JSONL file.

    An episode's records are delivered together: appended to ``records`` (when
    ``memory``), passed one by one to ``callback``, and appended to ``path``
    with a single write, flushed and fsync-ed, so a finished episode is never
    lost (processes may share a file). Linux can cut a write of more than a page
    when the process is killed during it: the file then ends with part of one
    episode and a torn line. Each append holds a lock on the file and first cuts
    such a part off (`repair_torn_tail`), so appends always follow a whole
    episode, even in a file that another process, which died since, shares.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        callback: Callable[[OutcomeRecord], Any] | None = None,
        memory: bool | None = None,
        fsync: bool = True,
    ):
        if callback is not None and not callable(callback):
            raise ValueError(f"Expect `callback` to be callable, got {brief(callback)}")
        if callback is not None:
            _check_takes_a_record(callback)
        if path is not None and (not isinstance(path, (str, os.PathLike)) or not os.fspath(path)):
            raise ValueError(f"Expect `path` to be a file path or None, got {brief(path)}")
        self.path = None if path is None else Path(path)
        if self.path is not None:
            if not _is_dir(self.path.parent):  # a typo in a folder name must not go unnoticed
                raise ValueError(
                    f"Cannot append records to {brief(str(self.path))}: its folder "
                    f"{brief(str(self.path.parent))} does not exist (create it first: expect "
                    "`path` in a folder that exists)"
                )
            try:  # fail now, not at the end of the first episode
                fd = _open_to_append(self.path)
                try:
                    mode = os.fstat(fd).st_mode
                finally:
                    os.close(fd)
            except (OSError, ValueError) as err:  # (ValueError: a NUL byte in the path)
                reason = getattr(err, "strerror", None) or err
                raise ValueError(
                    f"Cannot append records to {brief(str(self.path))}: {reason} (expect `path` "
                    "to name a file this process can write, in a folder that exists)"
                ) from None
            if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):  # (opened to read too: never EOF)
                raise ValueError(
                    f"Cannot append records to {brief(str(self.path))}: it is a FIFO or a "
                    "socket (a pipe, such as /dev/stdout piped to a program), which the sink "
                    "opens to read too, so its appends would block for good once its buffer "
                    "fills and the other end stops reading (expect `path` to name a regular "
                    "file, or os.devnull)"
                )
        self.callback = callback
        self.memory = (
            (path is None and callback is None) if memory is None else check_bool(memory, "memory")
        )
        self.fsync = check_bool(fsync, "fsync")
        self.records: list[OutcomeRecord] = []

    def deliver(self, records: list[OutcomeRecord]) -> None:
        if self.path is not None:
            self._append_lines(records)
        if self.memory:
            self.records.extend(records)
        if self.callback is not None:
            for record in records:
                self.callback(record)

    def _append_lines(self, records: list[OutcomeRecord]) -> None:
        data = dumps_lines(records).encode()
        fd = _open_to_append(self.path)  # (a writer sharing the file may have died mid-write)
        try:
            # (a failed write names no file; what it left torn, the next append cuts)
            with naming_errors(self.path):
                view = memoryview(data)
                while view:  # one write() in practice; loop in case the kernel takes less
                    view = view[os.write(fd, view) :]
                # (a device such as os.devnull cannot be fsync-ed: EINVAL)
                if self.fsync and stat.S_ISREG(os.fstat(fd).st_mode):
                    os.fsync(fd)
        finally:
            os.close(fd)
