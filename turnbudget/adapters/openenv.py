"""The games as an OpenEnv environment: a server for every registered id, and its client.

OpenEnv (``openenv-core``, https://github.com/meta-pytorch/OpenEnv) serves an
``Environment`` over HTTP and WebSocket; TRL, SkyRL, verifiers and Unsloth
consume such servers. This module is that door for every ``turnbudget/`` id
(the ``openenv`` extra), in OpenEnv's own shapes:

- `TextGameAction` (one field, ``command``), `TextGameObservation` and
  `TextGameState`, pydantic models on OpenEnv's ``Action``, ``Observation``
  and ``State``;
- `TextGameEnvironment`, the server-side ``Environment``: each session owns
  one env stack (`turnbudget.make`); ``reset`` takes the env id, the seed, the
  budget T or a BudgetMix spec, and the visibility;
- `make_app`, OpenEnv's ``HTTPEnvServer`` on a FastAPI app with a bound on
  concurrent sessions, plus ``GET /sessions`` (active and maximum sessions);
  `serve` runs it under uvicorn, and ``turnbudget serve-env`` is its command;
- `TextGameEnv`, the client (OpenEnv's ``EnvClient``: async, ``.sync()`` for
  plain code), and `EnvServer`, which runs ``turnbudget serve-env`` in a
  subprocess for tests, notebooks and benchmarks;
- `GymSession`, one session behind Gymnasium's ``reset`` and ``step`` (what
  `turnbudget.utils.check_group_seeding` checks a served env through).

What the client sees follows the evaluator's agent view
(`turnbudget.eval.run.agent_view.agent_info`): no oracle, and the budget keys
(``turn_budget``, ``turns_left``...) only when the budget is visible. OpenEnv
drops an observation's ``metadata`` from what it sends, so ``terminated``,
``truncated``, ``turns_left`` (None unless visible), ``seed`` and ``env_id``
travel as fields of the observation; its ``metadata`` holds the same values,
filled from those fields wherever an observation is built (server or client).

Episodes need a session: each WebSocket connection (`TextGameEnv`) gets its
own env, reclaimed when the connection closes or drops. OpenEnv's plain HTTP
``POST /reset`` is stateless (a fresh env per request, closed after it), so it
shows a first observation but no episode follows it over HTTP.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit, urlunsplit

import gymnasium as gym

try:
    import openenv.core  # noqa: F401 - (named apart: PyPI's `openenv` is another package)
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "turnbudget.adapters.openenv needs OpenEnv: pip install -e '.[openenv]' in the "
        "turnbudget checkout (openenv-core 0.3; PyPI's `openenv` is another package)"
    ) from error
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.http_server import HTTPEnvServer
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import (
    Action,
    ConcurrencyConfig,
    EnvironmentMetadata,
    Observation,
    ServerCapacityStatus,
    State,
)
from pydantic import Field, ValidationError, model_validator

import turnbudget
from turnbudget._checks import (
    MAX_SEED,
    MAX_TURN_BUDGET,
    brief,
    check_positive_int,
    is_finite,
    is_int,
    is_real,
)
from turnbudget.adapters.session import normalize_reveal
from turnbudget.agents import secrets
from turnbudget.eval.run.agent_view import agent_info, budget_visible
from turnbudget.registration import NAMESPACE

__all__ = [
    "MAX_COMMAND_CHARS",
    "MAX_MESSAGE_BYTES",
    "METADATA_KEYS",
    "RESET_ARGUMENTS",
    "TEXTWORLD_GAMES",
    "EnvServer",
    "GymSession",
    "RequestError",
    "SyncTextGameEnv",
    "TextGameAction",
    "TextGameEnv",
    "TextGameEnvironment",
    "TextGameObservation",
    "TextGameState",
    "check_textworld_games",
    "make_app",
    "serve",
]

#: The longest command a step accepts: a longer one is refused with an error and spends no
#: turn (up to it, the game judges the command: nonsense is a spent turn with feedback).
MAX_COMMAND_CHARS = 4096
#: The largest WebSocket message the server reads; a larger one closes that connection
#: (close code 1009) and its session is reclaimed.
MAX_MESSAGE_BYTES = 1 << 20
#: The client's default ``max_message_size_mb``: the largest answer it reads.
MAX_ANSWER_MB = 8
_TOLD_CHARS = 500  # (of a server's error message)
#: The log level names `serve` takes (uvicorn's).
_LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")
#: Seconds `serve` gives a client to send a request's headers (uvicorn has no such bound).
HEADER_TIMEOUT_S = 15.0
#: Open HTTP connections `serve` keeps; a new one past them is closed at once (each holds a
#: file descriptor: idle ones must not use up the process's).
MAX_CONNECTIONS = 512
#: The games of a generated TextWorld family a session plays by default: seeds 0..N-1. Each
#: new seed generates a game once (seconds of CPU) and keeps it on disk (about 0.4 MB), so
#: without a bound a client's seeds, or its unseeded resets, would grow the cache without end.
TEXTWORLD_GAMES = 10_000
#: What an observation's ``metadata`` carries (copied from its fields of the same names).
METADATA_KEYS = ("terminated", "truncated", "turns_left", "seed", "env_id")
#: OpenEnv's error codes for a session refused as a whole (the server closes its connection).
_SESSION_ERRORS = ("CAPACITY_REACHED", "FACTORY_ERROR", "SESSION_ERROR")
#: What `asyncio.wait_for` raises past its timeout: on Python 3.10 `asyncio.TimeoutError`,
#: which is not the builtin one (3.11 made them one).
_TIMEOUTS = (TimeoutError, asyncio.TimeoutError)
#: The arguments `TextGameEnvironment.reset` takes.
RESET_ARGUMENTS = ("seed", "episode_id", "env_id", "turn_budget", "budget_mix", "reveal")
#: The fields of OpenEnv's HTTP step request (`TextGameEnvironment.step` takes them).
_STEP_ARGUMENTS = ("action", "timeout_s", "request_id")


class RequestError(ValueError):
    """A request the server refuses (its message says what was wrong); the session stays usable.

    Over the WebSocket the client raises it as OpenEnv's ``RuntimeError("Server
    error: <message> (code: EXECUTION_ERROR)")``; over plain HTTP it is a 422
    answer whose ``detail`` is the message.
    """


class TextGameAction(Action):
    """One turn: a free-form command (``"go north"``), judged by the game."""

    command: str = Field(
        description=f"The command (at most {MAX_COMMAND_CHARS} characters; nonsense is a spent turn)"
    )


class TextGameObservation(Observation):
    """What a reset or a step shows: the text, the reward, ``done`` and the flags apart.

    ``done`` is ``terminated or truncated``; the two flags say which (never both
    for one reason: the game ended, or the budget ran out). ``info`` is the
    env's info as the evaluator shows it to an agent. ``metadata`` repeats
    `METADATA_KEYS` from the fields (OpenEnv does not send ``metadata``).
    """

    text: str = Field(default="", description="The observation text")
    terminated: bool = Field(default=False, description="The game ended (won or lost)")
    truncated: bool = Field(default=False, description="The turn budget ran out")
    turns_left: int | None = Field(
        default=None, description="Turns left, only when the budget is visible (else None)"
    )
    seed: int | None = Field(default=None, description="The episode's seed (None: unseeded)")
    env_id: str = Field(default="", description="The registered id played")
    info: dict[str, Any] = Field(
        default_factory=dict,
        description="The env's info as an agent may see it (no oracle; budget keys only when visible)",
    )

    @model_validator(mode="after")
    def _fill_metadata(self) -> TextGameObservation:
        # In place: assigning the field would run this validator again.
        self.metadata.update({key: getattr(self, key) for key in METADATA_KEYS})
        return self


class TextGameState(State):
    """A session's state: OpenEnv's ``episode_id`` and ``step_count``, the id and the seed."""

    env_id: str | None = Field(default=None, description="The registered id of the episode")
    seed: int | None = Field(default=None, description="The episode's seed")


def _is_registered(env_id: Any) -> bool:
    return isinstance(env_id, str) and env_id.startswith(f"{NAMESPACE}/") and env_id in gym.registry


def _registered(env_id: Any) -> str:
    """``env_id`` if it is a registered ``turnbudget/`` id, else a `RequestError`.

    Only registered ids are made: ``gym.make`` would import the module of a
    ``"module:id"`` string, which no client may choose.
    """
    if not _is_registered(env_id):
        raise RequestError(
            f"Expect `env_id` to be a registered {NAMESPACE}/ id "
            f"(`turnbudget list` shows them), got {brief(env_id)}"
        )
    return env_id


def _generated_textworld(env_id: str) -> bool:
    """Whether ``env_id`` (registered) is a TextWorld family whose games are generated from
    the seed (`GeneratedTextWorldEnv`), found from its registration without making it."""
    game = gym.spec(env_id).kwargs.get("game_entry_point")
    if not (isinstance(game, str) and game.startswith("turnbudget.envs.textworld.")):
        return False
    from gymnasium.envs.registration import load_env_creator

    from turnbudget.envs.textworld.generated import GeneratedTextWorldEnv

    creator = load_env_creator(game)
    return isinstance(creator, type) and issubclass(creator, GeneratedTextWorldEnv)


class TextGameEnvironment(Environment[TextGameAction, TextGameObservation, TextGameState]):
    """The server side of one session: one env stack, rebuilt when a reset asks for another.

    Args:
        default_env_id: The id played when a reset names none (None: every
            reset must name one).
        textworld_games: The games of a generated TextWorld family it plays: seeds
            ``0..textworld_games - 1`` (each the game ``turnbudget.make`` plays for that
            seed); a larger seed is refused, and an unseeded reset draws among them. None:
            every seed, and each new one adds a game to the cache on disk.

    Example (in process; the server makes one per session)::

        env = TextGameEnvironment()
        obs = env.reset(env_id="turnbudget/Maze-Easy-v0", seed=1, turn_budget=8, reveal="always")
        obs = env.step(TextGameAction(command="look"))
        obs.turns_left, obs.terminated, obs.truncated  # (7, False, False)
    """

    SUPPORTS_CONCURRENT_SESSIONS = True  # each session owns its env; nothing is shared

    def __init__(
        self, default_env_id: str | None = None, *, textworld_games: int | None = TEXTWORLD_GAMES
    ):
        super().__init__()
        self.default_env_id = None if default_env_id is None else _registered(default_env_id)
        self.textworld_games = (
            None if textworld_games is None else check_textworld_games(textworld_games)
        )
        self._env: gym.Env | None = None
        # (env id, budget_mix, reveal) the env was made for
        self._stack: tuple[str, str, str] | None = None
        self._visible = False
        self._playing = False  # an episode is running: step is allowed
        self._ended: str | None = None  # how the last episode ended, until the next reset
        self._state = TextGameState()

    def reset(  # type: ignore[override]
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        *,
        env_id: str | None = None,
        turn_budget: int | None = None,
        budget_mix: str | list[int] | dict[str, float] | None = None,
        reveal: str | None = None,
        **unknown: Any,
    ) -> TextGameObservation:
        """Start an episode; a refused reset (a `RequestError`) leaves none running, and
        `state` then says none (nothing of the previous episode stays readable).

        Args:
            seed: The episode's seed (None: the env's generator goes on).
            episode_id: OpenEnv's episode id (default: a new UUID).
            env_id: A registered ``turnbudget/`` id (default: the server's).
            turn_budget: T for this episode (default: the id's budget).
            budget_mix: Draw T per episode instead: anything `BudgetMix.coerce`
                takes from JSON (``"uniform:5-40"``, ``[10, 20]``).
            reveal: Visibility: ``"never"`` (default), ``"always"`` or ``"final=k"``.
        """
        self._playing, self._ended = False, None
        self._state = TextGameState()
        if unknown:
            raise RequestError(
                f"Unexpected reset argument(s) {', '.join(map(brief, sorted(unknown)))}: "
                f"expect {', '.join(RESET_ARGUMENTS)}"
            )
        if env_id is None:
            if self.default_env_id is None:
                raise RequestError(
                    f"Expect `env_id` to be a registered {NAMESPACE}/ id, got None (this server "
                    "has no default id: `turnbudget serve-env --env ID` sets one)"
                )
            env_id = self.default_env_id
        env_id = _registered(env_id)
        if turn_budget is not None and budget_mix is not None:
            raise RequestError("Give `turn_budget` or `budget_mix`, not both")
        if reveal is not None and not isinstance(reveal, str):
            raise RequestError(
                f"Expect `reveal` to be 'never', 'always' or 'final=k', got {brief(reveal)}"
            )
        if episode_id is not None and not isinstance(episode_id, str):
            raise RequestError(f"Expect `episode_id` to be a str or None, got {brief(episode_id)}")
        if episode_id is not None and not _is_utf8(episode_id):  # (every `state` answer failed)
            raise RequestError(
                f"Expect `episode_id` to be text UTF-8 can carry (no lone surrogate), got "
                f"{brief(episode_id)}"
            )
        if (problem := _seed_problem(seed)) is not None:
            raise RequestError(problem)
        games = self.textworld_games if _generated_textworld(env_id) else None
        if games is not None and seed is not None and seed >= games:
            raise RequestError(
                f"Expect `seed` to be below {games:,} for {env_id}: this server plays its games "
                f"0..{games - 1:,} (each is generated once and kept on disk; "
                f"`turnbudget serve-env --textworld-games N` sets how many), got {seed:,}"
            )
        try:
            # One spelling ("NEVER" is "never"), so what the env shows and what `_observe`
            # passes on never disagree.
            mode = None if reveal is None else normalize_reveal(reveal)
            budget_mix = _json_mix(budget_mix)
            stack = (env_id, repr(budget_mix), repr(mode))
            if stack != self._stack:
                games_kwargs = None if games is None else {"num_games": games}
                env = turnbudget.make(
                    env_id, budget_mix=budget_mix, reveal=mode, make_kwargs=games_kwargs
                )
                if self._env is not None:
                    self._env.close()
                self._env, self._stack, self._visible = env, stack, budget_visible(mode)
            assert self._env is not None
            options = None if turn_budget is None else {"turn_budget": turn_budget}
            text, info = self._env.reset(seed=seed, options=options)
        except (ValueError, TypeError, gym.error.Error) as exc:
            raise RequestError(f"Cannot reset {env_id!r}: {exc}") from exc
        self._state = TextGameState(
            episode_id=episode_id or str(uuid.uuid4()), step_count=0, env_id=env_id, seed=seed
        )
        self._playing = True
        return self._observe(text, 0.0, False, False, info)

    def step(  # type: ignore[override]
        self, action: TextGameAction, timeout_s: float | None = None, **unknown: Any
    ) -> TextGameObservation:
        """Play one turn (``timeout_s`` is accepted and ignored: a turn is short)."""
        if unknown.keys() - {"request_id"}:
            raise RequestError(_unexpected_step(unknown))
        if not self._playing and self._ended is not None:
            # (a session's step after done was told to use the WebSocket it was on)
            raise RequestError(
                f"No episode to step: the last one ended ({self._ended} at turn "
                f"{self._state.step_count}); call reset() for the next (no turn was spent)"
            )
        if not self._playing:
            raise RequestError(
                "No episode to step: call reset() first (none has started, or the last was refused). "
                "Episodes need a session: plain HTTP /step is stateless in OpenEnv, use the "
                "WebSocket client (TextGameEnv)"
            )
        command = getattr(action, "command", None)
        if not isinstance(command, str):
            raise RequestError(
                f"Expect a TextGameAction with a str `command`, got {brief(action)} (no turn was spent)"
            )
        if len(command) > MAX_COMMAND_CHARS:
            raise RequestError(
                f"Expect `command` to be at most {MAX_COMMAND_CHARS} characters, got "
                f"{len(command)} (no turn was spent)"
            )
        assert self._env is not None
        text, reward, terminated, truncated, info = self._env.step(command)
        self._state.step_count += 1
        self._playing = not (terminated or truncated)
        if not self._playing:
            self._ended = "terminated" if terminated else "truncated"
        return self._observe(text, float(reward), bool(terminated), bool(truncated), info)

    @property
    def state(self) -> TextGameState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="turnbudget",
            description="Text games with turn budgets: every registered turnbudget/ id",
            version=turnbudget.__version__,
        )

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env, self._stack, self._playing, self._ended = None, None, False, None

    def _observe(
        self, text: str, reward: float, terminated: bool, truncated: bool, info: dict[str, Any]
    ) -> TextGameObservation:
        # The budget shows where the text shows it: every turn, or only the last k of
        # "final=k" (the env's ``info["budget_visible"]``, which `agent_info` follows too).
        shown = self._visible and info.get("budget_visible") is True
        return TextGameObservation(
            text=text,
            reward=reward,
            done=terminated or truncated,
            terminated=terminated,
            truncated=truncated,
            turns_left=info.get("turns_left") if shown else None,
            seed=self._state.seed,
            env_id=self._state.env_id or "",
            info=agent_info(info, show_budget=False),
        )


def _is_utf8(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8 (JSON's ``"\\ud800"`` escape decodes to a lone
    surrogate, which no answer can carry)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _without_surrogates(value: Any) -> Any:
    """``value`` (parsed JSON) with every lone surrogate in its strings and keys as "?"."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8") if not _is_utf8(value) else value
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    return value


def _json_mix(budget_mix: Any) -> Any:
    """A ``{T: weight}`` BudgetMix as JSON carries its keys as strings (``{"8": 2}``): they
    are read back as ints, so that a mapping can travel at all; anything else is as given."""
    if isinstance(budget_mix, Mapping) and all(
        isinstance(key, str) and key.isascii() and key.isdigit() for key in budget_mix
    ):
        too_long = [key for key in budget_mix if len(key) > _T_DIGITS]
        if too_long:  # (int() of 4,301 digits or more raised Python's own limit as the message)
            raise ValueError(
                f"Expect every T of `budget_mix` to be at most {MAX_TURN_BUDGET:,}, got "
                f"{brief(too_long[0])}"
            )
        mix: dict[int, Any] = {}
        for key, weight in budget_mix.items():
            if int(key) in mix:  # (a dict keeps the last: the other weight was lost, silently)
                first = next(k for k in budget_mix if int(k) == int(key))
                raise ValueError(f"Expect each T of `budget_mix` once, got {first!r} and {key!r}")
            mix[int(key)] = weight
        return mix
    return budget_mix


_T_DIGITS = len(str(MAX_TURN_BUDGET))


def _check_timeout(value: Any, name: str) -> float | None:
    if value is not None and (not is_real(value) or not 0 < value < float("inf")):
        raise ValueError(
            f"Expect `{name}` to be a positive number of seconds or None, got {brief(value)}"
        )
    return None if value is None else float(value)


def check_textworld_games(value: Any) -> int:
    """``textworld_games``: a positive int, at most the number of TextWorld's game ids."""
    from turnbudget.envs.textworld.generated import MAX_GAME_ID

    if not is_int(value) or not 1 <= value <= MAX_GAME_ID + 1:
        raise ValueError(
            f"Expect `textworld_games` to be an int in 1..{MAX_GAME_ID + 1:,} (the games of a "
            f"generated TextWorld family served), got {brief(value)}"
        )
    return int(value)


def make_app(
    default_env_id: str | None = None,
    *,
    max_sessions: int = 8,
    session_timeout: float | None = None,
    textworld_games: int | None = TEXTWORLD_GAMES,
) -> Any:
    """The FastAPI app: OpenEnv's routes for `TextGameEnvironment`, and ``GET /sessions``.

    Args:
        default_env_id: The id a reset plays when it names none (checked here:
            it is built once).
        max_sessions: Concurrent WebSocket sessions at most; one more is refused
            (OpenEnv's ``CAPACITY_REACHED``) until one closes.
        session_timeout: Close sessions idle this many seconds (None: never;
            a connection that drops is reclaimed either way).
        textworld_games: The games of a generated TextWorld family a session plays
            (seeds ``0..textworld_games - 1``; None: every seed), as `TextGameEnvironment`.

    Returns:
        A ``fastapi.FastAPI`` app: ``/ws`` (sessions), ``/reset`` and ``/step``
        (stateless HTTP), ``/state``, ``/schema``, ``/metadata``, ``/health``
        and ``/sessions`` (``{"active_sessions": n, "max_sessions": m}``); not
        OpenEnv's ``/mcp`` (the games have no MCP tools, and its plain HTTP
        sessions would outlive their clients). An HTTP body over `MAX_MESSAGE_BYTES`
        is a 413; a request that does not validate is a 422 that names what was
        wrong and where, never echoing the input; a WebSocket message that is not
        a JSON object is OpenEnv's ``INVALID_JSON`` error, and the session goes on.
    """
    from fastapi import FastAPI, HTTPException, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException as StarletteHTTPException

    max_sessions = check_positive_int(max_sessions, "max_sessions")
    session_timeout = _check_timeout(session_timeout, "session_timeout")
    if textworld_games is not None:
        textworld_games = check_textworld_games(textworld_games)
    if default_env_id is not None:  # a bad id fails now, not once per client
        try:
            probe = TextGameEnvironment(default_env_id, textworld_games=textworld_games)
            probe.reset(seed=0)
            probe.close()
        except RequestError as exc:
            raise ValueError(str(exc)) from None
    app = FastAPI(title="turnbudget (OpenEnv)", version=turnbudget.__version__)
    server = HTTPEnvServer(
        functools.partial(TextGameEnvironment, default_env_id, textworld_games=textworld_games),
        TextGameAction,
        TextGameObservation,
        # (no session_timeout for OpenEnv: its reaper closed an idle session's env and freed
        # its slot but left the socket open, which then played on outside `max_sessions`;
        # `_ObjectMessages` ends the connection itself, and OpenEnv then ends the session)
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions),
    )
    server.register_routes(app)
    # OpenEnv's /mcp routes serve MCP tools, which these games have none of; over plain HTTP,
    # its `openenv/session/create` opens a session that only an idle timeout (off by default)
    # ends, so `max_sessions` such requests would lock every client out. Not served.
    app.router.routes[:] = [r for r in app.router.routes if getattr(r, "path", None) != "/mcp"]

    @app.get("/sessions", response_model=ServerCapacityStatus, tags=["Health"])
    def sessions() -> ServerCapacityStatus:
        """Sessions open now and the most allowed."""
        return server.get_capacity_status()

    @app.exception_handler(RequestError)
    async def refused(request: Request, exc: RequestError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": str(exc)})

    # FastAPI's own handlers echo the input back (a whole 1 MiB body) and answer a 500 when
    # it holds NaN (not JSON): answer what was wrong, where, and never the input itself.
    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": _errors(exc.errors())})

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail = exc.detail if isinstance(exc.detail, str) else _errors(exc.detail)
        return JSONResponse(status_code=exc.status_code, content={"detail": detail},
                            headers=getattr(exc, "headers", None))  # fmt: skip

    app.add_middleware(_StrictResetSeed)  # (added first: it runs inside the body limit)
    app.add_middleware(_BodyLimit, limit=MAX_MESSAGE_BYTES, error=HTTPException)
    app.add_middleware(_ObjectMessages, idle_timeout=session_timeout)
    return app


def _errors(errors: Any) -> list[dict[str, Any]]:
    """Validation errors as JSON that is safe to send: the kind, the place and the message
    of each (at most 20), never the input that failed."""
    items = errors if isinstance(errors, (list, tuple)) else [errors]
    safe = []
    for error in items[:20]:
        error = error if isinstance(error, Mapping) else {"msg": error}
        safe.append({
            "type": str(error.get("type", "")),
            "loc": [p if isinstance(p, int) else str(p) for p in error.get("loc", ())],
            "msg": brief(error.get("msg", "")) if not isinstance(error.get("msg"), str)
            else error["msg"][:200],
        })  # fmt: skip
    return safe


_JSON_KINDS = {bool: "true or false", str: "a string", float: "a float", list: "an array",
               dict: "an object"}  # fmt: skip


async def _send_json(send: Any, status: int, detail: Any) -> None:
    """Answer an HTTP request from ASGI middleware: ``{"detail": detail}`` with ``status``."""
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})  # fmt: skip
    await send({"type": "http.response.body", "body": body})


