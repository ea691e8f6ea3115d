"""Print the options each command accepts, as JSON (test_commands.py starts it).

Reads ``[[kind, name], ...]`` as JSON on stdin: ``["script", PATH]`` runs that script with
``--help`` (as ``python PATH --help`` does: its folder first on ``sys.path``) and reads the
options off its help; ``["turnbudget", [WORD, ...]]`` follows the subcommand words through
``turnbudget``'s own parser. Writes ``{key: {"options": [...]} or {"error": "..."}}``, keyed
by ``json.dumps([kind, name])``, each an answer of its own.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import runpy
import sys


def _script(path: str) -> dict:
    help_text, argv, path_before = io.StringIO(), sys.argv, list(sys.path)
    sys.argv, sys.path[:0] = [path, "--help"], [path.rpartition("/")[0] or "."]
    try:
        with contextlib.redirect_stdout(help_text):
            runpy.run_path(path, run_name="__main__")
    except SystemExit as exit_:
        if exit_.code not in (0, None):
            return {"error": f"`python {path} --help` exited {exit_.code}"}
    else:
        return {"error": f"`python {path} --help` ran to its end instead of printing its help"}
    finally:
        sys.argv, sys.path[:] = argv, path_before
    if "usage:" not in help_text.getvalue():
        return {"error": f"`python {path} --help` printed no usage"}
    return {"options": sorted(set(re.findall(r"--[A-Za-z][\w-]*", help_text.getvalue())))}


def _turnbudget(words: list[str]) -> dict:
    from turnbudget.cli import build_parser

    parser, path = build_parser(), ["turnbudget"]
    for word in words:
        subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subparsers:
            break  # an argument of the subcommand (a folder, an env id)
        if word not in subparsers[0].choices:
            choices = sorted(subparsers[0].choices)
            return {"error": f"`{' '.join(path)}` has no subcommand {word!r}: {choices}"}
        parser = subparsers[0].choices[word]
        path.append(word)
    return {"options": sorted({o for a in parser._actions for o in a.option_strings})}


def main() -> int:
    answers = {}
    for kind, name in json.load(sys.stdin):
        answers[json.dumps([kind, name])] = _script(name) if kind == "script" else _turnbudget(name)
    json.dump(answers, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
