"""The games through verifiers' door: a taskset, an env and a harness on its v1 API.

verifiers (0.4, ``verifiers.v1``) composes a *taskset* (rows in, tasks out),
an *env* (how one task becomes one episode: here the game, played as the
conversation's user, as verifiers' own TextArena env plays its games) and a
*harness* (the program that answers as the agent; every model call goes
through verifiers' interception server, which records it on the trace).

- `GameTaskset` turns rows ``{env_id, seed, T}`` (`turnbudget.adapters.rows`)
  into tasks; every rollout of a task starts from the row's seed, under its T.
- `GameEnv` resets the game from the row and plays it: the game's text is the
  user's turn, the agent's reply becomes one command (`parse_command`, as
  `ChatAgent` reads replies), until the game ends or T runs out. The trace gets
  the reward ``success`` (won within T), the metrics ``terminated``,
  ``truncated`` and ``turns_used``, and in ``info["turnbudget"]`` the outcome
  and the suite's own episode record (`turnbudget.records.EpisodeRecord`).
- `ChatHarness` answers each turn with one chat completion, in this process
  (verifiers' built-in chat harnesses install a program with ``uv``, which
  needs the network).

`evaluate_rows` runs ``n`` rollouts of every row against any OpenAI-compatible
server (`turnbudget serve-local`'s Gemma, vLLM) and returns verifiers'
episodes; `rewards_pass_at_k` reads pass@k from them the way a verifiers user
would (the reward of each rollout, grouped by verifiers' task key), and
`pass_at_kt` reads the suite's Pass@(K,T) grid from the episode records they
carry (`turnbudget.eval.estimate_grid`). On the same rollouts the two agree.

verifiers finds plugins by module name: importing this module registers it as
``turnbudget_games``, so the taskset id `TASKSET_ID` (``turnbudget-games``)
resolves to it in this process. For verifiers' own command line (``vf eval``,
prime-rl), put a module named ``turnbudget_games.py`` on the path holding
``from turnbudget.adapters.verifiers import *`` and
``from turnbudget.adapters.verifiers import __all__``.

Needs the ``verifiers`` extra (verifiers 0.4, its v1 API only).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import sys
import urllib.parse
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence, Sized
from typing import Any

try:
    import verifiers.v1 as vf
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "turnbudget.adapters.verifiers needs verifiers: pip install -e '.[verifiers]' in the "
        "turnbudget checkout (verifiers 0.4, its v1 API)"
    ) from error
from pydantic import BaseModel, Field, field_validator

from turnbudget._checks import brief, check_positive_int, is_finite, is_listlike
from turnbudget.adapters.rows import check_row, check_rows
from turnbudget.adapters.session import GameSession, normalize_reveal
from turnbudget.agents.chat_format import PARSE_MODES, parse_command
from turnbudget.agents.llm import MAX_REPLY_CHARS, check_base_url, check_key_env, redact_url
from turnbudget.agents.secrets import redact, remember, url_secrets
from turnbudget.eval import GridEstimate, check_grid_values, estimate_grid, pass_at_k

__all__ = [
    "INSTRUCTIONS",
    "TASKSET_ID",
    "ChatHarness",
    "ChatHarnessConfig",
    "GameEnv",
    "GameEnvConfig",
    "GameTask",
    "GameTaskData",
    "GameTaskset",
    "GameTasksetConfig",
    "evaluate_rows",
    "pass_at_kt",
    "rewards_pass_at_k",
]

#: The plugin id of this module's taskset, env and harness (module ``turnbudget_games``).
TASKSET_ID = "turnbudget-games"
sys.modules.setdefault(TASKSET_ID.replace("-", "_"), sys.modules[__name__])

#: Put before the game's first text, in the first user turn (Gemma's chat format drops
#: system messages, so the instructions travel with the game).
INSTRUCTIONS = (
    "You are playing a text game. Reach the goal in as few turns as you can. Each turn, "
    "reply with exactly one command and nothing else (one of the listed commands works "
    "best).\n\n"
)


class GameTaskData(vf.TaskData):
    """A task's wire data: ``info`` is its row ``{env_id, seed, T}``."""

    info: dict[str, Any]


class GameTask(vf.Task[GameTaskData, vf.State, vf.TaskConfig]):
    """One row: a registered id, a reset seed and a turn budget T."""


