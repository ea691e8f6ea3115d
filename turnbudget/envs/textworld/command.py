"""One turn, one command: accept only what a TextWorld game's own grammar parses as one action.

The Inform 7 parser that runs TextWorld games reads one input line as a
*sequence* of commands. Its tokeniser makes ``.``, ``,`` and ``"`` words of
their own, and the parser then

- starts a new command after a full stop or the word ``then``
  (``"go west. go north"``, ``"go west then go north"``);
- starts a new command after a comma that follows a complete command
  (``"west, north"``, ``"look, quit"``);
- turns ``and`` / ``,`` between nouns, and ``all``, ``everything``, ``both``,
  ``except`` and ``but``, into one action per object (``"take coin and key"``);
- reads ``"someone, do this"`` as an order to a character, ``again`` / ``g``
  as a repeat of the last command, ``oops`` as a correction of it, and the
  interpreter's own meta verbs (``save``, ``restore``, ``quit``, ``restart``,
  ``undo``, ``script``, ``verbose``, ...) as out-of-world commands that write
  files or leave it waiting for a yes/no answer.

Listing those forms would be a blocklist that the next parser quirk defeats.
`CommandGrammar` instead accepts only the language the game itself declares:
one of its command templates (``take {o} from {c}``, ``go north``, ...) with
every ``{slot}`` filled by words of one entity name of that game (an optional
article first). Words are letters, digits, ``'`` and ``-`` only, so no
punctuation the tokeniser splits on can appear, and no word that the parser
treats as a joiner or a meta command is ever part of the vocabulary. A few
standard Inform abbreviations are rewritten to the template they stand for
(``n`` -> ``go north``, ``x box`` -> ``examine box``, ``i`` -> ``inventory``).
Anything else is refused with feedback: a spent turn that never reaches the
interpreter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from turnbudget.envs.textworld.sanitize import META_VERBS, sanitize_command

__all__ = ["PARSER_WORDS", "CommandGrammar"]

#: Words the Inform parser gives a meaning of its own (joining commands or
#: objects, repeating, correcting); never accepted inside an object name.
PARSER_WORDS = frozenset(
    {
        "then", "and", "all", "everything", "both", "but", "except", "each", "every",
        "again", "g", "oops", "o", "undo", "it", "them", "him", "her",
    }
) | META_VERBS  # fmt: skip

#: The parser words Inform reads specially wherever they stand; the others (``again``, ``g``,
#: ``oops``, ``o``, ``undo`` and the meta verbs) only as a command's first word, which a
#: thing's name never is ("take type G passkey" names a key TextWorld calls so).
_JOINERS = PARSER_WORDS - META_VERBS - {"again", "g", "oops", "o", "undo"}
_ARTICLES = ("the", "a", "an", "some")
_WORD = re.compile(r"[a-z0-9][a-z0-9'-]*\Z")
_SLOT = re.compile(r"\{[^}]*\}")
_DIRECTIONS = {
    "n": "north", "s": "south", "e": "east", "w": "west", "ne": "northeast",
    "nw": "northwest", "se": "southeast", "sw": "southwest", "u": "up", "d": "down",
}  # fmt: skip
_VERB_ALIASES = {"x": "examine", "get": "take", "i": "inventory", "inv": "inventory", "l": "look"}

_REFUSAL = (
    "One command per turn, in this game's words: a verb and the names of things, "
    "like 'go north', 'take coin' or 'open box' ('look' and 'inventory' work too)."
)
#: Inform's own answer to a thing it cannot see: what a command of the game's form gets
#: when it names no thing of the game's, as one naming a thing out of sight gets it (the
#: grammar's own refusal said which names the game knows: the coin three rooms away).
_UNSEEN = "You can't see any such thing."


class CommandGrammar:
    """The single-command language of one TextWorld game, checked before the interpreter.

    Args:
        templates: the game's command templates (``Game.command_templates``),
            e.g. ``"put {o} on {s}"``.
        entity_names: the names of the game's entities (rooms, objects, doors).
        directions: the game's direction words (``Game.directions_names``).

    Example:
        >>> g = CommandGrammar(["take {o}", "go north", "look"], ["red coin", "box"], ["north"])
        >>> g.parse("Take the  RED coin")
        ('take the red coin', '')
        >>> g.parse("n")
        ('go north', '')
        >>> g.parse("go north, take coin")[0] is None
        True
        >>> g.parse("take coin and box")[0] is None
        True
        >>> g.parse("take banana")  # (as Inform answers a thing out of sight)
        (None, "You can't see any such thing.")
    """

    def __init__(
        self, templates: Iterable[str], entity_names: Iterable[str], directions: Iterable[str]
    ) -> None:
        names = [_words(name) for name in entity_names]
        # An entity whose name holds a word the parser splits or refers on (`_JOINERS`)
        # or punctuation cannot be named safely: it stays out of the vocabulary, so
        # commands naming it are refused rather than risked. (With every parser word
        # kept out, a key named "type G passkey" could not be named: its game could not
        # be won, its own walkthrough refused.)
        vocabularies = sorted(
            {tuple(sorted(set(ws))) for ws in names if ws and not set(ws) & _JOINERS}
        )
        self._names = [frozenset(ws) for ws in names if ws]
        article = "(?:(?:" + "|".join(_ARTICLES) + ") )?"
        alternatives = [
            article + "(?:{w})(?: (?:{w}))*".format(w="|".join(map(re.escape, ws)))
            for ws in vocabularies
            if all(_WORD.match(w) for w in ws)
        ]
        slot = "(?:" + "|".join(alternatives) + ")" if alternatives else "(?!)"
        # Any words in a slot, no parser word among them: the game's form with other names.
        word = "(?!(?:" + "|".join(sorted(PARSER_WORDS)) + r")(?![a-z0-9'-]))[a-z0-9][a-z0-9'-]*"
        any_name = f"(?:{word})(?: (?:{word}))*"
        patterns, frames = [], []
        self._forms: list[tuple[tuple[str, ...], re.Pattern[str]]] = []
        for template in sorted(set(templates)):
            fixed = _SLOT.split(template.lower())
            if not template.strip() or template.lower().split()[0] in META_VERBS:
                continue
            parts = [re.escape(re.sub(r"\s+", " ", f)) for f in fixed]
            patterns.append(slot.join(parts))
            if len(parts) > 1:
                frames.append(any_name.join(parts))
                words = tuple(w for f in fixed for w in f.split())
                self._forms.append((words, re.compile(f"({slot})".join(parts))))
        self._pattern = re.compile("|".join(f"(?:{p})" for p in patterns) or "(?!)")
        self._frames = re.compile("|".join(f"(?:{p})" for p in frames) or "(?!)")
        self._directions = frozenset(d.lower() for d in directions)

    @classmethod
    def from_game(cls, game: Any) -> CommandGrammar:
        """The grammar of a ``textworld.Game`` (templates, entity names, directions)."""
        names = [info.name for info in game.infos.values() if info.name]
        return cls(game.command_templates, names, game.directions_names)

    def parse(self, action: object) -> tuple[str | None, str]:
        """Return ``(command, "")`` for one command of this game, or ``(None, feedback)``.

        ``action`` is first sanitized (`sanitize_command`: text only, one line,
        no control characters, lowercased); the result must then be one
        instance of the game's grammar.
        """
        command, refusal = sanitize_command(action)
        if command is None:
            return None, refusal
        words = command.split(" ")
        if not command or not all(_WORD.match(w) for w in words):
            return None, _REFUSAL
        command = " ".join(self._expand(words))
        if self._pattern.fullmatch(command) is None:
            # (a command of the game's form naming no thing of the game's gets the answer one
            # naming a thing out of sight gets: the refusal would tell the two apart)
            return None, _UNSEEN if self._frames.fullmatch(command) else _REFUSAL
        return command, ""

    def the_one_named(self, command: str, listed: Iterable[str]) -> str | None:
        """The one command of ``listed`` that ``command`` (as `parse` returns it) names, as
        the game's parser reads names in part: ``take butter`` names ``take stick of
        butter``, and ``take key`` names ``take key from box`` (the thing taken, its
        container left out). None when no listed command, or several, fit, or when a name
        in part fits more than one thing of the game (listed or not: Inform asks "Which do
        you mean", or takes the one the player holds) or holds "of"."""
        named = self._form_of(command)
        if named is None:
            return None
        words, names = named
        for given in names:
            # (a name in part must pick out one thing of the game's, whatever is in scope or
            # listed: Inform asks "Which do you mean" of two, or takes one the player holds;
            # and it reads "of" only inside a whole name)
            whole = given in self._names
            if not whole and ("of" in given or sum(given <= full for full in self._names) != 1):
                return None
        forms = {candidate: self._form_of(candidate.lower()) for candidate in listed}
        # (the things in sight: those some listed command names, "examine chest" or "close
        # chest" for an open chest, by their whole names)
        in_sight = [full for form in forms.values() if form is not None for full in form[1]]
        fitting = set()
        for candidate, form in forms.items():
            if (
                form is not None
                and form[0][: len(words)] == words
                and len(form[1]) >= len(names)
                and all(
                    given == full
                    # (a whole name of a thing in sight names it, not a longer name holding
                    # it: Inform read "open chest" as the chest, not the wooden chest; with
                    # no chest in sight, as the wooden chest)
                    or (given < full and given not in in_sight)
                    for given, full in zip(names, form[1], strict=False)
                )
            ):
                fitting.add(candidate)
        return fitting.pop() if len(fitting) == 1 else None

    def _form_of(self, command: str) -> tuple[tuple[str, ...], list[set[str]]] | None:
        """The template words of ``command`` and the words of each thing it names (articles
        left out), or None for a command naming nothing (``look``) or not of the game."""
        for words, pattern in self._forms:
            match = pattern.fullmatch(command)
            if match is not None:
                return words, [set(name.split()) - set(_ARTICLES) for name in match.groups()]
        return None

    def _expand(self, words: list[str]) -> list[str]:
        """Rewrite the standard Inform abbreviations into the template words."""
        head = _DIRECTIONS.get(words[0], words[0])
        if len(words) == 1 and head in self._directions:
            return ["go", head]
        if words[0] == "go" and len(words) == 2:
            return ["go", _DIRECTIONS.get(words[1], words[1])]
        return [_VERB_ALIASES.get(words[0], words[0]), *words[1:]]


def _words(name: str) -> list[str]:
    return re.sub(r"\s+", " ", name.lower()).strip().split(" ")
