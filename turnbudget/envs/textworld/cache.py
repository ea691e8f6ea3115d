"""A directory of generated TextWorld games, safe for many processes at once.

Layout: ``<root>/<family>-<settings hash>/<seed>.z8`` with its ``<seed>.json``
(which TextWorld needs for state tracking) and a ``<seed>.ok`` marker holding
the SHA-256 of both. An entry is valid only when its marker matches; anything
else (a crash mid-write, a truncated copy) is regenerated.

Writes are atomic: a game is generated in a private temporary folder next to
the entry and moved in with `os.replace`, marker last, while a per-entry file
lock makes concurrent requests for the same game generate it once.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from turnbudget._checks import PATH_CHARS, brief, make_folders

__all__ = ["CACHE_ENV_VAR", "GameCache", "default_cache_dir", "settings_key"]

#: Environment variable that overrides the default cache directory.
CACHE_ENV_VAR = "TURNBUDGET_TEXTWORLD_CACHE"

#: Bump when the way games are generated from (settings, seed) changes.
GENERATOR_VERSION = 0

#: The most bytes of an entry's marker read (its two SHA-256 digests take 150).
_MARKER_BYTES = 4096


def default_cache_dir() -> Path:
    """``$TURNBUDGET_TEXTWORLD_CACHE`` if set, else ``<user cache dir>/turnbudget/textworld``."""
    override = os.environ.get(CACHE_ENV_VAR)
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("turnbudget")) / "textworld"


def settings_key(family: str, settings: Mapping[str, Any]) -> str:
    """A stable folder name for a family and its generation settings.

    Example:
        >>> settings_key("coin_collector", {"level": 5})
        'coin_collector-f885672c61'
    """
    blob = json.dumps({"v": GENERATOR_VERSION, "settings": dict(settings)}, sort_keys=True)
    return f"{family}-{hashlib.sha256(blob.encode()).hexdigest()[:10]}"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _check_directory(path: Path, what: str) -> None:
    """Raise ``ValueError`` if ``path``, or its nearest existing ancestor, is not a directory,
    or if ``path`` is no name the game's interpreter can open."""
    name = os.fspath(path)
    # (a NUL failed at reset with "embedded null byte", naming nothing; a name that is not
    # UTF-8 only after generating a game, in the interpreter; a name too long for the
    # system was a bare OSError)
    problem = "it holds a NUL character" if "\0" in name else None
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        problem = "it is not UTF-8 text, which the game's interpreter needs"
    try:
        if problem is None:
            for candidate in (path, *path.parents):
                if candidate.exists():
                    if not candidate.is_dir():
                        problem = f"{brief(str(candidate), PATH_CHARS)} is a file"
                    break
    except OSError as exc:
        problem = exc.strerror or str(exc)
    if problem:
        raise ValueError(f"{what} {brief(name, PATH_CHARS)} cannot be used: {problem}")