class GameTasksetConfig(vf.TasksetConfig):
    """The taskset's config: its rows (`turnbudget.adapters.rows.task_rows`)."""

    id: str = TASKSET_ID
    rows: list[dict[str, Any]] = Field(default_factory=list)


class GameTaskset(vf.Taskset[GameTask, GameTasksetConfig]):
    """One task per row, in order; the game's text opens each conversation (no prompt)."""

    def load(self) -> Iterable[GameTask]:
        # (a repeated row made two tasks of one key, which verifiers needs unique: its
        # rollouts are asked for by count, num_rollouts)
        # (and at least one, every id made once: no rows ran "0/0 · reward —", and an unknown
        # id failed every rollout, as evaluate_rows refuses both)
        rows = check_rows(self.config.rows, distinct=True)
        for row in rows:
            data = GameTaskData(
                name=f"{row['env_id']}|seed={row['seed']}|T={row['T']}", prompt=None, info=row
            )
            yield GameTask(data, self.config.task)


class ChatHarnessConfig(vf.HarnessConfig):
    """The in-process chat harness's config: verifiers' own, and how long one chat
    completion through the interception endpoint may take."""

    id: str = TASKSET_ID
    timeout: float = Field(600.0, gt=0, allow_inf_nan=False)
    """Seconds for one completion, not retried (the endpoint is verifiers' own, in this
    process; the model's client behind it has its own bound, `evaluate_rows`'s ``timeout``)."""


class ChatHarness(vf.Harness[ChatHarnessConfig]):
    """Answers each segment with one chat completion through the interception endpoint.

    verifiers allows a harness to run its loop in-process as long as every model
    call goes through the rollout's ``endpoint``: the trace records it there.
    """

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(
        self,
        ctx: vf.ModelContext,
        trace: vf.Trace,
        runtime: vf.Runtime,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: vf.TaskData,
        tool_interception_url: str | None = None,
    ) -> vf.ProgramResult:
        from openai import AsyncOpenAI
        from verifiers.v1.dialects.chat import message_to_wire

        system, prompt = self.resolve_prompt(data)
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        else:
            # (in OpenAI's wire form: verifiers' own model dump of a reply with a tool call,
            # {id, type, name, arguments}, was one its server could not read, and the rollout
            # failed on the first reply that called a tool)
            messages += [message_to_wire(m) for m in prompt or []]
        client = AsyncOpenAI(
            base_url=endpoint, api_key=secret, timeout=self.config.timeout, max_retries=0
        )
        async with client:
            await client.chat.completions.create(model=ctx.model, messages=messages)
        return vf.ProgramResult(exit_code=0, stdout="", stderr="")


class GameEnvConfig(vf.EnvConfig):
    """The env's config: its one seat (``agent``, run in this process) and what it sees."""

    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())
    reveal: str = "never"
    """Budget visibility: ``never``, ``always`` or ``final=k``."""
    show_commands: bool = True
    """End each text with the admissible commands."""
    parse: str = "lenient"
    """How a reply becomes a command: ``strict`` or ``lenient`` (see `parse_command`)."""

    @field_validator("reveal")
    @classmethod
    def _check_reveal(cls, reveal: str) -> str:
        return normalize_reveal(reveal)  # raises on a bad mode; "NEVER" is "never"

    @field_validator("parse")
    @classmethod
    def _check_parse(cls, parse: str) -> str:
        if parse not in PARSE_MODES:
            raise ValueError(f"Expect `parse` to be one of {PARSE_MODES}, got {brief(parse)}")
        return parse


class GameEnv(vf.Env[GameEnvConfig]):
    """Plays the task's game with the agent: the game speaks as the user, each reply is a turn."""

    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        config = self.config
        env_id, seed, turns = check_row(task.data.info)
        session = GameSession(reveal=config.reveal, show_commands=config.show_commands)
        try:
            text = INSTRUCTIONS + session.start(env_id, seed, turns)
            async with agents.agent.interaction(task) as interaction:
                while session.outcome == "unfinished":
                    segment = await interaction.turn(text)
                    if segment.terminated:
                        break
                    # (a turn without text, a tool call alone, is an empty reply: a spent turn)
                    reply = segment.last_reply if isinstance(segment.last_reply, str) else ""
                    # (cut as ChatAgent cuts one: a 10 MB reply cost 7.5 s of parsing on the
                    # event loop, every concurrent rollout waiting)
                    reply = reply[:MAX_REPLY_CHARS]
                    command = parse_command(reply, session.commands, config.parse)
                    text = session.play(command.command)
            trace = interaction.trace
            outcome = session.outcome
            trace.record_reward("success", float(outcome == "won"), 1.0)
            trace.record_metric("terminated", float(outcome in ("won", "lost")))
            trace.record_metric("truncated", float(outcome == "truncated"))
            trace.record_metric("turns_used", float(session.turns_used))
            trace.info["turnbudget"] = {
                "outcome": outcome, "reveal": config.reveal, "episode": session.episode,
                # (an unfinished rollout has no episode record: what `pass_at_kt` reads of it)
                "env_id": session.env_id, "seed": seed, "T": turns,
                "turns_used": session.turns_used,
            }  # fmt: skip
        finally:
            session.close()


