"""Command-line flags from a config dataclass: ``turnbudget train`` and the benchmark scripts.

One flag per field (``tasks`` -> ``--tasks``), typed by its default: a bool is
``--x`` / ``--no-x``, a tuple a comma-separated list of its elements' type. The help
of a flag is the string literal written under its field, which is how `TrainConfig`
and the scripts in ``benchmarks/`` document their settings.

Example:
    >>> import dataclasses
    >>> @dataclasses.dataclass
    ... class Config:
    ...     tasks: int = 4
    ...     ts: tuple[int, ...] = (8, 16)
    >>> parse_config(Config, ["--ts", "4,8,32"], "demo")
    Config(tasks=4, ts=(4, 8, 32))
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import itertools
import re
import textwrap
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "add_config_arguments",
    "config_from_args",
    "config_parser",
    "directory_path",
    "field_docs",
    "file_path",
    "non_negative_int",
    "parse_config",
]

C = TypeVar("C")


def field_docs(config_class: type) -> dict[str, str]:
    """The string literal under each field of a dataclass (its documentation); none for a
    class whose source cannot be read (one defined at a prompt)."""
    try:
        source = inspect.getsource(config_class)
    except (OSError, TypeError):
        return {}
    body = ast.parse(textwrap.dedent(source)).body[0].body  # type: ignore[attr-defined]
    return {
        node.target.id: str(nxt.value.value)  # type: ignore[attr-defined]
        for node, nxt in itertools.pairwise(body)
        if isinstance(node, ast.AnnAssign)
        and isinstance(nxt, ast.Expr)
        and isinstance(nxt.value, ast.Constant)
    }


#: A tuple field's own way to split its flag's text (``dataclasses.field(default=(),
#: metadata={SPLIT_FLAG: split})``, ``split(text) -> tuple`` raising ValueError), where its
#: items may hold commas themselves (`split_budget_mixes`).
SPLIT_FLAG = "split_flag"


def _split_flag(split: Any, text: str) -> tuple:
    try:
        return tuple(split(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _parse_list(kind: type, text: str) -> tuple:
    """A tuple flag's value: ``"4,8"`` -> ``(4, 8)``; an empty text is the empty tuple, and
    an empty item (``"1,,2"``, ``"1,"``) is an error rather than skipped.

    Example:
        >>> _parse_list(int, " 4, 8")
        (4, 8)
        >>> _parse_list(int, "1,,2")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: expect a comma-separated list of int with no empty item, got '1,,2'
    """
    if not text.strip():
        return ()
    items = [x.strip() for x in text.split(",")]
    if not all(items):
        raise argparse.ArgumentTypeError(
            f"expect a comma-separated list of {kind.__name__} with no empty item, got {text!r}"
        )
    try:
        return tuple(kind(x) for x in items)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expect a comma-separated list of {kind.__name__}, got {text!r}"
        ) from None


def directory_path(text: str) -> Path:
    """An argparse ``type``: a path that is not empty (``""`` would be the working directory).

    Example:
        >>> directory_path("")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: expect a directory path, got an empty one
    """
    return _non_empty_path(text, "directory")


def file_path(text: str) -> Path:
    """An argparse ``type``: a file path that is not empty (``""`` would name the working
    directory).

    Example:
        >>> file_path(" ")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: expect a file path, got an empty one
    """
    return _non_empty_path(text, "file")


def _non_empty_path(text: str, kind: str) -> Path:
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expect a {kind} path, got an empty one")
    return Path(text)


def non_negative_int(text: str) -> int:
    """An argparse ``type``: an int >= 0 (argparse names the flag in its error).

    Example:
        >>> non_negative_int("0")
        0
        >>> non_negative_int("-1")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: expect an int >= 0, got '-1'
    """
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expect an int >= 0, got {text!r}")
    return value


def config_parser(
    config_class: type, description: str, *, unset_is_none: bool = False
) -> argparse.ArgumentParser:
    """A parser with a flag per field of ``config_class`` (see `add_config_arguments`)."""
    # Descriptions are the scripts' docstrings, already laid out: keep their lines.
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_config_arguments(parser, config_class, unset_is_none=unset_is_none)
    return parser


def add_config_arguments(
    parser: argparse.ArgumentParser, config_class: type, *, unset_is_none: bool = False
) -> None:
    """Add a flag per field of ``config_class`` to ``parser``. With ``unset_is_none``, a
    flag that is not given parses to None (bools excepted), so the caller can tell
    it from one given with the default's value."""
    docs = field_docs(config_class)
    for f in dataclasses.fields(config_class):
        flag, default, doc = "--" + f.name.replace("_", "-"), f.default, docs.get(f.name, "")
        if isinstance(default, bool):
            parser.add_argument(
                flag, action=argparse.BooleanOptionalAction, default=default, help=doc
            )
            continue
        if isinstance(default, tuple):
            kind, shown = _element_type(f, default), ",".join(map(str, default)) or "none"
            split = f.metadata.get(SPLIT_FLAG)
            parser.add_argument(
                flag,
                type=(
                    (lambda text, k=kind: _parse_list(k, text))
                    if split is None
                    else (lambda text, s=split: _split_flag(s, text))
                ),
                default=None if unset_is_none else default,
                help=f"{doc} (default: {shown})",
            )
        else:
            parser.add_argument(
                flag,
                type=type(default),
                default=None if unset_is_none else default,
                help=f"{doc} (default: {default})",
            )


def _element_type(f: dataclasses.Field, default: tuple) -> type:
    """The element type of a tuple field: its default's, or, for an empty default, its
    annotation's (``tuple[str, ...]``)."""
    if default:
        return type(default[0])
    annotation = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
    match = re.match(r"\s*tuple\[\s*(int|float|str)\b", str(annotation))
    if match is None:
        raise TypeError(f"Cannot tell the element type of `{f.name}` ({annotation}) for its flag")
    return {"int": int, "float": float, "str": str}[match.group(1)]


def config_from_args(config_class: type[C], args: argparse.Namespace) -> C:
    """``config_class`` from parsed flags (attributes that are not its fields are ignored)."""
    return config_class(**{f.name: getattr(args, f.name) for f in dataclasses.fields(config_class)})


def parse_config(config_class: type[C], argv: list[str] | None, description: str) -> C:
    """``config_class`` built from the command line (``argv``; None: ``sys.argv``)."""
    args: dict[str, Any] = vars(config_parser(config_class, description).parse_args(argv))
    return config_class(**args)