class GameCache:
    """Generated games of one family and settings, keyed by seed.

    Args:
        family: The family name (part of the folder name).
        settings: The generation settings (hashed into the folder name).
        root: The cache root; `default_cache_dir()` when None.
    """

    def __init__(
        self, family: str, settings: Mapping[str, Any], root: str | os.PathLike | None = None
    ):
        if root is not None and not isinstance(root, (str, os.PathLike)):
            raise TypeError(
                f"Expect `cache_dir` to be a directory path (str or os.PathLike) or None, "
                f"got {brief(root)}"
            )
        if root is not None and not os.fspath(root):  # "" would be the working directory
            raise ValueError("Expect `cache_dir` to be a directory path or None, got ''")
        root = Path(root).expanduser() if root is not None else default_cache_dir()
        # (relative, it meant whatever the working directory was at each later use: a copy
        # made after a chdir found no game, and another reset generated its game there)
        self.root = root.absolute()
        self.folder = self.root / settings_key(family, settings)
        _check_directory(self.root, "The TextWorld game cache root")
        _check_directory(self.folder, "The TextWorld game cache folder")
        self.family = family
        self.settings = dict(settings)
        self._verified: set[int] = set()

    def path(self, seed: int) -> Path:
        """The game file of ``seed`` (which may not exist yet)."""
        return self.folder / f"{seed}.z8"

    def is_valid(self, seed: int) -> bool:
        """Whether ``seed``'s entry is complete and matches its marker."""
        if seed in self._verified:
            return True
        game, meta, marker = self._files(seed)
        # (only regular files: a FIFO blocked the hashing for ever and a link to /dev/zero was
        # hashed for ever; an entry that is neither is regenerated, which replaces it)
        if not all(path.is_file() for path in (game, meta, marker)):
            return False
        try:
            with open(marker, "rb") as f:  # (a marker is ~150 bytes: read no more than that)
                text = f.read(_MARKER_BYTES + 1)
            # (nested past the interpreter, it was a RecursionError out of reset and pregen)
            expected = json.loads(text) if len(text) <= _MARKER_BYTES else None
            ok = expected == {"z8": _sha256(game), "json": _sha256(meta)}
        except (OSError, ValueError, RecursionError):
            ok = False
        if ok:
            self._verified.add(seed)
        return ok

    def get(self, seed: int, generate: Callable[[Path], None]) -> Path:
        """Return the game file of ``seed``, generating it first when needed.

        ``generate(path)`` must write ``path`` (a ``.z8``) and its ``.json``.
        """
        if self.is_valid(seed):
            return self.path(seed)
        import filelock

        for entry in (*self._files(seed), self.folder / f"{seed}.lock"):
            if entry.is_dir():  # fail before generating, not at the rename seconds later
                raise ValueError(
                    f"Game cache entry {str(entry)!r} is a directory; remove it to regenerate"
                )
        try:
            make_folders(self.folder)  # (removed again if it fails)
        except OSError as e:
            raise ValueError(
                f"Cannot create the game cache folder {str(self.folder)!r}: {e}"
            ) from e
        lock = filelock.FileLock(str(self.folder / f"{seed}.lock"))
        try:
            lock.acquire()
        except OSError as e:  # (a read-only folder: a bare PermissionError naming the lock)
            raise self._unwritable(seed, e) from e
        try:
            if self.is_valid(seed):  # another process made it while we waited
                return self.path(seed)
            # What a generation of this entry killed mid-way left (a worker killed on Ctrl-C
            # or a timeout): no one else writes it while the lock is held.
            for stale in self.folder.glob(f".{seed}-*"):
                shutil.rmtree(stale, ignore_errors=True)
            self._write(seed, generate)
        finally:
            lock.release()
        if not self.is_valid(seed):
            raise RuntimeError(
                f"Game cache entry {self.path(seed)} is still invalid after generation"
            )
        return self.path(seed)

    def _files(self, seed: int) -> tuple[Path, Path, Path]:
        return self.path(seed), self.folder / f"{seed}.json", self.folder / f"{seed}.ok"

    def _unwritable(self, seed: int, error: OSError) -> ValueError:
        return ValueError(
            f"Cannot write game {seed} into the game cache folder "
            f"{brief(str(self.folder), PATH_CHARS)}: {error.strerror or error}"
        )

    def _write(self, seed: int, generate: Callable[[Path], None]) -> None:
        game, meta, marker = self._files(seed)
        try:  # (a read-only folder whose lock file was already there fails here)
            marker.unlink(missing_ok=True)  # the entry is invalid from here until it is back
            tmp = Path(tempfile.mkdtemp(prefix=f".{seed}-", dir=self.folder))
        except OSError as e:
            raise self._unwritable(seed, e) from e
        try:
            tmp_game = tmp / "game.z8"
            generate(tmp_game)
            tmp_meta = tmp_game.with_suffix(".json")
            digest = {"z8": _sha256(tmp_game), "json": _sha256(tmp_meta)}
            (tmp / "ok").write_text(json.dumps(digest))
            settings_file = self.folder / "settings.json"
            if not settings_file.exists():
                (tmp / "settings.json").write_text(
                    json.dumps({"family": self.family, "settings": self.settings}, indent=1)
                )
                os.replace(tmp / "settings.json", settings_file)
            os.replace(tmp_meta, meta)
            os.replace(tmp_game, game)
            os.replace(tmp / "ok", marker)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