def evaluate_rows(
    rows: Sequence[Mapping[str, Any]],
    *,
    model: str,
    base_url: str,
    n: int = 1,
    api_key_env: str = "OPENAI_API_KEY",
    reveal: str = "never",
    parse: str = "lenient",
    sampling: Mapping[str, Any] | None = None,
    max_concurrent: int = 4,
    timeout: float = 600.0,
) -> list[vf.Episode]:
    """Run ``n`` rollouts of every row through verifiers against an OpenAI-compatible server.

    Args:
        rows: Rows ``{env_id, seed, T}``, distinct (each is one task: a row repeated is
            refused; ask for more rollouts of it with ``n``).
        model: The model name the server knows.
        base_url: The server's OpenAI-compatible root, e.g. ``http://127.0.0.1:8080/v1``,
            without credentials (no ``user:password@``, no query): verifiers copies it into
            every trace; pass the key through ``api_key_env``.
        n: Rollouts per row (verifiers' ``num_rollouts``; n >= max(K) for pass@K).
        api_key_env: The environment variable holding the key, sent as a Bearer token (unset:
            verifiers sends ``Bearer EMPTY``, which local servers ignore).
        reveal: Budget visibility: ``never``, ``always`` or ``final=k``.
        parse: How a reply becomes a command: ``strict`` or ``lenient``.
        sampling: verifiers' sampling settings (``temperature``, ``max_tokens``...).
        max_concurrent: Episodes in flight.
        timeout: Seconds the model's client waits for bytes of an answer, sends a request
            and waits for a connection from its pool (verifiers waits forever on a read by
            default: a server that stalled hung the rollout). Each wait, not a whole answer:
            a server that trickles bytes, or sends an answer of any size, is not cut short.

    Returns:
        verifiers' episodes (one trace each), rows first, then rollouts. The key and every
        other registered secret (`turnbudget.agents.secrets`) are blanked in every text they
        hold: a server that echoes the key in an error or a reply leaves no copy of it there.
    """
    if not isinstance(model, str) or not model.strip():  # (verifiers failed every episode)
        raise ValueError(
            f"Expect `model` to be the model's name, a non-empty str, got {brief(model)}"
        )
    if sampling is not None and (
        not isinstance(sampling, Mapping) or not all(isinstance(key, str) for key in sampling)
    ):  # (a key that is no str was Python's "keywords must be strings", naming nothing)
        raise ValueError(
            "Expect `sampling` to be a mapping of verifiers' sampling settings (str keys), got "
            f"{brief(sampling)}"
        )
    check_key_env(api_key_env)
    api_key_env = api_key_env.strip()
    check_base_url(base_url)
    credentials = url_secrets(base_url)
    # (a query with no credential in it is refused too: it would end up mid-path)
    if credentials or urllib.parse.urlsplit(base_url).query:
        # Refused rather than blanked: verifiers copies the client config, this URL verbatim,
        # into every trace it returns and ships (trace.agent.config.client), and builds its
        # request URLs by appending to it (a query would end up in the middle of the path).
        remember(*credentials)
        raise ValueError(
            f"Expect `base_url` without credentials (user:password@ or a query), got "
            f"{redact_url(base_url)!r} with them: verifiers keeps the URL in every trace; put "
            f"the key in the environment variable `api_key_env` names (sent as a Bearer token)"
        )
    remember(os.environ.get(api_key_env))  # blanked in logs and in what is returned
    n = check_positive_int(n, "n")
    max_concurrent = check_positive_int(max_concurrent, "max_concurrent")
    if not (is_finite(timeout) and timeout > 0):
        raise ValueError(
            f"Expect `timeout` to be a positive number of seconds, got {brief(timeout)}"
        )
    checked = check_rows(rows, distinct=True)  # an unknown id fails here, before any episode
    config = GameEnvConfig(taskset=GameTasksetConfig(rows=checked), reveal=reveal, parse=parse)
    env = GameEnv(config)
    ctx = vf.ModelContext(
        client=vf.EvalClientConfig(
            base_url=base_url,
            api_key_var=api_key_env,
            timeout={"read": float(timeout), "write": float(timeout), "pool": float(timeout)},
        ),
        model=model,
        sampling=vf.SamplingConfig(**(sampling or {})),
    )

    async def run() -> list[vf.Episode]:
        gate = asyncio.Semaphore(max_concurrent)
        async with env.serving():
            slots = [slot for task in env.taskset for slot in env.slots(task, n)]
            return list(await asyncio.gather(*(env.run_slot(s, ctx, gate) for s in slots)))

    try:
        asyncio.get_running_loop()
    except RuntimeError:  # (no loop running here: the common case)
        episodes = asyncio.run(run())
    else:  # (a notebook's loop runs here, which asyncio.run refuses: a loop of its own, apart)
        episodes = _run_apart(run())
    _blank_secrets(episodes, set())
    return episodes