def _seed_problem(seed: Any) -> str | None:
    """What is wrong with a reset's ``seed`` (None: nothing; a seed may be None)."""
    if seed is not None and (not is_int(seed) or not 0 <= seed <= MAX_SEED):
        return f"Expect `seed` to be an int >= 0 (at most {MAX_SEED:,}) or None, got {brief(seed)}"
    return None


def _unexpected_step(names: Iterable[Any]) -> str:
    return (
        f"Unexpected step argument(s) {', '.join(map(brief, sorted(names)[:20]))}: "
        "expect the action and timeout_s"
    )


class _StrictResetSeed:
    """ASGI middleware: an HTTP ``POST /reset``'s ``seed`` must be JSON's int or null, as over
    a WebSocket (OpenEnv's request model turned ``true``, ``"1"`` and ``1.0`` into seed 1
    before `TextGameEnvironment.reset` could refuse them). An HTTP ``POST /reset`` or
    ``/step`` with an argument that is not theirs is refused by name (OpenEnv passes them on
    as keywords: ``self`` and ``func`` failed in its dispatch, a 500). Runs inside
    `_BodyLimit`."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if (
            scope["type"] != "http"
            or scope.get("method") != "POST"
            or scope.get("path") not in ("/reset", "/step")
        ):
            await self.app(scope, receive, send)
            return
        messages, chunks = [], []
        try:
            while True:  # (the body whole: `_BodyLimit` bounds it)
                message = await receive()
                messages.append(message)
                if message["type"] != "http.request":
                    break
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    break
        except Exception as exc:  # (`_BodyLimit`'s 413 as chunks arrive: no route to answer it)
            if not isinstance(getattr(exc, "status_code", None), int):
                raise
            await _send_json(send, exc.status_code, getattr(exc, "detail", str(exc)))
            return
        # (joined once: adding each chunk to the body copied it whole every time, and 1 MiB
        # sent in 1-byte chunks kept the server's one event loop busy for seconds to minutes)
        body = b"".join(chunks)
        replay = iter(messages)

        async def again() -> Any:
            return next(replay, None) or await receive()

        try:
            request = json.loads(body) if body else None
        except (ValueError, RecursionError):  # (not JSON, or nested too deep: a 400 below)
            if scope["path"] == "/step":  # (FastAPI's own answer, as before)
                await self.app(scope, again, send)
                return
            await _send_json(send, 400, "Expect the body to be a JSON object (it is not JSON "
                             "this server reads: malformed, or nested too deeply)")  # fmt: skip
            return
        if scope["path"] == "/step":
            unknown = set(request) - set(_STEP_ARGUMENTS) if isinstance(request, dict) else ()
            if unknown:
                detail = [{"type": "step", "loc": ["body"], "msg": _unexpected_step(unknown)}]
                await _send_json(send, 422, detail)
                return
            await self.app(scope, again, send)
            return
        unknown = sorted(set(request) - set(RESET_ARGUMENTS)) if isinstance(request, dict) else []
        if unknown:  # (refused by name before OpenEnv unpacks them: "self" and "func" crashed)
            message = (
                f"Unexpected reset argument(s) {', '.join(map(brief, unknown[:20]))}: "
                f"expect {', '.join(RESET_ARGUMENTS)}"
            )
            await _send_json(send, 422, [{"type": "reset", "loc": ["body"], "msg": message}])
            return
        seed = request.get("seed") if isinstance(request, dict) else None
        if _seed_problem(seed) is not None:  # (as FastAPI's 422s: never the input itself)
            kind = _JSON_KINDS.get(type(seed), "an int out of that range")
            message = f"Expect `seed` to be an int >= 0 (at most {MAX_SEED:,}) or null, got {kind}"
            await _send_json(send, 422, [{"type": "seed", "loc": ["body", "seed"], "msg": message}])
            return
        await self.app(scope, again, send)


class _ObjectMessages:
    """ASGI middleware between a WebSocket and OpenEnv's server, both ways.

    In: a message that is not a JSON object OpenEnv can read (an array, a string, a binary
    frame, JSON nested too deeply, an int of over 4,300 digits) reaches OpenEnv as text
    that is not JSON, which it answers with an ``INVALID_JSON`` error and goes on (it ended
    the session on the others); a reset's argument named as OpenEnv's own dispatch
    parameters (``self``, ``func``, ``session_id``) reaches the env renamed, so the env
    refuses it by name and ends its episode (OpenEnv's call failed before the env ran,
    and the next step played on the previous episode); so do a reset's keys beside
    ``type`` and ``data``, and its ``data`` when that is not an object.

    OpenEnv's ``mcp`` messages are not served (the games have no MCP tools, and their
    ``openenv/session/create`` opens sessions of their own): they reach OpenEnv as text that
    is not an object too.

    Out: an error message never repeats the input (OpenEnv's validation errors carry each
    failing value whole, and an unknown message type is quoted in full): its ``errors``
    keep the kind, place and message of each (`_errors`), its message 200 characters. A
    send to a client that has gone, an answer or the socket's close, is dropped (uvicorn's
    ClientDisconnected, an OSError, escaped OpenEnv and was logged as an "Exception in ASGI
    application": at the end of every session, and for every answer to a dropped client).

    ``idle_timeout``: a connection whose client sends nothing for that many seconds is
    closed (code 1001), and OpenEnv ends its session as for any client that leaves (its
    own reaper freed the session's slot and env but left the socket playing on)."""

    _NOT_AN_OBJECT = "<a message that is not a JSON object>"
    _DISPATCH_NAMES = frozenset({"self", "func", "session_id"})

    def __init__(self, app: Any, idle_timeout: float | None = None):
        self.app = app
        self.idle_timeout = idle_timeout

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        closed = False

        async def objects_only() -> Any:
            nonlocal closed
            if self.idle_timeout is None or closed:
                message = await receive()
            else:
                try:
                    message = await asyncio.wait_for(receive(), self.idle_timeout)
                except _TIMEOUTS:  # idle: the client is told, and OpenEnv told it has gone
                    closed = True
                    with contextlib.suppress(OSError):
                        await send({"type": "websocket.close", "code": 1001,
                                    "reason": "idle past the server's session timeout"})  # fmt: skip
                    return {"type": "websocket.disconnect", "code": 1001}
            if message["type"] == "websocket.receive":
                text = self._readable(message.get("text"))
                message = {**message, "text": text, "bytes": None}
            return message

        async def safe_errors(message: Any) -> None:
            if closed:  # (the idle close went: nothing more to this socket)
                return
            if message.get("type") == "websocket.send" and isinstance(message.get("text"), str):
                message = {**message, "text": self._safe_error(message["text"])}
            with contextlib.suppress(OSError):  # (the client has gone: see the class doc)
                await send(message)

        await self.app(scope, objects_only, safe_errors)

    def _readable(self, text: str | None) -> str:
        """``text`` as OpenEnv is to read it (see the class doc)."""
        if text is None or not text.lstrip().startswith("{"):
            return self._NOT_AN_OBJECT
        try:
            message = json.loads(text)
        except (ValueError, RecursionError):
            return self._NOT_AN_OBJECT
        if not isinstance(message, dict) or message.get("type") == "mcp":
            return self._NOT_AN_OBJECT
        if "\\u" in text and not _is_utf8(json.dumps(message, ensure_ascii=False)):
            # (a lone surrogate, JSON's "\\ud800": an error quoting it could not be sent, and
            # OpenEnv ended the session; each one is read as "?", as the games read it, but a
            # reset's episode_id, which the env refuses in words it can send: read as "?",
            # two such ids were one)
            data = message.get("data")
            episode_id = (
                data.get("episode_id")
                if message.get("type") == "reset" and isinstance(data, dict)
                else None
            )
            message = _without_surrogates(message)
            if isinstance(episode_id, str):
                message["data"]["episode_id"] = episode_id
            text = json.dumps(message)
        if message.get("type") != "reset":
            return text
        data = message.get("data", {})
        # (a reset OpenEnv's validation refuses never reaches the env, and the next step
        # played on the previous episode: data that is no object and keys beside type and
        # data reach the env as arguments it refuses by name)
        extra = {f"<{key}>": message[key] for key in message if key not in ("type", "data")}
        if not isinstance(data, dict):
            data, extra = {}, {"<data that is not an object>": None, **extra}
        clashing = self._DISPATCH_NAMES.intersection(data)
        if clashing or extra:
            renamed = {f"<{k}>" if k in clashing else k: v for k, v in data.items()}
            return json.dumps({"type": "reset", "data": {**renamed, **extra}})
        return text

    @staticmethod
    def _safe_error(text: str) -> str:
        """An outgoing error message without the input it quotes (others as they are)."""
        if '"error"' not in text[:200]:  # (most messages: observations, read no further)
            return text
        try:
            message = json.loads(text)
        except (ValueError, RecursionError):
            return text
        data = message.get("data") if isinstance(message, dict) else None
        if message.get("type") != "error" or not isinstance(data, dict):
            return text
        safe = dict(data)
        if "errors" in safe:
            safe["errors"] = _errors(safe["errors"])
        if isinstance(safe.get("message"), str) and len(safe["message"]) > 200:
            safe["message"] = safe["message"][:200] + "..."
        return json.dumps({**message, "data": safe})


class _BodyLimit:
    """ASGI middleware: an HTTP request body over ``limit`` bytes is refused with a 413
    before it is read whole (by its Content-Length, or as its chunks arrive)."""

    def __init__(self, app: Any, limit: int, error: type[Exception]):
        self.app, self.limit, self.error = app, limit, error

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > self.limit:
            await _send_json(send, 413, self._message())
            return
        seen = 0

        async def limited() -> Any:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b"")) if message["type"] == "http.request" else 0
            if seen > self.limit:
                raise self.error(status_code=413, detail=self._message())  # type: ignore[call-arg]
            return message

        await self.app(scope, limited, send)

    def _message(self) -> str:
        return f"Expect a request body of at most {self.limit} bytes (MAX_MESSAGE_BYTES)"


