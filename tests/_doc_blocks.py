"""Find the code blocks of the README and the documentation pages, and their markers.

The conventions (also in docs/contributing.md, "Code examples run as tests"):

- Every ```` ```python ```` block runs, in a fresh Python process whose working
  directory is a scratch folder, with this checkout's ``turnbudget`` importable.
- HTML comments on the lines right above a block's opening fence are its markers
  (invisible on GitHub and on the site); an unknown marker is an error:
  - ``<!-- continue -->``: the block continues the page's previous Python block,
    in the same process and namespace (a *chain*).
  - ``<!-- skip: REASON -->``: the block (and every block that continues it) is
    not run; the test reports it skipped with the reason.
  - ``<!-- suite: NAME -->``: the block (and its chain) runs in an optional suite
    only, ``pytest -m NAME``: ``slow`` (long), or ``rl``, ``llm``, ``ray``,
    ``compat``, ``llmrl`` (needs that extra; .ci/run runs each suite with its extra).
  - ``<!-- raises: NAME -->``: the block must raise the exception class ``NAME``
    (the last block of its chain only).
  - ``<!-- run -->``: a ```` ```bash ```` block that runs (with ``bash -euo
    pipefail``, in a scratch folder where ``.venv`` is this interpreter's venv and
    the repository's top-level files and folders are linked). Every bash block is
    marked ``run`` or ``skip: REASON``.
- Blocks of other languages (``toml``, ``text``, none) are not run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w+-]*)\s*$")
_COMMENT = re.compile(r"^\s*<!--\s*(?P<body>.*?)\s*-->\s*$")
_MARKERS = {"continue": False, "run": False, "skip": True, "raises": True, "suite": True}
SUITES = ("slow", "rl", "llm", "ray", "compat", "llmrl")
RUNNABLE = ("python", "bash")


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its language, its code and its markers."""

    page: Path
    line: int  # the 1-based line of the block's first line of code
    lang: str
    code: str
    markers: dict[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return _where(self.page, self.line)


@dataclass(frozen=True)
class Chain:
    """Blocks run in one process, in order: a block and the blocks that continue it."""

    blocks: tuple[Block, ...]

    @property
    def head(self) -> Block:
        return self.blocks[0]

    @property
    def lang(self) -> str:
        return self.head.lang


def pages() -> list[Path]:
    """The README and every page of the documentation site."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def parse(page: Path) -> list[Block]:
    """Every fenced block of ``page`` with its markers; raises ValueError on a bad marker."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, lang = len(opening["indent"]), opening["lang"]
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        if end == len(lines):
            raise ValueError(f"{_where(page, i + 1)}: a code block that never closes")
        code = "\n".join(line[indent:] for line in lines[i + 1 : end]) + "\n"
        blocks.append(Block(page, i + 2, lang, code, _markers(page, lines, i)))
        i = end + 1
    return blocks


def _markers(page: Path, lines: list[str], fence: int) -> dict[str, str]:
    markers: dict[str, str] = {}
    j = fence - 1
    while j >= 0 and (comment := _COMMENT.match(lines[j])):
        name, _, arg = comment["body"].partition(":")
        name, arg = name.strip(), arg.strip()
        if (
            name not in _MARKERS
            or _MARKERS[name] != bool(arg)
            or (name == "suite" and arg not in SUITES)
        ):
            raise ValueError(
                f"{_where(page, j + 1)}: expect a marker `continue`, `run`, `skip: REASON`, "
                f"`raises: NAME` or `suite: {'|'.join(SUITES)}` above a code block, "
                f"got <!-- {comment['body']} -->"
            )
        markers[name] = arg
        j -= 1
    return markers


def chains(page: Path) -> list[Chain]:
    """The runnable blocks of ``page`` grouped into chains; raises ValueError on misuse."""
    found: list[list[Block]] = []
    last_python: list[Block] | None = None
    for block in parse(page):
        if block.lang not in RUNNABLE:
            if block.markers:
                raise ValueError(
                    f"{block.where}: markers on a `{block.lang}` block, which never runs"
                )
            continue
        if block.lang == "bash":
            if "run" not in block.markers and "skip" not in block.markers:
                raise ValueError(
                    f"{block.where}: mark a bash block <!-- run --> or <!-- skip: REASON -->"
                )
            if {"continue", "raises"} & block.markers.keys():
                raise ValueError(f"{block.where}: a bash block neither continues nor raises")
            found.append([block])
            continue
        if "run" in block.markers:
            raise ValueError(f"{block.where}: every python block runs; `run` is for bash blocks")
        if "continue" in block.markers:
            if last_python is None:
                raise ValueError(f"{block.where}: `continue` with no python block before it")
            if {"skip", "suite"} & block.markers.keys():
                raise ValueError(
                    f"{block.where}: put `skip` or `suite` on the block its chain starts with "
                    f"({last_python[0].where})"
                )
            if "raises" in last_python[-1].markers:
                raise ValueError(f"{block.where}: continues a block that raises")
            last_python.append(block)
        else:
            last_python = [block]
            found.append(last_python)
    return [Chain(tuple(blocks)) for blocks in found]


def _where(page: Path, line: int) -> str:
    """``page:line``, the page relative to the repository when it lies inside it."""
    return f"{page.relative_to(REPO) if page.is_relative_to(REPO) else page}:{line}"