def _run_apart(coroutine: Any) -> Any:
    """``coroutine``'s result, run by ``asyncio.run`` in a thread of its own (this thread runs
    an event loop already). An interrupt of the wait (Ctrl-C in a notebook) cancels it there,
    as ``asyncio.run``'s own does: the wait for the thread went on until every rollout ended."""
    started: concurrent.futures.Future[Any] = concurrent.futures.Future()

    async def main() -> Any:
        started.set_result((asyncio.get_running_loop(), asyncio.current_task()))
        return await coroutine

    with concurrent.futures.ThreadPoolExecutor(1) as apart:
        done = apart.submit(asyncio.run, main())
        try:
            return done.result()
        except BaseException:
            if not done.done():
                loop, task = started.result()
                with contextlib.suppress(RuntimeError):  # (its loop closed meanwhile)
                    loop.call_soon_threadsafe(task.cancel)
            raise


def _blank_secrets(value: Any, seen: set[int]) -> Any:
    """``value`` with every secret blanked (`redact`) in every string it holds: errors, a
    server's replies, tracebacks. Lists, dicts and pydantic models are changed in place (the
    value itself is returned, unless a string or tuple had to be replaced); a frozen model (a
    task's own data: its row) is left as it is."""
    if isinstance(value, str):
        clean = redact(value)
        return value if clean == value else clean
    if not isinstance(value, (list, dict, tuple, BaseModel)) or id(value) in seen:
        return value
    seen.add(id(value))
    if isinstance(value, tuple):
        items = tuple(_blank_secrets(item, seen) for item in value)
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, list):
        value[:] = [_blank_secrets(item, seen) for item in value]
    elif isinstance(value, dict):
        for key, item in value.items():
            value[key] = _blank_secrets(item, seen)
    elif not value.model_config.get("frozen"):
        for name in (*type(value).model_fields, *(value.model_extra or {})):
            item = getattr(value, name)
            clean = _blank_secrets(item, seen)
            if clean is not item:
                setattr(value, name, clean)
    return value


def _traces(episodes: Iterable[vf.Episode]) -> list[tuple[str, vf.Trace]]:
    """``(task key, trace)`` of every episode; an episode that failed to run raises."""
    if not is_listlike(episodes):
        raise ValueError(
            f"Expect `episodes` to be a list of verifiers' episodes (what evaluate_rows "
            f"returns), got {brief(episodes)}"
        )
    found = []
    for episode in episodes:
        if not isinstance(episode, vf.Episode):  # (None was an AttributeError from inside)
            raise ValueError(
                f"Expect `episodes` to hold verifiers' episodes (what evaluate_rows returns), "
                f"got one that is {brief(episode)}"
            )
        if not episode.ok or len(episode.traces) != 1:
            # verifiers keeps a rollout's errors on its trace, the env's own on the episode
            error = episode.last_error or next(
                (t.last_error for t in reversed(episode.traces) if t.last_error), None
            )
            shown = _error_text(error) if error else None
            raise ValueError(
                f"An episode of task {episode.task.data.name!r} did not run to its end "
                f"({len(episode.traces)} traces, error: {shown})"
            )
        found.append((episode.task.key, episode.traces[0]))
    return found


