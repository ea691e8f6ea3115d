"""Make agent commands safe for the interpreter and game text safe for a `Text` space.

Commands reach a Z-machine/Glulx interpreter that also understands its own meta
commands. Measured with TextWorld 1.7: ``"\\q"`` hangs the interpreter,
``"look\\nquit"`` and ``"quit"`` leave it waiting for a yes/no answer that
breaks every later command, and ``"look. go north"`` plays two actions in one
turn. `sanitize_command` refuses all of these with feedback instead; it is the
first, game-independent stage: the one-command guarantee itself comes from
`turnbudget.envs.textworld.command.CommandGrammar`, which lets through only what
the game's grammar parses as one command.
"""

from __future__ import annotations

import re
import unicodedata

from turnbudget.envs.core import PRINTABLE

__all__ = [
    "MAX_COMMAND_LENGTH",
    "META_VERBS",
    "PRINTABLE",
    "normalize_text",
    "sanitize_command",
]

_PRINTABLE_SET = frozenset(PRINTABLE)

#: Longer commands are refused (the Inform parser truncates long lines silently).
MAX_COMMAND_LENGTH = 200

#: Interpreter meta commands: they end, restart, undo or script the game, or
#: repeat an earlier command, which would desync TextWorld's state tracking.
META_VERBS = frozenset(
    {
        "quit", "q", "restart", "restore", "save", "undo", "script", "transcript",
        "unscript", "noscript", "version", "verbose", "brief", "superbrief",
        "normal", "notify", "again", "g", "oops", "pronouns", "nouns",
    }
)  # fmt: skip

_REFUSALS = {
    "control": "Commands must be one line of plain text: no backslashes or control characters.",
    "separator": "One command per turn, please: '.', ';' and 'then' are not allowed.",
    "meta": "That is an interpreter command, not an action in the game. Try something else.",
    "length": f"That command is too long (at most {MAX_COMMAND_LENGTH} characters).",
    "type": "Commands must be text.",
}


def normalize_text(text: str) -> str:
    """Return ``text`` with every character in `PRINTABLE`.

    Accented letters lose their accents (NFKD), other non-printable characters
    are dropped, and tabs become spaces.

    Example:
        >>> normalize_text("Caf\\u00e9 \\u2013 na\\u00efve\\x00!")
        'Cafe  naive!'
    """
    text = unicodedata.normalize("NFKD", text).replace("\t", " ")
    return "".join(ch for ch in text if ch in _PRINTABLE_SET)


def sanitize_command(command: object) -> tuple[str | None, str]:
    """Return ``(command, "")`` for a safe command, or ``(None, feedback)`` to refuse it.

    Surrounding whitespace (a trailing newline from an LLM, say) is trimmed,
    runs of spaces collapse, accents are folded and the command is lowercased.

    Example:
        >>> sanitize_command("  Go   North\\n")
        ('go north', '')
        >>> sanitize_command("\\\\q")[0] is None
        True
        >>> sanitize_command("look\\nquit")[0] is None
        True
    """
    if not isinstance(command, str):
        return None, _REFUSALS["type"]
    # (NFKD never shortens a text, and may make one character 18: a long one is refused
    # before it is normalised, which took 0.75 s and 350 MB for 10 MB of U+FDFA)
    command = command.strip()
    if len(command) > MAX_COMMAND_LENGTH:
        return None, _REFUSALS["length"]
    command = unicodedata.normalize("NFKD", command).strip()
    if len(command) > MAX_COMMAND_LENGTH:
        return None, _REFUSALS["length"]
    if "\\" in command or any(unicodedata.category(ch) == "Cc" and ch != "\t" for ch in command):
        return None, _REFUSALS["control"]
    command = "".join(ch for ch in command.replace("\t", " ") if ch.isascii())
    command = re.sub(r"\s+", " ", command).strip().lower()
    if re.search(r"[.;]|\bthen\b", command):
        return None, _REFUSALS["separator"]
    words = command.split(" ")
    if words[0] in META_VERBS or (words[0] in {"y", "yes"} and len(words) == 1):
        return None, _REFUSALS["meta"]
    return command, ""