def serve(
    default_env_id: str | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    max_sessions: int = 8,
    session_timeout: float | None = None,
    log_level: str = "warning",
    ready: Callable[[str], None] | None = None,
    header_timeout: float = HEADER_TIMEOUT_S,
    max_connections: int = MAX_CONNECTIONS,
    textworld_games: int | None = TEXTWORLD_GAMES,
) -> None:
    """Serve `make_app` under uvicorn until SIGINT or SIGTERM: sessions close cleanly, then
    either ends it with a ``KeyboardInterrupt``.

    The socket is bound before the server starts, so ``port=0`` takes a free
    port; ``ready(base_url)`` is called once the server has started (it answers
    ``/health``, and a SIGINT or SIGTERM from then on shuts it down cleanly).

    Args:
        default_env_id: See `make_app`.
        host: The address to bind (the server has no authentication).
        port: The port (0: any free one).
        max_sessions: See `make_app`.
        session_timeout: See `make_app`.
        log_level: uvicorn's log level: a name (``"warning"``, ``"info"``...) or an int.
        ready: Called with the base URL (``http://host:port``) once the server has started.
        header_timeout: Seconds a client has to send a request's headers and body (from
            connecting, or from the previous response); then the connection is closed.
        max_connections: Open HTTP connections past which a new one is closed at once
            (WebSocket sessions count against ``max_sessions`` instead).
        textworld_games: See `make_app`.
    """
    import uvicorn

    if not (is_finite(header_timeout) and header_timeout > 0):
        raise ValueError(
            f"Expect `header_timeout` to be a positive number, got {brief(header_timeout)}"
        )
    max_connections = check_positive_int(max_connections, "max_connections")
    if not isinstance(host, str) or not host.strip():  # ('' binds every interface, unannounced)
        raise ValueError(f"Expect `host` to be an address to bind, got {brief(host)}")
    # (checked before anything binds: bind()'s OverflowError named no argument, True bound
    # port 1, and a log level or a ready that uvicorn cannot use failed once the port was bound)
    if not is_int(port) or not 0 <= port <= 65535:
        raise ValueError(f"Expect `port` to be an int in 0..65535 (0: any free), got {brief(port)}")
    if not is_int(log_level) and log_level not in _LOG_LEVELS:
        raise ValueError(
            f"Expect `log_level` to be one of {_LOG_LEVELS} or an int, got {brief(log_level)}"
        )
    if ready is not None and not callable(ready):
        raise ValueError(f"Expect `ready` to be a callable (base_url) or None, got {brief(ready)}")

    app = make_app(
        default_env_id, max_sessions=max_sessions, session_timeout=session_timeout,
        textworld_games=textworld_games,
    )  # fmt: skip
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    # (from before `ready`: a SIGTERM sent once the caller knows the server is up must find it)
    with _sigterm_as_interrupt(), contextlib.closing(sock):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
        url = f"http://{f'[{host}]' if ':' in host else host}:{sock.getsockname()[1]}"

        class Server(uvicorn.Server):
            async def startup(self, sockets: list[socket.socket] | None = None) -> None:
                await super().startup(sockets=sockets)
                # (once uvicorn handles SIGINT and SIGTERM: called before, a Ctrl-C sent as
                # soon as the caller saw it could land while asyncio built its loop, and put
                # a traceback on stderr)
                if self.started and ready is not None:
                    ready(url)

        config = uvicorn.Config(
            app, log_level=log_level, ws_max_size=MAX_MESSAGE_BYTES, timeout_graceful_shutdown=5,
            http=_deadline_protocol(header_timeout, max_connections),
        )  # fmt: skip
        Server(config).run(sockets=[sock])


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM read as Ctrl-C while the server runs: uvicorn shuts down gracefully on either,
    then raises the signal again under the handler it found, and SIGTERM's default ended the
    process by the signal (a TextWorld game being generated left its temporary files) where
    SIGINT's ends `serve` with a KeyboardInterrupt."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _deadline_protocol(header_timeout: float, max_connections: int) -> type:
    """uvicorn's h11 protocol with two bounds uvicorn lacks (a client that trickled a
    request's headers, or sent none, held its socket forever: enough of them ran the server
    out of file descriptors, and no one was served):

    - each request's headers and body must be complete within ``header_timeout`` seconds
      of the connection's start or of the previous response, else the connection is closed
      (a WebSocket session, once upgraded, has its own limits);
    - past ``max_connections`` open HTTP connections, a new one is closed at once.
    """
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderDeadline(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                transport.close()
                return
            self._arm()

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(header_timeout, self._expire)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expire(self) -> None:
            self._deadline = None
            cycle = self.cycle
            # no request read, or one whose body is still coming (trickled a byte at a time,
            # it held its socket as long as trickled headers had)
            waiting = cycle is None or cycle.response_complete or cycle.more_body
            if waiting and not self.transport.is_closing():
                self.transport.close()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()  # (the next request's headers, on a kept-alive connection)

        def handle_websocket_upgrade(self, event: Any) -> None:
            self._disarm()
            super().handle_websocket_upgrade(event)

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return HeaderDeadline


class TextGameEnv(EnvClient[TextGameAction, TextGameObservation, TextGameState]):
    """The client: one WebSocket session (one env on the server) per instance.

    OpenEnv's ``EnvClient``: async (``async with TextGameEnv(base_url=url) as
    env``), or ``.sync()`` for plain code. ``reset(**kwargs)`` takes
    `TextGameEnvironment.reset`'s arguments; ``step`` takes a `TextGameAction`
    or a command string. Both return OpenEnv's ``StepResult`` whose
    ``observation`` is a `TextGameObservation`. A refused request raises
    ``RuntimeError("Server error: <message> (code: ...)")`` and keeps the session.

    When the server fails the session (it is not running, it closed the
    connection, it did not answer within ``message_timeout_s``, or its answer
    is not OpenEnv's), the client raises a ``ConnectionError`` (a ``TimeoutError``
    for no answer) and drops the connection: the episode is lost, never a later
    answer read as this one's, and the next call opens a new session. After
    ``close()`` a call raises until ``connect()`` opens a new session. Errors
    never show a password or user name in ``base_url``, nor a server's echo of them.
    An answer over ``max_message_size_mb`` (default `MAX_ANSWER_MB`, where OpenEnv's
    is 100) closes the session: this server's answers are a few kilobytes.

    Example (a server at ``url``)::

        with TextGameEnv(base_url=url).sync() as env:
            result = env.reset(env_id="turnbudget/Maze-Easy-v0", seed=1, turn_budget=8)
            result = env.step("look")
            result.observation.truncated, result.observation.info["admissible_actions"]
    """

    def __init__(self, base_url: str, **options: Any):
        options.setdefault("max_message_size_mb", MAX_ANSWER_MB)  # (90 MiB cost 2.3 GiB)
        # (OpenEnv takes them as they come: "x" failed inside each call, inf or NaN as the
        # size at once with an OverflowError or ValueError naming nothing, and 0 or -1
        # refused every answer)
        for name in ("connect_timeout_s", "message_timeout_s"):
            if name in options:
                options[name] = _check_timeout(options[name], name)
        size = options["max_message_size_mb"]
        # (OpenEnv reads int(size * 2**20) bytes: under one byte refused every answer, and past
        # a C ssize_t every answer was an OverflowError inside websockets, an "internal error")
        if not (is_finite(size) and 1 <= size * 2**20 <= sys.maxsize):
            raise ValueError(
                "Expect `max_message_size_mb` to be a positive number of megabytes (one byte "
                f"to {sys.maxsize >> 20:,}), got {brief(size)}"
            )
        parts = urlsplit(_check_base_url(base_url))
        # OpenEnv turns only a lower-case http:// into ws:// ("HTTP://h" became ws://HTTP://h)
        # and appends /ws to the URL as given (after a query, which the server refused with
        # a 403, or a fragment): the scheme goes lower-case, the query after /ws.
        super().__init__(
            urlunsplit((parts.scheme.lower(), parts.netloc, parts.path, "", "")), **options
        )
        if parts.query:
            self._ws_url += f"?{parts.query}"
        secrets.remember(*secrets.url_secrets(base_url))  # (a server may echo them back)
        # What messages may show: no credentials, in the user info or the query (?token=).
        self._shown_url = _redact(secrets.redact(self._ws_url))
        self._closed = False
        self._in_call = False  # (one exchange at a time: `_send_and_receive`)
        self._connecting = False  # (one connection at a time: `connect`)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self._shown_url!r})"

    def sync(self) -> SyncTextGameEnv:
        """OpenEnv's synchronous client of this one, which frees its session when it is
        collected unclosed (see `SyncTextGameEnv`)."""
        return SyncTextGameEnv(super().sync())

    async def connect(self) -> TextGameEnv:
        """Open the session's connection (again after ``close()``); a `ConnectionError` that
        says where, without credentials, when the server cannot be reached."""
        self._closed = False
        if self._connecting:  # (two connections at once: the second replaced the first, which
            raise RuntimeError(  # stayed open and held a session of the server)
                f"This {type(self).__name__} is connecting already: one call at a time "
                "(give each rollout a client of its own)"
            )
        self._connecting = True
        try:
            await super().connect()
        except ConnectionError as exc:
            cause = _redact(secrets.redact(str(exc.__cause__ or exc)))
            raise ConnectionError(
                f"Cannot open a session at {self._shown_url}: {cause} (is `turnbudget serve-env` "
                "running there?)"
            ) from None
        finally:
            self._connecting = False
        return self

    async def close(self) -> None:
        self._closed = True
        await super().close()

    async def reset(self, **kwargs: Any) -> StepResult[TextGameObservation]:
        return await super().reset(**{name: _wire(name, v) for name, v in kwargs.items()})

    async def _send_and_receive(self, message: dict[str, Any]) -> dict[str, Any]:
        """``EnvClient``'s, plus: a session the server refused (at capacity, or its env
        failed) raises the server's error, whether or not its closing frame came first,
        and the next call connects again; a session the server failed (no answer in time,
        an answer that is not OpenEnv's) is dropped, so no later answer is read as this one's.
        A call while another is in flight is refused: a session plays one episode, and two
        rollouts sharing it raced its connection (internal errors, and connections left open
        that held every session of the server)."""
        if self._closed:
            raise RuntimeError(
                f"This {type(self).__name__} is closed: make a new one, or connect() for a new session"
            )
        if self._in_call:
            raise RuntimeError(
                f"This {type(self).__name__} is in a call already: a session plays one episode, "
                "one call at a time (give each rollout a client of its own)"
            )
        self._in_call = True
        try:
            return await self._exchange(message)
        finally:
            self._in_call = False

    async def _exchange(self, message: dict[str, Any]) -> dict[str, Any]:
        from websockets.exceptions import ConnectionClosed

        # OpenEnv's messages carry no request id: an answer no call asked for (a server that
        # answered a request twice) would be read as this call's. One that has arrived by
        # now, or with this call's answer, drops the session instead.
        if _unasked(self._ws):
            waiting = await self._waiting()
            if _refusal(waiting):  # (a session refused at once: its error came before any call)
                await self.disconnect()
                raise _server_error(waiting)
            self._drop()
            raise self._broken(_TWICE)
        try:
            await self._send(message)
            response = await self._receive()
        except ConnectionClosed as closed:
            response = await self._last_words(closed)
        except _TIMEOUTS:
            self._drop()
            raise TimeoutError(
                f"The server at {self._shown_url} did not answer a {message.get('type')} within "
                f"{self._message_timeout:g} s (message_timeout_s); the session is dropped (its "
                "episode is lost) and the next call opens a new one"
            ) from None
        except (ValueError, RecursionError) as exc:  # not JSON, not UTF-8, or nested too deep
            self._drop()
            raise self._broken(f"an answer that is not JSON ({type(exc).__name__})") from None
        except BaseException:  # cancelled mid-exchange: its answer must not reach the next call
            self._drop()
            raise
        if not isinstance(response, Mapping) or not isinstance(response.get("type"), str):
            self._drop()
            raise self._broken(f"an answer that is not an OpenEnv message: {brief(response)}")
        if _unasked(self._ws):
            self._drop()
            raise self._broken(_TWICE)
        if response["type"] == "error":
            if _refusal(response):
                await self.disconnect()
            raise _server_error(response)
        expected = _ANSWERS.get(message.get("type"))
        if expected is not None and (
            response["type"] != expected or not isinstance(response.get("data"), Mapping)
        ):
            self._drop()
            raise self._broken(
                f"a {brief(response['type'])} answer with data {brief(response.get('data'))} "
                f"to a {message.get('type')} (expect {expected!r} with an object)"
            )
        return dict(response)

    async def _waiting(self) -> Any:
        """The message that waits unread (`_unasked`), or None if it is not JSON or gone."""
        from websockets.exceptions import ConnectionClosed

        try:
            return await self._receive()
        except (ConnectionClosed, *_TIMEOUTS, ValueError, RecursionError):
            return None

    async def _last_words(self, closed: Exception) -> dict[str, Any]:
        """What the server sent before closing the connection (OpenEnv refuses a session
        with one error message, then closes); a `ConnectionError` if nothing."""
        from websockets.exceptions import ConnectionClosed

        ws, self._ws = self._ws, None
        try:
            if ws is None:  # (dropped meanwhile)
                raise ConnectionClosed(None, None)
            words = json.loads(await ws.recv())
            # (only a refusal: any other message waiting was an answer to an earlier request)
            if isinstance(words, Mapping) and words.get("type") == "error":
                return dict(words)
        except (ConnectionClosed, ValueError, RecursionError):
            pass
        raise ConnectionError(
            f"The server at {self._shown_url} closed this session ({_told(str(closed))}); the "
            "next call opens a new one"
        ) from None  # (the close's own text is the server's, unblanked)

    def _drop(self) -> None:
        """Abort the connection (the server reclaims its session); the next call reconnects."""
        ws, self._ws = self._ws, None
        if ws is not None:
            with contextlib.suppress(Exception):
                ws.transport.abort()

    def _broken(self, what: str) -> ConnectionError:
        """The error of an answer that drops the session; ``what`` may quote the server, whose
        echo of this client's credentials is blanked (`_told`)."""
        return ConnectionError(
            f"The server at {self._shown_url} sent {_told(what)}; the session is dropped (its "
            "episode is lost) and the next call opens a new one"
        )

    def _step_payload(self, action: TextGameAction | str) -> dict[str, Any]:
        if isinstance(action, TextGameAction):
            action = action.command
        if not isinstance(action, str):
            raise TypeError(f"Expect a command str or a TextGameAction, got {brief(action)}")
        # The server refuses a command over its limit and keeps the session, but a message over
        # MAX_MESSAGE_BYTES closes the connection (the episode with it): refuse that one here.
        if len(action) > MAX_COMMAND_CHARS and len(json.dumps(action).encode()) > _COMMAND_BYTES:
            raise ValueError(
                f"Expect `command` to be at most {MAX_COMMAND_CHARS} characters, got "
                f"{len(action)} (no turn was spent)"
            )
        return {"command": action}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[TextGameObservation]:
        fields = payload.get("observation")
        try:
            if not isinstance(fields, Mapping):
                raise TypeError(f"an observation that is not an object: {brief(fields)}")
            # (an answer without one was read as an empty observation, a string as a bool or
            # a number, and JSON's NaN or Infinity as the reward went on to the trainer)
            reward = payload.get("reward")
            if isinstance(reward, float) and not is_finite(reward):
                raise ValueError(f"a reward that is not a finite number: {reward}")
            observation = TextGameObservation.model_validate(
                {**fields, "reward": reward, "done": payload.get("done", False)}, strict=True
            )
        except (TypeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
            self._drop()
            what = _errors(exc.errors()) if isinstance(exc, ValidationError) else str(exc)
            raise self._broken(f"an observation that does not validate: {what}") from None
        return StepResult(observation=observation, reward=observation.reward, done=observation.done)

    def _parse_state(self, payload: dict[str, Any]) -> TextGameState:
        try:
            return TextGameState.model_validate(payload, strict=True)
        except (TypeError, ValueError) as exc:
            self._drop()
            what = _errors(exc.errors()) if isinstance(exc, ValidationError) else str(exc)
            raise self._broken(f"a state that does not validate: {what}") from None


#: The most bytes a step's command takes as JSON in a message that fits `MAX_MESSAGE_BYTES`.
_COMMAND_BYTES = MAX_MESSAGE_BYTES - 1024
#: The answer OpenEnv's server sends to each kind of request.
_ANSWERS = {"reset": "observation", "step": "observation", "state": "state"}
_URL_SCHEMES = ("http", "https", "ws", "wss")


_TWICE = "an answer no call asked for (it answered a request more than once)"


def _refusal(message: Any) -> bool:
    """Whether ``message`` is OpenEnv's error that refuses or ends a session (at capacity, its
    env failed), as opposed to one that refuses a request and keeps the session."""
    if not isinstance(message, Mapping) or message.get("type") != "error":
        return False
    error = message.get("data")
    return isinstance(error, Mapping) and error.get("code") in _SESSION_ERRORS


def _server_error(message: Mapping[str, Any]) -> RuntimeError:
    """The ``RuntimeError`` of an OpenEnv error message (as OpenEnv's client words it)."""
    error = message.get("data")
    error = error if isinstance(error, Mapping) else {"message": brief(error)}
    return RuntimeError(
        f"Server error: {_told(error.get('message', 'Unknown error'))} "
        f"(code: {_told(error.get('code', 'UNKNOWN'))})"
    )


def _unasked(ws: Any) -> bool:
    """Whether a message waits unread on ``ws`` (websockets' asyncio connection, which queues
    what arrives while no call reads): none should, between a call's answer and the next call."""
    frames = getattr(getattr(ws, "recv_messages", None), "frames", None)
    try:
        return frames is not None and len(frames) > 0
    except TypeError:  # (a websockets whose queue has no length: nothing to tell)
        return False


def _told(value: Any) -> str:
    """What a server's error said, as a message may show it: cut to 500 characters, without
    the credentials of this client's URL (which it may echo) or any secret-shaped text."""
    text = _redact(secrets.redact(value if isinstance(value, str) else brief(value)))
    return text if len(text) <= _TOLD_CHARS else text[:_TOLD_CHARS] + "..."  # (cut once blanked)


def _redact(text: str) -> str:
    """``text`` with the credentials of every URL in it (``scheme://user:pass@``) blanked: all
    up to the last ``@`` on the line before the next URL (a password may hold a space, a
    ``/`` or an ``@``; a later ``@`` in the text blanks more, never less)."""
    return re.sub(r"(?<=://)(?:(?!://)[^\n])*@", "***@", text)


def _check_base_url(base_url: Any) -> str:
    """``base_url`` if it is an http(s):// or ws(s):// URL with a host, else a ``ValueError``
    (which never shows the URL's credentials)."""
    shown = _redact(secrets.redact(base_url)) if isinstance(base_url, str) else brief(base_url)
    message = "Expect `base_url` to be an http://, https://, ws:// or wss:// URL with a host, got "
    if not isinstance(base_url, str):
        raise ValueError(message + shown)
    try:
        parts = urlsplit(base_url)
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError:
        raise ValueError(message + repr(shown)[:200]) from None
    if parts.scheme.lower() not in _URL_SCHEMES or not parts.hostname:
        raise ValueError(message + repr(shown)[:200])
    return base_url


def _wire(name: str, value: Any) -> Any:
    """A reset argument as JSON carries it: a NumPy integer as an int; anything JSON cannot
    carry is a ``TypeError`` here, before anything is sent."""
    if is_int(value):
        return int(value)
    try:
        json.dumps(value)
    except (TypeError, ValueError, RecursionError):  # (a cycle, or nested past the interpreter)
        raise TypeError(
            f"Expect reset argument `{name}` to be JSON (an int, a str, a list...), got {brief(value)}"
        ) from None
    return value


class SyncTextGameEnv:
    """What `TextGameEnv.sync` returns: OpenEnv's ``SyncEnvClient`` (every method and
    attribute is its own), plus: dropped without ``close()``, it closes the session once
    collected. OpenEnv's client runs its calls on a thread of its own, which keeps it alive
    until the process ends: each dropped client held a server session and a thread, and a
    worker whose error path skipped ``close()`` took every session of the server.
    """

    def __init__(self, client: Any):
        self._client = client
        self._finalizer = weakref.finalize(self, _close_quietly, client)

    def __getattr__(self, name: str) -> Any:
        if name == "_client":  # (not set yet: a copy being made)
            raise AttributeError(name)
        return getattr(self._client, name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._client.async_client._shown_url!r})"

    def connect(self) -> SyncTextGameEnv:
        self._client.connect()
        return self  # (OpenEnv's returns its client: kept alone, this one was collected)

    def close(self) -> None:
        self._finalizer.detach()
        self._client.close()

    def __enter__(self) -> SyncTextGameEnv:
        return self.connect()

    def __exit__(self, *exc: object) -> None:
        self.close()


class GymSession:
    """One server session behind Gymnasium's two calls, for code written for Gymnasium.

    ``reset(seed=s)`` -> ``(text, info)`` and ``step(command)`` -> ``(text, reward,
    terminated, truncated, info)``, where ``info`` is the observation's agent view.
    Each instance holds one session (a `TextGameEnv` connection) until `close` or the
    end of a ``with`` block (after which it refuses calls), or until it is collected
    unclosed; every reset sends ``reset_kwargs`` (``env_id``, ``turn_budget``, ``reveal``...).
    This is how `turnbudget.utils.check_group_seeding` checks a served env: ``remote =
    True`` tells it the env's RNG lives in the server's process.

    Example (a server at ``url``)::

        from turnbudget.utils import check_group_seeding

        report = check_group_seeding(
            lambda: GymSession(url, env_id="turnbudget/Maze-Easy-v0", turn_budget=8),
            turn_cap=8,
        )
    """

    remote = True

    def __init__(self, base_url: str, **reset_kwargs: Any):
        allowed = [name for name in RESET_ARGUMENTS if name != "seed"]  # the seed is reset's
        unknown = sorted(set(reset_kwargs) - set(allowed))
        if unknown:
            raise TypeError(f"Expect reset arguments among {allowed}, got {unknown}")
        self._reset_kwargs = {name: _wire(name, v) for name, v in reset_kwargs.items()}
        self._client = TextGameEnv(base_url=base_url).sync()  # (closed when collected)
        self._closed = False
        try:
            self._client.connect()
        except BaseException:
            self.close()  # its event loop's thread, too
            raise

    def __repr__(self) -> str:
        return f"GymSession({self._client.async_client._shown_url!r}, closed={self._closed})"

    def reset(self, *, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        obs = self._open().reset(seed=seed, **self._reset_kwargs).observation
        return obs.text, dict(obs.info)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs = self._open().step(action).observation
        return obs.text, float(obs.reward or 0.0), obs.terminated, obs.truncated, dict(obs.info)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._client.close()

    # (as a Gymnasium env is: ``with GymSession(url) as env`` was a TypeError)
    def __enter__(self) -> GymSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open(self) -> Any:
        if self._closed:
            raise RuntimeError("This GymSession is closed: make a new one")
        return self._client


def _close_quietly(client: Any) -> None:
    """Close OpenEnv's sync client of a `SyncTextGameEnv` collected unclosed (its session is
    freed)."""
    if getattr(client, "_loop_thread", None) is threading.current_thread():
        return  # (collected on the client's own loop, which cannot wait on itself)
    with contextlib.suppress(Exception):
        client.close()


class EnvServer:
    """``turnbudget serve-env`` in a subprocess on a free loopback port (tests, notebooks, benchmarks).

    ``start()`` waits until the server prints its URL and answers ``/health``;
    ``stop()`` (or the end of a ``with`` block, or of the interpreter) sends
    SIGTERM, then SIGKILL.

    Args:
        default_env_id: See `make_app`.
        max_sessions: See `make_app`.
        session_timeout: See `make_app`.
        startup_timeout: Seconds to wait for the server (importing OpenEnv takes ~10 s).
        log_path: The server's stderr (default: a temporary file, removed on ``stop()``).
        header_timeout: See `serve`.
        max_connections: See `serve`.
        textworld_games: See `make_app` (an int here: the server's command line has no None).

    Example (needs the ``openenv`` extra)::

        with EnvServer("turnbudget/Maze-Easy-v0") as server:
            with TextGameEnv(base_url=server.base_url).sync() as env:
                first = env.reset(seed=0)
    """

    def __init__(
        self,
        default_env_id: str | None = None,
        *,
        max_sessions: int = 8,
        session_timeout: float | None = None,
        startup_timeout: float = 120.0,
        log_path: str | os.PathLike[str] | None = None,
        header_timeout: float = HEADER_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
        textworld_games: int = TEXTWORLD_GAMES,
    ):
        if default_env_id is not None and not _is_registered(default_env_id):
            # (it goes on the server's command line: 5 was subprocess's TypeError, "--help"
            # an option of the command, and "x\0" an "embedded null byte")
            raise ValueError(
                f"Expect `default_env_id` to be a registered {NAMESPACE}/ id (`turnbudget list` "
                f"shows them) or None, got {brief(default_env_id)}"
            )
        self.default_env_id = default_env_id
        self.textworld_games = check_textworld_games(textworld_games)
        self.max_sessions = check_positive_int(max_sessions, "max_sessions")
        self.session_timeout = _check_timeout(session_timeout, "session_timeout")
        self.header_timeout = _check_timeout(header_timeout, "header_timeout") or HEADER_TIMEOUT_S
        self.max_connections = check_positive_int(max_connections, "max_connections")
        if startup_timeout is None:  # (it was a wait of 0 s: every start failed)
            raise ValueError(
                "Expect `startup_timeout` to be a positive number of seconds, got None"
            )
        self.startup_timeout = _check_timeout(startup_timeout, "startup_timeout") or 0.0
        if log_path is not None and not isinstance(log_path, (str, os.PathLike)):
            raise ValueError(f"Expect `log_path` to be a path or None, got {brief(log_path)}")
        self.log_path = None if log_path is None else Path(log_path)
        self.base_url: str | None = None
        self._own_log = False
        self._log: IO[bytes] | None = None
        self._process: subprocess.Popen[bytes] | None = None

    def __repr__(self) -> str:
        return f"EnvServer(base_url={self.base_url!r}, running={self.running})"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def command(self) -> list[str]:
        """The server's command line."""
        command = [sys.executable, "-m", "turnbudget", "serve-env", "--port", "0",
                   "--max-sessions", str(self.max_sessions),
                   "--header-timeout", str(self.header_timeout),
                   "--max-connections", str(self.max_connections),
                   "--textworld-games", str(self.textworld_games)]  # fmt: skip
        if self.default_env_id is not None:
            command += ["--env", self.default_env_id]
        if self.session_timeout is not None:
            command += ["--session-timeout", str(self.session_timeout)]
        return command

    def start(self) -> EnvServer:
        """Start the server and wait until it answers ``/health``; return self."""
        if self.running:
            return self
        if self.log_path is None:
            fd, name = tempfile.mkstemp(prefix="turnbudget-openenv-", suffix=".log")
            os.close(fd)
            self.log_path, self._own_log = Path(name), True
        self._log = self.log_path.open("ab")
        self._process = subprocess.Popen(
            self.command(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._log,
            start_new_session=True,  # Ctrl-C at a prompt goes to the caller, not the server
        )  # fmt: skip
        atexit.register(self.stop)  # never outlive the interpreter that started it
        try:
            deadline = time.monotonic() + self.startup_timeout
            self.base_url = self._read_url(deadline)
            self._wait_healthy(deadline)
        except BaseException:
            self.stop()
            raise
        return self

    def sessions(self) -> ServerCapacityStatus:
        """``GET /sessions``: the sessions open now and the most allowed."""
        if not self.running:  # (before start: a bare AssertionError; after stop: a refused URL)
            raise RuntimeError(
                "This EnvServer is not running: start() it (or use it in a with block) first"
            )
        return ServerCapacityStatus(**self._get("/sessions", timeout=10.0))

    def stop(self) -> None:
        """Stop the server (SIGTERM: its sessions close; SIGKILL after 10 s)."""
        process, self._process = self._process, None
        atexit.unregister(self.stop)
        if process is not None:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            if process.stdout is not None:
                process.stdout.close()
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._own_log and self.log_path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.log_path.unlink()
            self.log_path, self._own_log = None, False

    def log_tail(self, chars: int = 4000) -> str:
        """The end of the server's log."""
        if self.log_path is None or not self.log_path.exists():
            return ""
        return self.log_path.read_bytes()[-chars:].decode("utf-8", "replace")

    def __enter__(self) -> EnvServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _failed(self, what: str) -> RuntimeError:
        return RuntimeError(f"turnbudget serve-env {what}; its log ends with:\n{self.log_tail()}")

    def _read_url(self, deadline: float) -> str:
        """The URL from the server's first line (``serving ... at URL ...``)."""
        assert self._process is not None and self._process.stdout is not None
        out, line = self._process.stdout, b""
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._failed(f"printed no URL within {self.startup_timeout:g} s")
            if select.select([out], [], [], left)[0]:
                chunk = os.read(out.fileno(), 4096)
                if not chunk:
                    raise self._failed(f"exited (code {self._process.wait()}) before serving")
                line += chunk
        words = line.decode("utf-8", "replace").split()
        urls = [w for w in words if w.startswith("http://")]
        if not urls:
            raise self._failed(f"printed {line[:200]!r}, not a URL")
        return urls[0]

    def _wait_healthy(self, deadline: float) -> None:
        while True:
            try:
                if self._get("/health", timeout=max(deadline - time.monotonic(), 0.1)):
                    return
            except (OSError, urllib.error.URLError, ValueError):
                pass
            if not self.running:
                raise self._failed("exited before answering /health")
            if time.monotonic() > deadline:
                raise self._failed(f"did not answer /health within {self.startup_timeout:g} s")
            time.sleep(0.05)

    def _get(self, path: str, timeout: float) -> Mapping[str, Any]:
        assert self.base_url is not None
        with urllib.request.urlopen(self.base_url + path, timeout=timeout) as response:
            return json.loads(response.read())
