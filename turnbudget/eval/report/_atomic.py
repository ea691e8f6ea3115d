"""Report files written whole or not at all: a temporary file in the same directory, then
`os.replace`, so a failure midway (a full disk, text that cannot be encoded, a plot that
fails) leaves the previous file as it was.

Example:
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> path = write_text_atomic(root / "report.md", "# Runs\\n")
    >>> path.read_text(), sorted(p.name for p in root.iterdir())
    ('# Runs\\n', ['report.md'])
    >>> write_text_atomic(root / "x.md", "a\\udcffb\\n").read_text()  # (a lone surrogate)
    'a\\\\udcffb\\n'
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from turnbudget.records.files import naming_errors

__all__ = ["one_line", "printable", "save_figure", "write_text_atomic"]


def printable(text: str) -> str:
    """``text`` with what UTF-8 cannot hold (lone surrogates, as a shell hands undecodable
    bytes to Python) written as backslash escapes: ``"a\\udcff"`` -> ``"a\\\\udcff"``."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def one_line(text: str) -> str:
    """``text`` with each character that is not printable (a line break, an ESC, a lone
    surrogate) written as its Python escape: a table row or a plot's label stays one line,
    and no terminal control reaches the page, the figure or a warning on stderr (a run
    logged before labels were checked may hold any).

    Example:
        >>> print(one_line("a\\nb\\x1b[31m"))
        a\\nb\\x1b[31m
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


@contextlib.contextmanager
def _replacing(path: Path) -> Iterator[Path]:
    """A fresh temporary path next to ``path`` (same suffix) that replaces it when the block
    ends without an error, and is removed when it raises. (Not made by `tempfile.mkstemp`:
    its file would be private, 0600, where the report's files take the usual permissions.)"""
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp{path.suffix}")
    try:
        with naming_errors(path, tmp):  # (the file the caller asked for, never the temporary)
            yield tmp
            os.replace(tmp, path)
    finally:
        # (a read-only file system refuses the removal too: its error hid the first one)
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` (as UTF-8, with `printable`'s escapes) to ``path`` at once; return it."""
    path = Path(path)
    data = printable(text).encode("utf-8")  # before anything is touched
    with _replacing(path) as tmp, tmp.open("xb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return path


def save_figure(fig: Any, path: str | Path) -> Path:
    """``fig.savefig(path)`` at once (the format from ``path``'s suffix); return the path."""
    path = Path(path)
    with _replacing(path) as tmp:
        fig.savefig(tmp, format=path.suffix.lstrip(".").lower() or None)
    return path