def _error_text(error: vf.Error, limit: int = 300) -> str:
    """An error's type and message on one line, blanked of secrets, then cut to ``limit``."""
    text = redact(" ".join(f"{error.type}: {error.message}".split()))
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def rewards_pass_at_k(episodes: Iterable[vf.Episode], k: int, threshold: float = 1.0) -> float:
    """pass@k as verifiers' rewards give it: per task key, c rollouts with reward >= ``threshold``
    among n, the unbiased estimator (`turnbudget.eval.pass_at_k`), averaged over tasks."""
    if not is_finite(threshold):
        raise ValueError(f"Expect `threshold` to be a finite number, got {brief(threshold)}")
    rewards: dict[str, list[float]] = defaultdict(list)
    for key, trace in _traces(episodes):
        rewards[key].append(float(trace.reward))
    if not rewards:
        raise ValueError("Expect at least one episode, got none")
    scores = [pass_at_k(len(r), sum(x >= threshold for x in r), k) for r in rewards.values()]
    return sum(scores) / len(scores)


def pass_at_kt(
    episodes: Iterable[vf.Episode],
    ks: Sequence[int],
    ts: Sequence[int],
    *,
    n_bootstrap: int = 1000,
    seed: int = 0,
) -> GridEstimate:
    """The suite's Pass@(K,T) grid from the episode records the episodes carry (truncate mode).

    A task is (env id, seed), as everywhere in the suite; an episode counts as a
    success at T when its first success came within T turns. Every episode must
    have run under a budget of at least max(``ts``). Reading a smaller T off a
    longer run is exact only for an agent that did not see its budget: with a
    visible budget (``reveal`` other than ``never``) each T needs runs of its own
    (the rerun mode), so every ``ts`` must then be the budget the episodes ran under.

    A rollout that verifiers' own limits (``max_turns``, a token limit) ended after u
    turns, with the game running and turns left (outcome ``unfinished``), failed within
    every T up to u; past u its success is unknown, and such a ``ts`` is refused.
    """
    if isinstance(ts, Sized) and is_listlike(ts) and not len(ts):
        raise ValueError("Expect `ts` to hold at least one budget T, got none")
    ts = check_grid_values(ts, "ts")  # as estimate_grid checks them: 2.7, "3" or True is no T
    tasks: dict[tuple[str, int], list[int | None]] = defaultdict(list)
    for _, trace in _traces(episodes):
        ours = trace.info.get("turnbudget") or {}
        record = ours.get("episode")
        if record is None and ours.get("outcome") == "unfinished" and "turns_used" in ours:
            used = ours["turns_used"]
            if ours.get("reveal", "never") != "never":  # (its own T unknown, a smaller unread)
                raise ValueError(
                    f"A rollout of {ours['env_id']!r} (seed {ours['seed']}, T={ours['T']}) showed "
                    f"the agent its budget (reveal={ours['reveal']!r}) and ended unfinished after "
                    f"{used} turns: it gives no T (a smaller one cannot be read off its run, and "
                    "its success within its own is unknown); lift the agent's limits "
                    "(max_turns, a token limit) and run it again"
                )
            if max(ts) > used:
                raise ValueError(
                    f"A rollout of {ours['env_id']!r} (seed {ours['seed']}, T={ours['T']}) ended "
                    f"unfinished after {used} turns: the agent's limits (max_turns, a token "
                    "limit) ended it before the game or T did, so its success within "
                    f"T={max(ts)} is unknown; lift the limit, or ask for ts of at most {used}"
                )
            tasks[(ours["env_id"], ours["seed"])].append(None)  # (no success within u >= ts)
            continue
        if record is None:
            raise ValueError(
                "Expect traces of GameEnv, with info['turnbudget']['episode'], got one without"
            )
        budget = record["turn_budget"]
        if max(ts) > budget:
            raise ValueError(
                f"Expect every episode to run under a budget of at least max(ts)={max(ts)}, got one "
                f"under T={budget} (truncate mode reads smaller budgets off longer runs)"
            )
        if ours.get("reveal", "never") != "never" and set(ts) != {budget}:
            raise ValueError(
                f"These episodes showed the agent its budget (reveal={ours['reveal']!r}): a smaller "
                f"T cannot be read off a run under T={budget}; run rows with each T (rerun mode) "
                f"and pass ts=[{budget}] for these"
            )
        tasks[(record["env_id"], record["seed"])].append(record["first_success_turn"])
    return estimate_grid(tasks, ks, ts, n_bootstrap=n_bootstrap, seed=seed)
