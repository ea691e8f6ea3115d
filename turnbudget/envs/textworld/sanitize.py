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
    "unicode": "Commands must be plain ASCII text (letters, digits, punctuation, spaces).",
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


def _accents_folded(text: str) -> str | None:
    """``text`` with each accented letter as its ASCII letter (``é``: ``e``) and combining marks
    dropped; None when another character outside ASCII is left (the Kelvin sign, whose
    canonical decomposition is a plain ``K``, is no accented letter: it stays refused)."""
    if text.isascii():
        return text
    out = []
    for ch in text:
        if ch.isascii():
            out.append(ch)
        elif not unicodedata.combining(ch):
            parts = unicodedata.normalize("NFD", ch)
            base = "".join(c for c in parts if not unicodedata.combining(c))
            if not base.isascii() or len(base) == len(parts):
                return None
            out.append(base)
    return "".join(out)


_ASCII_WHITESPACE = " \t\n\r\x0b\x0c"


def sanitize_command(command: object) -> tuple[str | None, str]:
    """Return ``(command, "")`` for a safe command, or ``(None, feedback)`` to refuse it.

    Surrounding whitespace (a trailing newline from an LLM, say) is trimmed,
    runs of spaces collapse, accents are folded and the command is lowercased. Any other
    character outside ASCII is refused, as every env's parser takes it: a look-alike (the
    Kelvin sign, a no-break space, a fullwidth letter) or an emoji inside a word plays no
    command (they were folded or dropped, and ``lo🙂ok`` played ``look``).

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
    # (a long one is refused before any character is looked at: NFKD, as this once used,
    # made one U+FDFA 18 characters, and 10 MB of them took 0.75 s and 350 MB)
    # (ASCII whitespace only: str.strip() took a no-break space, U+3000, U+0085 and U+001F
    # off the ends, and "look\u00a0" played "look" here while every native game refused it)
    command = command.strip(_ASCII_WHITESPACE)
    if len(command) > MAX_COMMAND_LENGTH:
        return None, _REFUSALS["length"]
    if "\\" in command or any(unicodedata.category(ch) == "Cc" and ch != "\t" for ch in command):
        return None, _REFUSALS["control"]
    command = _accents_folded(command)
    if command is None:
        return None, _REFUSALS["unicode"]
    command = command.replace("\t", " ")
    command = re.sub(r"\s+", " ", command).strip().lower()
    if re.search(r"[.;]|\bthen\b", command):
        return None, _REFUSALS["separator"]
    words = command.split(" ")
    if words[0] in META_VERBS or (words[0] in {"y", "yes"} and len(words) == 1):
        return None, _REFUSALS["meta"]
    return command, ""
