"""How long an env step may still run, for envs that can stop their own steps.

A Python signal handler cannot stop C code that never returns (TextWorld's
interpreter on a story file that loops forever), and a signal reaches only the
main thread anyway. An episode timeout therefore needs the env's help: an env
that waits on work it can kill (TextWorld's interpreter process) waits no
longer than `time_left` allows, then kills it and raises `StepTimeout`.

The evaluator's episode runner sets the deadline around every episode it times
(`step_deadline`), whatever the thread, so ``--timeout`` stops such an env the
same way on every backend.

Example:
    >>> time_left() is None
    True
    >>> with step_deadline(30):
    ...     seconds, limit = time_left()
    ...     0 < seconds <= 30, limit
    (True, 30.0)
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator

__all__ = ["StepTimeout", "step_deadline", "time_left"]

# (monotonic deadline, the timeout the messages name)
_DEADLINE: contextvars.ContextVar[tuple[float, float] | None] = contextvars.ContextVar(
    "turnbudget_step_deadline", default=None
)


class StepTimeout(TimeoutError):
    """An env step ran past its time limit; what ran it was stopped (reset the env)."""


@contextlib.contextmanager
def step_deadline(seconds: float | None, *, limit: float | None = None) -> Iterator[None]:
    """Let env steps inside the block run until ``seconds`` from now (None: no deadline).

    ``limit`` is the timeout that error messages name (default ``seconds``). An
    enclosing deadline that ends sooner stays in force.
    """
    if seconds is None:
        yield
        return
    deadline = time.monotonic() + seconds
    outer = _DEADLINE.get()
    if outer is not None and outer[0] <= deadline:
        yield
        return
    token = _DEADLINE.set((deadline, float(seconds if limit is None else limit)))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def time_left() -> tuple[float, float] | None:
    """``(seconds left, limit)`` of the deadline in force here, or None when there is none."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return None
    return deadline[0] - time.monotonic(), deadline[1]
