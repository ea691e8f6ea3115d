"""One evaluation per output directory, and no worker outliving its evaluator.

Two evaluations writing the same run directory would both run every episode and
interleave their records. `hold_output_dir` takes an exclusive lock on the
directory (``filelock``: ``flock`` on POSIX, ``msvcrt`` on Windows; the OS drops it
when the holder dies, even by ``kill -9``) for the whole run; a second
evaluation is refused at once with `OutputDirInUse`, naming the holder's pid,
host, start time and command (its credentials blanked: `turnbudget.agents.secrets`,
the ``--base-url``'s password say; the file outlives a ``kill -9``). `locks_output_dir` applies it to a function with
an ``out=`` keyword (`turnbudget.eval.evaluate`).

`exit_with_parent`, called in a worker's initializer, ends the worker when the
evaluator dies: ``PR_SET_PDEATHSIG`` on Linux, and a thread that polls the
parent's pid everywhere (it also covers a parent that died before the call).
`kill_tree` ends a worker together with every process it started (a sealed
agent's process and whatever that agent spawned), so none outlives the run.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from turnbudget._checks import PATH_CHARS, brief, check_dir_path, make_folders
from turnbudget.agents.secrets import redact
from turnbudget.records import write_json
from turnbudget.records.files import REPORT_HEADING, RUN_FILE, open_regular, run_dirs_below

__all__ = [
    "LOCK_FILE",
    "TRAINING_FILES",
    "OutputDirInUse",
    "check_no_training_run",
    "check_not_foreign",
    "exit_with_parent",
    "hold_output_dir",
    "kill_tree",
    "locks_output_dir",
    "locks_run_dir",
]

#: The lock file in a run directory, and the file that says who holds it.
LOCK_FILE = ".turnbudget.lock"
HOLDER_FILE = ".turnbudget.lock.json"
#: The most of a holder file read (one is a few hundred bytes: its command is cut at 200).
MAX_HOLDER_BYTES = 1 << 20

F = TypeVar("F", bound=Callable[..., Any])


class OutputDirInUse(ValueError):
    """Another evaluation holds the output directory (a ValueError: the ``out`` given is unusable now)."""


def _check_out(out: Path) -> list[Path]:
    """A clear one-line error for an ``out`` that cannot be a run directory; else create it
    and return the folders created (innermost first)."""
    try:
        if out.exists() and not out.is_dir():
            raise ValueError(
                f"Expect `out` to be a directory, but {str(out)!r} is an existing file"
            )
        return make_folders(out)
    except OSError as e:  # (a name too long: `exists` raises it too)
        raise ValueError(
            f"Cannot create the output directory {brief(str(out), PATH_CHARS)}: {e.strerror}"
        ) from e


#: What a training run or an exported policy holds (`turnbudget.train`,
#: `turnbudget.agents.policy`): an evaluation run's files never include them.
TRAINING_FILES = ("config.json", "policy.zip", "weights.npz", "encoding.json")


def check_not_foreign(out: Path) -> None:
    """A ValueError when ``out`` is not an evaluation run's own, whatever ``overwrite`` says
    (that replaces only a run): it lies inside another run's directory or is a folder of
    runs (either report would read one run and leave the other out), or it holds what the
    run's summary.json would overwrite: a training run or a policy, a summary.json beside
    no run.json and no report.md of ours, or a report.md not of ours."""
    # (a run inside another's directory, or a folder of runs with a run of its own: a report
    # of the outer one read only that run, and left the others out without a word)
    # (resolved: ``../b`` from within a run read as lying inside it, and a link from outside
    # into a run's directory as lying outside)
    inside = next((p for p in out.resolve().parents if (p / RUN_FILE).is_file()), None)
    if inside is not None:
        raise ValueError(
            f"`out` {out} lies inside the run directory {inside}, whose report reads only its "
            "own run: choose a directory outside it"
        )
    if not out.is_dir() or (out / RUN_FILE).exists():
        return
    runs, _ = run_dirs_below(out)
    if runs:
        raise ValueError(
            f"`out` {out} is a folder of runs ({runs[0]} among them), whose report reads "
            "them all: evaluate into a directory of its own, such as one in it"
        )
    held = foreign_files(out)
    if held:
        raise ValueError(
            f"`out` {out} holds {', '.join(held)} of no evaluation run (a training run's or a "
            "policy's, or a summary.json or report.md `turnbudget report` did not write), which "
            "the run would overwrite: choose another output directory"
        )


def foreign_files(out: Path) -> list[str]:
    """What in ``out`` (a directory of no run) a run's or a report's summary.json would
    overwrite: a training run's or a policy's files (`TRAINING_FILES`), a summary.json
    beside no report.md of ours, or a report.md not of ours."""
    held = [name for name in TRAINING_FILES if (out / name).exists()]
    summary = out / "summary.json"
    if not held and (summary.is_file() or summary.is_symlink()) and not _report_summary(out):
        held = ["summary.json"]
    # (a run's overwrite deleted it, and without, the report refused it once every episode ran)
    if not held and _lines(out / "report.md", 1) not in (None, [REPORT_HEADING]):
        held = ["report.md"]
    return held


def _report_summary(out: Path) -> bool:
    """Whether ``out``'s summary.json is a report's: beside a report.md of ours, or beginning
    as every report's summary does, its keys sorted (report.md deleted, or a write cut short
    between the two files)."""
    if _lines(out / "report.md", 1) == [REPORT_HEADING]:
        return True
    start = _lines(out / "summary.json", 2)
    return start is not None and start[0] == "{" and start[1].startswith(' "comparisons": [')


def _lines(path: Path, count: int) -> list[str] | None:
    """The first ``count`` lines of the regular file ``path`` (200 bytes each at most, without
    their ends), or None (a FIFO there blocked for ever)."""
    try:
        with open_regular(path) as f:
            lines = [f.readline(200) for _ in range(count)]
        return [line.decode("utf-8", "replace").rstrip("\r\n") for line in lines]
    except (OSError, ValueError):  # (none there, or none that reads: LogError)
        return None


def check_no_training_run(out: Path) -> None:
    """A ValueError when ``out`` holds a training run or a policy (`TRAINING_FILES`): probe
    results were written beside a policy, and an evaluation and a training run never share
    a directory."""
    held = [name for name in TRAINING_FILES if (out / name).exists() or (out / name).is_symlink()]
    if held:
        raise ValueError(
            f"`out` {brief(str(out), PATH_CHARS)} holds a training run or a policy "
            f"({', '.join(held)}): write into another directory"
        )


def _holder(out: Path) -> str:
    try:
        # (a FIFO there blocked the refusal for ever, a link to /dev/zero filled the memory:
        # a regular file only, and no more of it than a holder ever writes)
        with open_regular(out / HOLDER_FILE) as f:
            text = f.read(MAX_HOLDER_BYTES + 1)
        if len(text) > MAX_HOLDER_BYTES:
            raise ValueError("not a holder file: too large")
        holder = json.loads(text)
        return redact(  # (a file left by an older version may hold a --base-url's password)
            f"pid {holder['pid']} on {holder['host']}, started {holder['started']}"
            f" ({holder['command']})"
        )
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return "a process that has not said who it is yet"


@contextlib.contextmanager
def hold_output_dir(out: str | os.PathLike[str], *, run_dir: bool = False) -> Iterator[Path]:
    """Hold ``out`` (created if missing) exclusively while the block runs.

    Folders it created are removed again if the block leaves nothing in them
    (a run refused before its first episode leaves no empty output directory).
    With ``run_dir``, an ``out`` that is not an evaluation run's own is refused first
    (`check_not_foreign`); without, one that holds a training run or a policy
    (`check_no_training_run`).

    Raises:
        OutputDirInUse: another process holds it; the message names that process.
        ValueError: ``out`` is empty text, an existing file or cannot be created (with
            ``run_dir``: or is not a run's own).

    Example:
        >>> import tempfile
        >>> out = Path(tempfile.mkdtemp()) / "run"
        >>> with hold_output_dir(out):
        ...     with hold_output_dir(out):  # doctest: +ELLIPSIS
        ...         pass
        Traceback (most recent call last):
        ...
        turnbudget.eval.run.lock.OutputDirInUse: ... is in use by another evaluation: pid ...
    """
    from filelock import FileLock, Timeout

    out = check_dir_path(out, "out")
    created = _check_out(out)
    try:
        if run_dir:  # (before the lock file: nothing written in a folder refused)
            check_not_foreign(out)
        else:  # (probes: beside an evaluation run is theirs to write, beside a policy never)
            check_no_training_run(out)
    except ValueError:
        for folder in created:  # (made just now, so empty: innermost first)
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    # A new lock object per call: the same process holding the directory twice is
    # a conflict too (filelock's default would let one thread re-enter its lock).
    lock = FileLock(os.fspath(out / LOCK_FILE), timeout=0, thread_local=False, is_singleton=False)
    try:
        lock.acquire()
    except Timeout:
        raise OutputDirInUse(
            f"Output directory {str(out)!r} is in use by another evaluation: {_holder(out)}. "
            "Wait for it to finish, or choose another output directory."
        ) from None
    except OSError as e:  # (a link there: filelock's O_NOFOLLOW says "Too many levels of ...")
        if not (out / LOCK_FILE).is_symlink():
            raise
        raise ValueError(
            f"Cannot lock the output directory {brief(str(out), PATH_CHARS)}: its {LOCK_FILE} is "
            "a symbolic link, which no run makes (nothing was written through it): remove it"
        ) from e
    try:
        holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "command": redact(" ".join(_without_agent_args(sys.argv)))[:200] or sys.executable,
        }
        write_json(out / HOLDER_FILE, holder)  # (whole or not at all, no temporary left)
        _HELD_HERE.add(_resolved(out))
        yield out
    finally:
        _HELD_HERE.discard(_resolved(out))
        with contextlib.suppress(OSError):
            (out / HOLDER_FILE).unlink()
        try:
            # A run that wrote nothing (refused before its first episode) leaves no
            # empty directory behind: the folders made here go, while the lock is held.
            if created and {p.name for p in out.iterdir()} == {LOCK_FILE}:
                (out / LOCK_FILE).unlink()
            else:
                created = []
        except OSError:
            created = []
        lock.release()
        for folder in created:
            try:
                folder.rmdir()
            except OSError:  # not empty (another run's), or not ours to remove
                break


#: The directories this process holds (`hold_output_dir`): its own report of a run it holds
#: reads it as finished (the command line reports a run under the lock it ran in).
_HELD_HERE: set[str] = set()


def _resolved(out: Path) -> str:
    try:
        return str(out.resolve())
    except (OSError, RuntimeError):
        return str(out)


def writer_of(out: str | os.PathLike[str]) -> str | None:
    """Who holds the run directory ``out`` now (`_holder`'s words) when another process does,
    else None: what a reader of a run names instead of calling a run still being written
    "incomplete". The lock is tried, not waited for, and let go at once."""
    from filelock import FileLock, Timeout

    path = Path(out) / LOCK_FILE
    if _resolved(Path(out)) in _HELD_HERE or not path.is_file() or path.is_symlink():
        return None
    lock = FileLock(os.fspath(path), timeout=0, thread_local=False, is_singleton=False)
    try:
        lock.acquire()
    except Timeout:
        return _holder(Path(out))
    except OSError:  # (a directory it cannot write: no evaluation writes there either)
        return None
    lock.release()
    return None


def locks_output_dir(func: F) -> F:
    """Decorate ``func`` so that its ``out=`` directory (when not None) is held while it runs."""
    return _holding(func, run_dir=False)


def locks_run_dir(func: F) -> F:
    """`locks_output_dir` for a function that writes an evaluation run into ``out=``: an
    ``out`` that is not such a run's own (`check_not_foreign`) is refused first. (A probe
    writes beside the runs of a report directory, or in a run's, as the report reads it.)"""
    return _holding(func, run_dir=True)


def _holding(func: F, run_dir: bool) -> F:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        out = kwargs.get("out")
        if out is None:
            return func(*args, **kwargs)
        with hold_output_dir(out, run_dir=run_dir):
            return func(*args, **kwargs)

    # For a caller that holds ``out`` itself across more than the call (the command line,
    # across a run and its report: released in between, a second run took the directory
    # while the first plotted, and the two reports mixed).
    wrapper.unlocked = func  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]


def exit_with_parent(
    poll_seconds: float = 0.5, *, signum: int = signal.SIGTERM, parent_pid: int | None = None
) -> None:
    """End this process (``signum``, then exit) when its parent process dies.

    Call it at the start of a worker process (a pool initializer). ``parent_pid``: the
    parent's pid as the parent gave it (then a parent that died before this call counts
    too); by default multiprocessing's parent, else the current parent.
    """
    import multiprocessing

    if parent_pid is None:
        parent = multiprocessing.parent_process()
        parent_pid = parent.pid if parent is not None else os.getppid()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            pr_set_pdeathsig = 1
            libc.prctl(pr_set_pdeathsig, int(signum))

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(poll_seconds)
        os._exit(1)  # the evaluator is gone: nobody will read this worker's results

    threading.Thread(target=watch, name="turnbudget-exit-with-parent", daemon=True).start()


def _children() -> dict[int, list[int]]:
    """Every process's children, from ``/proc`` (empty where there is none)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return children
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # (it ended meanwhile)
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()  # (the name may hold spaces and parens)
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def _signal(pid: int, handle: int | None, signum: int) -> None:
    with contextlib.suppress(OSError):  # (it ended meanwhile)
        if handle is not None:
            signal.pidfd_send_signal(handle, signum)
        else:
            os.kill(pid, signum)


def kill_tree(pid: int, wait: float = 5.0, *, include_root: bool = True) -> None:
    """SIGKILL ``pid`` and every process below it (found through ``/proc``; only ``pid``
    where there is no ``/proc``), and wait (at most ``wait`` seconds) until each has ended;
    with ``include_root=False`` only the processes below it (this process's own, say).

    Each is stopped first (SIGSTOP), so none can fork a new one or be reparented out of
    reach while the tree is walked; the caller still reaps ``pid`` if it is its child.
    Processes that left the tree before (a double fork whose middle process exited) are
    beyond reach unless a subreaper kept them in it."""
    import select

    handles: dict[int, int | None] = {}  # pid -> its pidfd (Linux), held until it ends
    frontier = [pid] if include_root else []
    try:
        for walked in range(100):  # (each pass stops what the last found; a fork bomb ends too)
            for p in frontier:
                handle = None
                if hasattr(os, "pidfd_open"):
                    try:
                        handle = os.pidfd_open(p)
                    except OSError:  # (it ended meanwhile)
                        continue
                handles[p] = handle
                _signal(p, handle, signal.SIGSTOP)
            children = _children()
            tree, stack = set(), [pid]
            while stack:
                for c in children.get(stack.pop(), ()):
                    if c not in tree:
                        tree.add(c)
                        stack.append(c)
            frontier = sorted(tree - set(handles) - {pid})
            if not frontier and (walked or include_root):  # (the first pass without the root
                break  # stops nothing: it finds the root's children)
        for p, handle in handles.items():
            _signal(p, handle, signal.SIGKILL)
        ended = select.poll()  # a pidfd is readable once its process has ended
        waiting = {h for h in handles.values() if h is not None}
        for h in waiting:
            ended.register(h, select.POLLIN)
        deadline = time.monotonic() + wait
        while waiting and (left := deadline - time.monotonic()) > 0:
            for h, _ in ended.poll(left * 1000):
                ended.unregister(h)
                waiting.discard(h)
    finally:
        for handle in handles.values():
            if handle is not None:
                os.close(handle)


def _without_agent_args(argv: list[str]) -> list[str]:
    """``argv`` with the arguments of each ``--agent`` spec of outside code cut
    (``PATH.py:ATTR:ARGS`` -> ``PATH.py:ATTR:...``): they may hold a key of any shape, and
    the lock file shows the command line to whoever finds the directory in use."""
    from turnbudget.agents.registry import spec_source

    def cut(spec: str) -> str:
        location, attr, args = spec.split(":", 2) if spec.count(":") >= 2 else (spec, "", "")
        if args and spec_source(spec) in ("module", "file"):
            return f"{location}:{attr}:..."
        return spec

    # (argparse takes any unique prefix of a flag: "--ag" is "--agent", and no other flag
    # of eval's or probe's starts so)
    spellings = ("--ag", "--age", "--agen", "--agent")
    shown, spec_next = [], False
    for word in argv:
        flag, equals, spec = word.partition("=")
        if spec_next:
            word = cut(word)
        elif equals and flag in spellings:
            word = f"{flag}={cut(spec)}"
        spec_next = word in spellings
        shown.append(word)
    return shown
