"""The ``turnbudget`` command line: ``list | play | eval | probe | validate | report | train | export-policy | serve-local | serve-env | textworld``.

Each subcommand is one module of this package that exposes
``add_arguments(parser)`` and ``run(args) -> int`` and imports nothing heavy
at module level; adding a subcommand is one line in `SUBCOMMANDS`. The
``turnbudget`` script, ``python -m turnbudget`` and ``python -m turnbudget.cli``
all run `main`.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib
import itertools
import os
import re
import sys
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

from turnbudget import __version__
from turnbudget._checks import escaped_controls

__all__ = [
    "BROKEN_PIPE",
    "INTERRUPTED",
    "SUBCOMMANDS",
    "describe_os_error",
    "error_line",
    "interrupted",
    "main",
]

#: The exit code of a command stopped by Ctrl-C (128 + SIGINT, as a shell reports one).
INTERRUPTED = 130
#: The exit code of a command whose output was closed early (``turnbudget list | head -1``):
#: 128 + SIGPIPE, what a shell reports for a program that SIGPIPE ended.
BROKEN_PIPE = 141

# name -> (module, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "list": (
        "turnbudget.cli.list",
        "list every registered env with its budget and optimal lengths",
    ),
    "play": ("turnbudget.cli.play", "play an env at the terminal"),
    "eval": ("turnbudget.cli.eval", "run a Pass@(K,T) evaluation (resumable)"),
    "probe": (
        "turnbudget.cli.probe",
        "teacher-forced probes: single-step and recovery-specific skill",
    ),
    "validate": (
        "turnbudget.cli.validate",
        "check the probe metrics on control agents whose true skills are known",
    ),
    "report": (
        "turnbudget.cli.report",
        "rebuild report.md, summary.json and plots from run logs",
    ),
    "train": (
        "turnbudget.cli.train",
        "train a policy: behaviour cloning or MaskablePPO (rl extra)",
    ),
    "export-policy": (
        "turnbudget.cli.export_policy",
        "write a trained policy in the zoo format (weights.npz: plays without torch)",
    ),
    "serve-local": (
        "turnbudget.cli.serve_local",
        "serve Gemma 3 270M on loopback for LLM agents (llm extra)",
    ),
    "serve-env": (
        "turnbudget.cli.serve_env",
        "serve every registered env over OpenEnv (HTTP and WebSocket; openenv extra)",
    ),
    "textworld": (
        "turnbudget.cli.textworld",
        "TextWorld games: `pregen` fills the game cache",
    ),
}


#: The most characters of an error line's message (it may quote what was typed: 100 KB were
#: printed whole).
MAX_MESSAGE_CHARS = 2000


def shown(message: str) -> str:
    """``message`` as an error line shows it: control characters escaped (an env id of
    ESC sequences set the terminal's title and cleared its screen), cut to
    `MAX_MESSAGE_CHARS`.

    Example:
        >>> shown("Unknown env id '\\x1b[2J'")
        "Unknown env id '\\\\x1b[2J'"
    """
    text = escaped_controls(message)
    if len(text) > MAX_MESSAGE_CHARS:
        text = f"{text[:MAX_MESSAGE_CHARS]}... ({len(text):,} characters)"
    return text


# An option named like a secret's (``--key``, ``--openai-api-key``, ``--token``), its dashes
# read as underscores: where no such option exists, the value typed with it is a key given
# by mistake, and no shape finds every key (a Gemini key is letters and digits).
_SECRET_OPTION = re.compile(r"passw|(?:^|_)(?:api_?key|key|token|secret|credentials?|auth)(?:_|$)")
_NOT_SHOWN = "(not shown: it may be a secret)"


#: Where `_StoreOnce` keeps the options given so far (removed once the arguments are parsed).
_GIVEN = "_options_given"


class _StoreOnce(argparse._StoreAction):
    """argparse's ``store`` for an option given at most once: ``--tasks 1 --tasks 3`` ran 3
    tasks without a word about the 1 (``append`` options, such as ``--env``, take several)."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        given = namespace.__dict__.setdefault(_GIVEN, set())
        if self.dest in given and self.option_strings:
            parser.error(f"argument {'/'.join(self.option_strings)}: given twice; give it once")
        given.add(self.dest)
        super().__call__(parser, namespace, values, option)


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors (which quote the value typed) are `shown`, with
    every secret blanked; the value of an unknown option named like a secret is not shown.
    An option that stores one value refuses a second (`_StoreOnce`)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.register("action", None, _StoreOnce)
        self.register("action", "store", _StoreOnce)

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        args = [*(sys.argv[1:] if args is None else args)]  # (`list` is the subcommand here)
        for arg in itertools.takewhile(lambda a: a != "--", args):
            name, equals, value = arg.partition("=")
            if name.startswith("-") and equals and value == "--":
                # (argparse before 3.13 takes that "--" for the end of the options and stores
                # [] without the option's type: `list --seeds=--` failed on a list, a traceback)
                self.error(f"argument {name}: expected one argument, got '--'")
        parsed, unknown = self.parse_known_args(args, namespace)
        if unknown:
            # The subcommand's parser says it, with its usage and the option meant: this one
            # showed `turnbudget [-h] [--version] COMMAND ...` for `turnbudget eval --ts 8`.
            parser = self._command_parser(getattr(parsed, "command", None))
            parser.error(
                f"unrecognized arguments: {' '.join(_unshown_secrets(unknown))}"
                + _meant(parser, unknown)
            )
        parsed.__dict__.pop(_GIVEN, None)
        return parsed

    def _command_parser(self, command: str | None) -> argparse.ArgumentParser:
        """The parser of subcommand ``command``; this one where there is none."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction) and command in action.choices:
                return action.choices[command]
        return self

    def error(self, message: str) -> NoReturn:
        from turnbudget.agents.secrets import redact

        super().error(shown(redact(message)))


def _meant(parser: argparse.ArgumentParser, unknown: list[str]) -> str:
    """`` (did you mean --t?)`` for the first unknown option one of ``parser``'s is close to:
    the Python API's plural (``--ts`` for ``ts=``) or a typo; a positional argument given as
    an option (``play --env ID``) is named; "" where none is.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> _ = parser.add_argument("--t"), parser.add_argument("--tasks"), parser.add_argument("env_id")
        >>> _meant(parser, ["--ts", "8"]), _meant(parser, ["--taks=3"]), _meant(parser, ["--x"])
        (' (did you mean --t?)', ' (did you mean --tasks?)', '')
        >>> _meant(parser, ["--env"])
        ' (env_id is given without a flag)'
    """
    options = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
    positionals = [a.dest for a in parser._actions if not a.option_strings]
    for arg in unknown:
        name = arg.partition("=")[0]
        if not name.startswith("--"):
            continue
        given_as = name[2:].replace("-", "_")
        for dest in positionals:
            if given_as and dest.startswith(given_as):
                return f" ({dest} is given without a flag)"
        if name.endswith("s") and name[:-1] in options:
            return f" (did you mean {name[:-1]}?)"
        close = difflib.get_close_matches(name, options, n=1, cutoff=0.75)
        if close:
            return f" (did you mean {close[0]}?)"
    return ""


def _unshown_secrets(unknown: list[str]) -> list[str]:
    """The unknown arguments, each value given to an option named like a secret's (as the
    next argument, or after ``=``) replaced by `_NOT_SHOWN`.

    Example:
        >>> _unshown_secrets(["--openai-api-key", "AIzaX1", "--colour=red", "--token=t0k"])
        ['--openai-api-key', '(not shown: it may be a secret)', '--colour=red', '--token=(not shown: it may be a secret)']
    """
    kept, after_secret = [], False
    for arg in unknown:
        if after_secret and not arg.startswith("-"):
            kept.append(_NOT_SHOWN)
            after_secret = False
            continue
        name, equals, _ = arg.partition("=")
        after_secret = name.startswith("-") and bool(
            _SECRET_OPTION.search(name.lstrip("-").lower().replace("-", "_"))
        )
        kept.append(f"{name}={_NOT_SHOWN}" if after_secret and equals else arg)
        after_secret = after_secret and not equals
    return kept


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="turnbudget", description="Text-game environments with turn budgets.")
    parser.add_argument("--version", action="version", version=f"turnbudget {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        module = importlib.import_module(module_name)
        sub = subparsers.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; its exit code. A file or folder that cannot be read or written
    (an unwritable ``--out``, a full disk) is a one-line error and exit code 2; Ctrl-C is
    one line and `INTERRUPTED` (``eval``, ``probe`` and ``validate`` say what was saved).
    Output whose reader has gone (a pipe into ``head``) ends the command quietly with
    `BROKEN_PIPE`, as SIGPIPE would, and what is left to print goes to the null device."""
    try:  # (Ctrl-C while the parser is built: one line too)
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:
        print("turnbudget: interrupted", file=sys.stderr)
        return INTERRUPTED
    try:
        with _warnings_as_lines(args.command):
            code = int(args.run(args) or 0)
        if sys.stdout is not None:  # (a closed pipe found here, not in the flush at exit)
            sys.stdout.flush()
        return code
    except BrokenPipeError:  # (an OSError: before the handler that calls it an error)
        _discard_stdout()
        return BROKEN_PIPE
    except OSError as exc:
        print(error_line(args.command, describe_os_error(exc)), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return interrupted(args.command, "stopped")


@contextlib.contextmanager
def _warnings_as_lines(command: str) -> Iterator[None]:
    """Show each warning as ``turnbudget COMMAND: warning: MESSAGE``, one line, as the errors
    are: Python's form showed the library's file and line, then its source line."""

    from turnbudget.agents.secrets import redact

    def show(message: Any, category: Any, filename: str, lineno: int, *rest: Any) -> None:
        text = " ".join(str(message).split())
        print(f"turnbudget {command}: warning: {shown(redact(text))}", file=sys.stderr)

    before = warnings.showwarning
    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = before


def _discard_stdout() -> None:
    """Point stdout's file descriptor at the null device, so that the flush at exit does not
    hit the broken pipe again (the recipe of Python's `signal` docs). Nothing to do for a
    stdout with no descriptor (one captured in memory)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # (None, or no descriptor)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def error_line(command: str, message: object) -> str:
    """``turnbudget COMMAND: error: MESSAGE``, every secret in it blanked
    (`turnbudget.agents.secrets.redact`: a message may quote what the user typed, and a key
    typed where a name was expected is still a key).

    Example:
        >>> error_line("eval", "The environment variable 'sk-proj-X1y2Z3w4' is not set")
        "turnbudget eval: error: The environment variable 'sk-***' is not set"
    """
    from turnbudget.agents.secrets import redact

    return f"turnbudget {command}: error: {shown(redact(str(message)))}"


def interrupted(command: str, what: str) -> int:
    """Report Ctrl-C in one line, ``turnbudget COMMAND: interrupted: WHAT`` on stderr (no
    traceback), and return `INTERRUPTED`."""
    print(f"turnbudget {command}: interrupted: {what}", file=sys.stderr)
    return INTERRUPTED


def describe_os_error(exc: OSError) -> str:
    """``"Cannot use 'path': reason"`` for an error about a path, else the error's own text.

    Example:
        >>> describe_os_error(IsADirectoryError(21, "Is a directory", "runs/x/run.json"))
        "Cannot use 'runs/x/run.json': Is a directory"
    """
    if exc.filename is None:
        return str(exc) or type(exc).__name__
    paths = repr(str(exc.filename))
    if exc.filename2 is not None:
        paths += f" (to {str(exc.filename2)!r})"
    return f"Cannot use {paths}: {exc.strerror or type(exc).__name__}"
