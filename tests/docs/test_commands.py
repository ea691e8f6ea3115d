"""The command lines the pages show name options that exist.

Most command lines are not run (a benchmark takes minutes, a server runs until stopped):
the benchmark scripts' in ``benchmarks/README.md``, the skipped bash blocks, and those in
the prose. Each one that runs ``turnbudget`` or a script of ``benchmarks/`` is read here,
and its subcommands and ``--options`` are checked against the parser that would read them
(a script's ``--help``, which every script a page runs answers). One process answers for
every command, in a few seconds.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from _doc_blocks import REPO, pages, parse
from _support import HANG_GUARD

OPTIONS = Path(__file__).with_name("_options.py")
PAGES = [*pages(), REPO / "benchmarks" / "README.md", REPO / "turnbudget" / "zoo" / "README.md"]

_SCRIPT = re.compile(r"^(?:\./)?benchmarks/[\w/]+\.py$")
_OPTION = re.compile(r"^\[?(--[A-Za-z][\w-]*)")
_SEPARATORS = {";", "&&", "||", "|", "&", "(", ")", "$(", "`"}
# What may stand before a command: the shell's words and a prefix such as `nice -n 10`.
_LEADING = {"do", "then", "else", "time", "exec", "nice", "-n", "!"}
_SPAN = re.compile(r"`([^`]+)`")


@dataclass(frozen=True)
class Command:
    """One command line of a page that runs turnbudget or a benchmark script."""

    where: str
    kind: str  # "script" (name: its path) or "turnbudget" (name: the words after it)
    name: str | tuple[str, ...]
    options: tuple[str, ...]

    @property
    def key(self) -> str:
        return json.dumps([self.kind, list(self.name) if self.kind == "turnbudget" else self.name])


def _logical_lines(text: str) -> list[tuple[int, list[str]]]:
    """``text``'s commands as shell words, with the offset of the line each starts on:
    continued lines joined, a quoted string over several lines kept whole, comments gone."""
    lines, found, i = text.split("\n"), [], 0
    while i < len(lines):
        start, line = i, lines[i]
        while True:
            while line.endswith("\\") and i + 1 < len(lines):
                i += 1
                line = line[:-1] + " " + lines[i]
            try:
                lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()")
                lexer.whitespace_split, lexer.commenters = True, "#"
                words = list(lexer)
                break
            except ValueError:  # a quotation that closes on a later line
                if i + 1 == len(lines):
                    words = []
                    break
                i += 1
                line += "\n" + lines[i]
        found.append((start, words))
        i += 1
    return found


def _commands(words: list[str]) -> list[tuple[str, str | tuple[str, ...], list[str]]]:
    """The turnbudget and benchmark-script invocations among one line's ``words``."""
    simple: list[list[str]] = [[]]
    for word in words:
        if word in _SEPARATORS:
            simple.append([])
        else:
            simple[-1].append(word)
    found = []
    for command in simple:
        for j, word in enumerate(command):
            before = command[:j]
            after_python = before and Path(before[-1]).name.startswith("python")
            if _SCRIPT.match(word) and after_python:
                found.append(("script", word.removeprefix("./"), command[j + 1 :]))
                break
            leading = all(w in _LEADING or w.isdigit() or re.match(r"^\w+=", w) for w in before)
            by_module = len(before) >= 2 and before[-1] == "-m" and "python" in before[-2]
            if Path(word).name == "turnbudget" and (leading or by_module):
                rest = command[j + 1 :]
                names = tuple(_prefix_words(rest))
                if names or not rest or rest[0].startswith("-"):
                    found.append(("turnbudget", names, rest))
                break
    return found


def _prefix_words(rest: list[str]):
    """The words before the first option that may name subcommands (lower-case words)."""
    for word in rest:
        if not re.match(r"^[a-z][a-z-]*$", word):
            return
        yield word


def _prose(page: Path) -> str:
    """``page`` without its fenced blocks, line for line (blanked), so spans keep their line."""
    lines, inside = [], False
    for line in page.read_text(encoding="utf-8").split("\n"):
        if line.strip().startswith("```"):
            inside = not inside
            lines.append("")
        else:
            lines.append("" if inside else line)
    return "\n".join(lines)


def page_commands(page: Path) -> list[Command]:
    """Every command line of ``page`` that runs turnbudget or a benchmark script: in its
    bash blocks (run or skipped) and in its prose's code spans."""
    where = page.relative_to(REPO) if page.is_relative_to(REPO) else page
    texts = [(b.line, b.code) for b in parse(page) if b.lang == "bash"]
    prose = _prose(page)
    texts += [
        (prose[: span.start()].count("\n") + 1, span[1].replace("\\\n", " "))
        for span in _SPAN.finditer(prose)
    ]
    found = []
    for first, text in texts:
        for offset, words in _logical_lines(text):
            for kind, name, rest in _commands(words):
                options = tuple(m[1] for w in rest if (m := _OPTION.match(w)))
                found.append(Command(f"{where}:{first + offset}", kind, name, options))
    return found


@pytest.fixture(scope="module")
def accepted() -> dict[str, dict]:
    """What each command of every page accepts, from one process."""
    wanted = {c.key: json.loads(c.key) for page in PAGES for c in page_commands(page)}
    env = dict(os.environ, MPLBACKEND="Agg")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    out = subprocess.run(
        [sys.executable, str(OPTIONS)], input=json.dumps(list(wanted.values())),
        cwd=REPO, env=env, capture_output=True, text=True, timeout=HANG_GUARD, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout)


def test_the_pages_show_command_lines():
    """The reader below finds the commands it checks (a change of format would hide them)."""
    commands = [c for page in PAGES for c in page_commands(page)]
    kinds = {(c.kind, c.name if c.kind == "script" else c.name[:1]) for c in commands}
    assert ("script", "benchmarks/pass_at_kt.py") in kinds
    assert ("script", "benchmarks/speed/eval_overhead.py") in kinds
    assert {("turnbudget", (w,)) for w in ("eval", "probe", "train", "textworld")} <= kinds
    assert len(commands) > 150


def test_the_reader_splits_lines_as_the_shell_does(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "Run `turnbudget textworld pregen turnbudget/A-v0 --seeds 0-9` first.\n\n"
        "<!-- skip: long -->\n```bash\n"
        "for s in 1 2; do .venv/bin/turnbudget validate --env X \\\n  --seed $s | grep -E x; done\n"
        'python -c "\nimport turnbudget\n" && nice -n 10 python benchmarks/a.py --b 1  # --c\n'
        "pip install -e '.[rl]' in the turnbudget checkout\n"
        "```\n",
        encoding="utf-8",
    )
    found = [(c.where.rpartition(":")[2], c.kind, c.name, c.options) for c in page_commands(page)]
    assert found == [
        ("5", "turnbudget", ("validate",), ("--env", "--seed")),
        ("7", "script", "benchmarks/a.py", ("--b",)),
        ("1", "turnbudget", ("textworld", "pregen"), ("--seeds",)),
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_command_line_names_options_that_exist(page: Path, accepted: dict[str, dict]):
    wrong = []
    for command in page_commands(page):
        answer = accepted[command.key]
        shown = (
            command.name if command.kind == "script" else " ".join(("turnbudget", *command.name))
        )
        if "error" in answer:
            wrong.append(f"{command.where}: {answer['error']}")
            continue
        unknown = [o for o in command.options if o not in answer["options"]]
        if unknown:
            wrong.append(f"{command.where}: `{shown}` has no option {', '.join(unknown)}")
    assert not wrong, "\n".join(wrong)
