"""`ChatAgent`: an LLM agent on any OpenAI-compatible server (vLLM, SGLang, llama.cpp, a hosted API).

The agent talks to the server through the official ``openai`` client (the
``llm`` extra). Each turn it sends one prompt (`chat_format.build_prompt`: a
conversation with the goal, a window of past turns, each as its user message and
the executed command, then the observation, the admissible commands and the
budget when the env reveals it; append-only, so a server reuses the previous
prompt's evaluated tokens), restricts the reply to the admissible
commands where the server can (llama.cpp GBNF ``grammar``, vLLM
``guided_choice``, a JSON schema elsewhere; dropped with one warning if the
server rejects it) and parses the reply to one command.

What it reports per step (`step_note`, merged into the step record under
``"agent"`` by the evaluator, and summed per episode): the raw reply, the
parse outcome, whether the command is admissible, the constraint used,
tokens in and out, latency, retries and requests.

Secrets are values, not shapes. The API key is read from an environment
variable (``api_key_env``) and never stored on the agent; credentials in the
base URL (``user:password@``, a token, query values) are kept out of it too:
``base_url`` is the URL without them, and the full URL is read, like the key,
from an environment variable (``OPENAI_BASE_URL`` when it came from there; for
a URL given as an argument, one this process sets for its worker processes,
which inherit it). So the agent's repr, its pickle and the run's ``run.json``
hold no secret, and every credential (the key, the URL's user info and its query
values named like credentials: ``format=json`` is none) is registered with
`turnbudget.agents.secrets`, which blanks it wherever it could be written or
shown: step notes, error messages, records, the run lock, log records, and a
command taken from the reply's own words (a server that echoes the key: the
blanked command is the one played and recorded, see `parse_command`).

Timeouts, connection errors, 408, 409, 429 and 5xx answers, and 200 answers without a
reply (no ``choices``, not JSON) are retried with exponential backoff; when the
server stays unreachable or keeps answering nothing usable the agent raises
`ServerUnavailable` (a ``ConnectionError``) naming the URL: a server fault is
never the agent's empty reply. An answer longer than ``max_answer_bytes``
(`MAX_ANSWER_BYTES` by default; counted as sent and decompressed, a chunk at a
time, see `turnbudget.agents.answer_bound`) is read no further and raises
`ServerUnavailable` at once: it is not retried, as the same request would get
the same answer. An evaluation logs the episode as failed to run (after its
retries) and keeps every finished episode; rerunning the same command resumes
the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import hashlib
import json
import logging
import os
import re
import threading
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Generator, Mapping
from typing import Any, NamedTuple

from turnbudget._checks import brief
from turnbudget.agents.answer_bound import (
    ACCEPT_ENCODING,
    MAX_ANSWER_BYTES,
    AnswerRefused,
    aread_answer,
    error_hooks,
    read_answer,
    refused_answer,
)
from turnbudget.agents.base import EXECUTED_KEY
from turnbudget.agents.chat_format import (
    CONSTRAINTS,
    PARSE_MODES,
    PromptTemplates,
    build_prompt,
    constraint_body,
    parse_command,
    render_turn,
)
from turnbudget.agents.secrets import redact, redact_start, remember, url_secrets

__all__ = [
    "MAX_ANSWER_BYTES",
    "MAX_REPLY_CHARS",
    "MAX_RETRIES",
    "MAX_WAIT_S",
    "PREFLIGHT_TIMEOUT",
    "ChatAgent",
    "RequestRejected",
    "RequestTimeout",
    "ServerUnavailable",
    "check_base_url",
    "check_key_env",
    "make_llm_agent",
    "redact_url",
]

logger = logging.getLogger(__name__)

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"
# Sent when no key is set: local servers (llama.cpp, vLLM without --api-key) ignore it.
_NO_KEY = "no-key"
# `owned_by` of /v1/models -> the constraint that server understands.
_SERVER_CONSTRAINTS = {
    "me": "grammar",  # llama-cpp-python's server
    "llamacpp": "grammar",  # llama.cpp's llama-server
    "vllm": "guided_choice",
    "sglang": "json_schema",
    "turnbudget-local": "guided_choice",  # llm:local, a token trie (`local_llm`)
}


# The request fields a constraint adds (see `chat_format.constraint_body`).
_CONSTRAINT_FIELDS = ("grammar", "guided_choice", "response_format", "json_schema")


#: The most characters of a reply an agent reads (or 32 per token of ``max_tokens``, if
#: more): a longer one (a server that ignores ``max_tokens``) is cut, so it costs no more
#: time to parse and no more room in the step record than this.
MAX_REPLY_CHARS = 65536

#: Seconds `ChatAgent.preflight` waits for the server's ``/models`` (or the agent's
#: ``timeout``, if shorter).
PREFLIGHT_TIMEOUT = 10.0
#: The most retries one decision may make (as `evaluate`'s own ``retries``): a server down
#: for longer than ``MAX_RETRIES`` waits of ``max_backoff`` is down; rerun to resume.
MAX_RETRIES = 100
#: The longest ``timeout`` or wait between retries, in seconds (about 31 years): within what
#: a thread, a sleep or a socket can wait (`threading.TIMEOUT_MAX`, about 292 years, less
#: the clock's own reading: past it, waiting raises OverflowError mid-run).
MAX_WAIT_S = 1e9


class ServerUnavailable(ConnectionError):
    """The LLM server gave no usable answer after every retry (down, unreachable,
    overloaded, or answering without a reply)."""


class RequestTimeout(TimeoutError):
    """A request that got no whole answer within the agent's ``timeout`` (retried).

    The client's own timeout bounds each wait for data, not the request: a server that
    sends a byte every few seconds would hold it for good without this bound."""


class MalformedReply(ValueError):
    """A successful (2xx) answer with no reply in it (no ``choices``, not JSON): the server's
    fault, retried."""


class RequestRejected(RuntimeError):
    """The LLM server refused a request for a reason retrying cannot fix (bad model, auth, ...)."""


# What an API key may be to travel in an ``Authorization`` header: visible ASCII, spaces
# only inside (httpx refuses the rest, and a refused header reads as a connection error).
_HEADER_VALUE = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?")

# An environment variable's name, as a shell writes one.
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_key_env(name: Any) -> None:
    """``api_key_env`` must name a variable. A value that cannot be a name is never shown
    (it may be the key itself, given where its name was expected): it is registered as a
    secret, so it is blanked wherever it would be written."""
    if isinstance(name, str) and _ENV_NAME.fullmatch(name.strip()):
        return
    if isinstance(name, str):
        remember(name.strip())
    what = "a value that is not a variable name (not shown: it may be the key)"
    raise ValueError(
        "Expect `api_key_env` (--api-key-env) to be the NAME of the environment variable "
        "that holds the API key (letters, digits and _, e.g. OPENAI_API_KEY), not the key; "
        f"got {what if isinstance(name, str) else type(name).__name__}"
    )


# A variable's name as such names are written (capitals, digits and _): only such a name is
# shown when no variable has it, as the key itself may be made of letters and digits too.
_CONVENTIONAL_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")


def _shown_name(name: str) -> str:
    """How an unset ``api_key_env`` is named in an error: a conventional name as it is, any
    other registered as a secret (it may be the key, given where its name was expected)."""
    if _CONVENTIONAL_NAME.fullmatch(name):
        return repr(name)
    remember(name)
    return "you named (not shown: a name in other than capitals, digits and _ may be the key)"


_MAX_URL_CHARS = 65_536


def check_base_url(url: str) -> None:
    """``base_url`` must be an http(s) URL. The message shows a URL without its credentials
    (`redact_url`, then `redact`), and nothing of a value that is not a URL (it may be a key
    given in the wrong place: it is registered as a secret)."""
    expect = "Expect `base_url` (--base-url) to be an http(s) URL such as http://127.0.0.1:8080/v1"
    if not isinstance(url, str):
        raise TypeError(f"{expect}, got {type(url).__name__}")
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number in 0..65535
    except ValueError:  # a malformed host or port: its text is not shown (it may be a secret)
        parts = None
    if parts is not None and parts.scheme in ("http", "https") and parts.hostname:
        if len(url) > _MAX_URL_CHARS:  # (the HTTP client's own limit, raised at the request)
            raise ValueError(
                f"{expect}, got one of {len(url):,} characters (most: {_MAX_URL_CHARS:,})"
            )
        if not any(c.isspace() or not c.isprintable() for c in url):
            return
        parts = None  # (the client refused a control character at the request; a space
        # broke the URL it sent: not shown either, the URL may hold secrets)
    if parts is not None and parts.scheme and parts.netloc:
        shown = f"{redact(redact_url(url) or '')!r}"
    else:
        remember(url)
        with contextlib.suppress(ValueError):  # (a malformed host or port)
            remember(*url_secrets(url))
        shown = "a value that is not a URL (not shown: it may be a secret)"
    raise ValueError(f"{expect}, got {shown}")


def redact_url(url: str | None) -> str | None:
    """A URL without user info, query or fragment (they can hold credentials).

    Example:
        >>> redact_url("https://user:secret@host:8000/v1?key=abc")
        'https://host:8000/v1'
        >>> redact_url("http://[::1]:8080/v1")
        'http://[::1]:8080/v1'
    """
    if url is None:
        return None
    if not isinstance(url, str):
        raise TypeError(f"Expect `url` to be a str or None, got {type(url).__name__}")
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address keeps its brackets (without them it read as a port)
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


def _openai() -> Any:
    try:
        import openai
    except ImportError:
        raise ImportError(
            "ChatAgent needs the `openai` package: pip install -e '.[llm]' in the turnbudget checkout"
        ) from None
    return openai


class _Shared:
    """What the per-episode copies of one agent share: clients and the resolved constraint.

    Never pickled: a copy in another process builds its own.
    """

    def __init__(self) -> None:
        self.sync_client: Any = None
        self.async_client: Any = None
        self.async_loop: Any = None
        self.constraint: str | None = None
        self.warned_user_info = False


def _positive(
    value: Any,
    name: str,
    kind: type = int,
    zero: bool = False,
    most: float | None = None,
    flag: str | None = None,
) -> Any:
    """``value`` as a finite number >= 0 (> 0 unless ``zero``), at most ``most`` if given; nan
    and inf are refused (a nan timeout never expires, an infinite backoff never retries). The
    error names ``flag`` beside ``name`` when the command line sets it."""
    ok = isinstance(value, (int, float) if kind is float else int) and not isinstance(value, bool)
    # A float's range; nan and inf fail the comparison, and so does an int float() would refuse.
    finite = ok and (kind is int or abs(value) < 2**1024)
    if not finite or value < 0 or (value == 0 and not zero) or (most is not None and value > most):
        what = "non-negative" if zero else "positive"
        bound = "" if most is None else f" of at most {most:,.0f}"
        shown = f"`{name}`" if flag is None else f"`{name}` ({flag})"
        raise ValueError(
            f"Expect {shown} to be a {what} {kind.__name__}{bound}, got {brief(value)}"
        )
    return kind(value)


class ChatAgent:
    """An agent that asks a chat model for each command.

    It implements both `Agent` (``reset``/``act``, on a blocking client) and
    `AsyncAgent` (``reset_async``/``act_async``); `turnbudget.eval.evaluate`
    drives it through `AsyncBatch` with ``concurrency`` episodes in flight
    (default `default_concurrency`). ``observe``/``observe_async`` record a
    turn the agent did not choose (a probe's forced command).

    Args:
        model: the model name the server knows (``/v1/models``).
        base_url: the server's OpenAI-compatible root, e.g.
            ``http://127.0.0.1:8080/v1`` (default: ``$OPENAI_BASE_URL``, else
            the OpenAI API).
        api_key_env: the name of the environment variable holding the API key
            (letters, digits and ``_``; read when the client is built, never stored). When it is the default
            ``OPENAI_API_KEY`` and unset, a placeholder is sent (local servers
            need none); a non-default variable must be set.
        templates: the prompt templates (`PromptTemplates`).
        history: past turns shown in the prompt (0 for none). The window drops
            its oldest turns this many at a time, so it shows between ``history``
            and ``2 * history - 1`` of them and the prompt stays append-only in between.
        parse: ``strict`` or ``lenient`` (see `parse_command`).
        constrain: ``auto`` (from the server's ``/v1/models`` ``owned_by``:
            llama.cpp -> ``grammar``, vLLM -> ``guided_choice``, others ->
            ``json_schema``), ``grammar``, ``guided_choice``, ``json_schema``
            or ``none``. A server that rejects the constraint gets plain
            requests from then on (one warning).
        temperature: sampling temperature (0: greedy).
        max_tokens: the reply's token cap.
        timeout: seconds per request, from sending it to the whole answer (a server that
            answers a byte at a time is cut off too).
        max_retries: retries per decision on timeouts, connection errors, 408, 409, 429 and 5xx
            (at most `MAX_RETRIES`).
        backoff: the first retry's wait in seconds; doubles each retry, capped at ``max_backoff``.
        max_backoff: the longest wait between retries (a rate limit's ``Retry-After`` is
            waited up to it). It, ``backoff`` and ``timeout`` are at most `MAX_WAIT_S`.
        max_answer_bytes: the most bytes of one answer read, as sent and decompressed
            (default `MAX_ANSWER_BYTES`; None: no bound); past it the request fails with
            `ServerUnavailable`, not retried (a server that sends an endless body or a
            gzip bomb costs no more memory than this).
        concurrency: episodes in flight when the evaluator drives this agent
            (default: `default_concurrency`).

    Example:
        >>> agent = ChatAgent("gemma-3-270m", base_url="http://127.0.0.1:8080/v1")
        >>> agent
        ChatAgent(model='gemma-3-270m', api_key_env='OPENAI_API_KEY', parse='lenient', constrain='auto', history=8, temperature=0.0, max_tokens=32)
    """

    needs_oracle = False
    budget_aware = False  # it sees the budget only when the env reveals it
    default_concurrency = 8

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = DEFAULT_API_KEY_ENV,
        templates: PromptTemplates | None = None,
        history: int = 8,
        parse: str = "lenient",
        constrain: str = "auto",
        temperature: float = 0.0,
        max_tokens: int = 32,
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        max_answer_bytes: int | None = MAX_ANSWER_BYTES,
        concurrency: int | None = None,
    ):
        if not isinstance(model, str) or not model.strip() or not model.isprintable():
            shown = brief(redact(model) if isinstance(model, str) else model)
            raise ValueError(f"Expect `model` to be a model name (one line), got {shown}")
        check_key_env(api_key_env)
        if parse not in PARSE_MODES:
            raise ValueError(f"Expect `parse` to be one of {PARSE_MODES}, got {parse!r}")
        if constrain not in CONSTRAINTS:
            raise ValueError(f"Expect `constrain` to be one of {CONSTRAINTS}, got {constrain!r}")
        if templates is not None and not isinstance(templates, PromptTemplates):
            raise ValueError(f"Expect `templates` to be a PromptTemplates, got {templates!r}")
        self.model = model.strip()
        url = base_url if base_url is not None else os.environ.get(BASE_URL_ENV) or None
        if url is not None:
            check_base_url(url)
        self.base_url = redact_url(url).rstrip("/") if url else None
        # The environment variable holding the URL with what `base_url` leaves out, its user
        # info and query (None: it has neither). A query that holds no credential is still
        # sent (``api-version=...``), so it travels the same way.
        self._url_env: str | None = None
        if url and (url_secrets(url) or urllib.parse.urlsplit(url).query):
            self._url_env = BASE_URL_ENV if base_url is None else _publish_url(url)
        self.api_key_env = api_key_env.strip()
        self._remember_secrets()
        if redact(self.model) != self.model:
            # (the key given as the model, `llm:sk-...`: the model names the run's directory
            # and is written into run.json and every record, where nothing blanks it)
            remember(self.model)
            raise ValueError(
                "Expect `model` to be a model name, got one that holds a secret this process "
                "was given or a key's shape (not shown: the API key given as the model? It "
                "goes in the environment variable `api_key_env` names)"
            )
        self.templates = templates or PromptTemplates()
        self.history = _positive(history, "history", zero=True)
        self.parse = parse
        self.constrain = constrain
        self.temperature = _positive(temperature, "temperature", float, zero=True)
        self.max_tokens = _positive(max_tokens, "max_tokens")
        # (named with their flags, as `base_url` is: "`timeout`" read as the episodes' --timeout)
        self.timeout = _positive(timeout, "timeout", float, most=MAX_WAIT_S, flag="--llm-timeout")
        self.max_retries = _positive(
            max_retries, "max_retries", zero=True, most=MAX_RETRIES, flag="--llm-retries"
        )
        self.backoff = _positive(backoff, "backoff", float, zero=True, most=MAX_WAIT_S)
        self.max_backoff = _positive(max_backoff, "max_backoff", float, zero=True, most=MAX_WAIT_S)
        self.max_answer_bytes = (
            None if max_answer_bytes is None else _positive(max_answer_bytes, "max_answer_bytes")
        )
        self.concurrency = (
            self.default_concurrency
            if concurrency is None
            else _positive(concurrency, "concurrency")
        )
        self._shared = _Shared()
        self._start_episode(0)

    # -- identity -------------------------------------------------------------------

    @property
    def name(self) -> str:
        return f"llm-{self.model.rsplit('/', 1)[-1]}"

    def __repr__(self) -> str:
        # Where the model is served is not part of the run's identity (the repr goes into
        # run.json): a run resumes against a restarted server on another port.
        # What the model is asked and what of its answer is read are: other prompts or a
        # shorter answer cap made a resumed run two runs in one (said only when not the
        # default, so runs recorded before still resume).
        changed = ""
        if self.templates != PromptTemplates():
            digest = hashlib.sha256(repr(self.templates).encode("utf-8", "surrogatepass"))
            changed += f", templates=sha256:{digest.hexdigest()[:16]}"
        if self.max_answer_bytes != MAX_ANSWER_BYTES:
            changed += f", max_answer_bytes={self.max_answer_bytes}"
        return (
            f"ChatAgent(model={self.model!r}, api_key_env={self.api_key_env!r}, "
            f"parse={self.parse!r}, constrain={self.constrain!r}, history={self.history}, "
            f"temperature={self.temperature}, max_tokens={self.max_tokens}{changed})"
        )

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_shared": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._shared = _Shared()
        self._remember_secrets()  # a worker process blanks them too

    def _remember_secrets(self) -> None:
        """Register the key and the URL's credentials (from the environment) for blanking."""
        url = os.environ.get(self._url_env) if self._url_env else None
        remember(os.environ.get(self.api_key_env), *url_secrets(url))

    def _connect_url(self) -> str | None:
        """The URL to connect to, with its credentials (read from the environment)."""
        if self._url_env is None:
            return self.base_url
        url = os.environ.get(self._url_env)
        if not url or redact_url(url).rstrip("/") != self.base_url:
            raise ValueError(
                f"The credentials of the LLM server at {self.base_url} are read from the "
                f"environment variable {self._url_env!r}, which this process does not have or "
                f"which names another server (a Ray node?). Set {BASE_URL_ENV} to the URL with "
                "its credentials where the workers run (they never travel in the agent's pickle)."
            )
        return url

    def preflight(self) -> None:
        """Ask the server for its models once (``GET /models``, one attempt, at most
        `PREFLIGHT_TIMEOUT` seconds): a server that does not answer raises
        `ServerUnavailable` before the first episode. A server that answers
        without ``/models`` passes (the requests tell the rest). Without the ``openai``
        package (the llm extra) it raises the ImportError that names the extra: once,
        before any episode (building the agent needs no client, so prompts render and
        specs resolve offline). An answer past ``max_answer_bytes`` raises
        `ServerUnavailable` too."""
        openai = _openai()
        timeout = min(self.timeout, PREFLIGHT_TIMEOUT)
        with self._new_client(timeout=timeout) as client:
            _, failure = _within(timeout, lambda: self._send(client, _ListModels()), client.close)
        if (refused := refused_answer(failure)) is not None:
            raise self._refused(refused, "GET /models") from None
        if (redirected := _unfollowable_redirect(failure)) is not None:
            raise self._redirected(redirected, "GET /models")
        if (broken := _broken_answer(failure)) is not None:
            raise ServerUnavailable(
                f"LLM server at {redact_url(self._url())} gave GET /models an answer that is "
                f"not valid HTTP ({_described(broken)}). {_NOT_HTTP_HINT}"
            )
        if isinstance(failure, (openai.APIConnectionError, RequestTimeout)):  # (or its timeouts)
            raise ServerUnavailable(
                f"LLM server at {redact_url(self._url())} did not answer GET /models "
                f"({_described(failure)}). {self._running_hint()}"
            )
        if failure is not None:  # it answered, with an error or no list: it is up
            logger.debug("GET /models failed: %s", _short(failure))

    def close(self) -> None:
        """Close the blocking client (the async one closes in `aclose`)."""
        if self._shared.sync_client is not None:
            self._shared.sync_client.close()
            self._shared.sync_client = None

    async def aclose(self) -> None:
        """Close both clients; await it on the loop the async client ran on."""
        self.close()
        client, self._shared.async_client = self._shared.async_client, None
        if client is not None and self._shared.async_loop is asyncio.get_running_loop():
            await client.close()
        self._shared.async_loop = None

    def spawn(self) -> ChatAgent:
        """A fresh per-episode copy sharing this agent's settings and clients (for `AsyncBatch`)."""
        child = object.__new__(type(self))
        child.__dict__.update(self.__dict__)  # not copy.copy: that would drop `_shared`
        child._start_episode(0)
        return child

    # -- episode state ------------------------------------------------------------------

    def _start_episode(self, seed: int) -> None:
        self._seed = int(seed)
        self._goal = ""
        self._turn = 0
        # Past turns shown, as (the turn's user message as it was rendered, executed command).
        self._history: list[tuple[str, str]] = []
        self._pending: tuple[str, str] | None = None  # (user message acted on, command sent)
        self._last_turn = ""
        self._note: dict[str, Any] | None = None

    def reset(self, seed: int) -> None:
        self._start_episode(seed)

    async def reset_async(self, seed: int) -> None:
        self._start_episode(seed)

    def _absorb(self, info: Mapping[str, Any]) -> None:
        """Move the last turn into the history, with the command that was really executed."""
        if not self._goal and info.get("goal"):
            self._goal = str(info["goal"])
        if self._pending is not None:
            user, own = self._pending
            executed = info.get(EXECUTED_KEY)
            self._remember(user, own if executed is None else str(executed))
            self._pending = None

    def _remember(self, user: str, command: str) -> None:
        """Add a played turn to the history shown. The window drops its oldest turns
        ``history`` at a time (it shows between ``history`` and ``2 * history - 1`` past
        turns), so the prompt stays append-only between drops: a window sliding by one
        turn would change the start of every prompt, and no evaluated token would be
        reused."""
        if not self.history:
            return
        self._history.append((user, command))
        if len(self._history) >= 2 * self.history:
            del self._history[: len(self._history) - self.history]

    def observe(self, observation: str, info: Mapping[str, Any], executed_action: str) -> None:
        """Record a turn played for the agent (a forced command): it enters the history."""
        self._absorb(info)
        self._turn += 1
        self._remember(self._render(str(observation), info), str(executed_action))
        self._note = None

    async def observe_async(
        self, observation: str, info: Mapping[str, Any], executed_action: str
    ) -> None:
        self.observe(observation, info, executed_action)

    def step_note(self) -> dict[str, Any] | None:
        """What happened in the last ``act`` call (for the step record); None before any."""
        return self._note

    # -- one decision --------------------------------------------------------------------

    def _prepare(self, observation: str, info: Mapping[str, Any]) -> tuple[list[dict], list[str]]:
        self._absorb(info)
        self._turn += 1
        self._last_turn = self._render(str(observation), info)
        admissible = [str(a) for a in (info.get("admissible_actions") or ())]
        messages = build_prompt(
            self.templates, goal=self._goal, history=self._history, current=self._last_turn
        )
        return messages, admissible

    def _render(self, observation: str, info: Mapping[str, Any]) -> str:
        """This turn's user message (the observation, admissible commands, budget if shown)."""
        budget = None
        if info.get("budget_visible") and info.get("turns_left") is not None:
            budget = {k: info.get(k) for k in ("turns_left", "turn_budget", "turns_used")}
        return render_turn(
            self.templates,
            observation=observation,
            commands=[str(a) for a in (info.get("admissible_actions") or ())],
            budget=budget,
            turn=self._turn,
        )

    def _request(self, messages: list[dict], admissible: list[str], constraint: str) -> dict:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": (self._seed + self._turn) % 2**31,
            "timeout": self.timeout,
        }
        extra = constraint_body(constraint, admissible)
        if extra:
            body["extra_body"] = extra
            # A constrained reply is cut by `max_tokens` like any other: an admissible command
            # longer than it came back as an inadmissible start ("take the small"). The model
            # stops where the constraint ends, so room for the longest costs nothing.
            body["max_tokens"] = max(self.max_tokens, _constrained_tokens(constraint, admissible))
        return body

    def _finish(
        self,
        response: Any,
        reply: str,
        admissible: list[str],
        constraint: str,
        started: float,
        retries: int,
        requests: int,
    ) -> str:
        limit = max(MAX_REPLY_CHARS, 32 * self.max_tokens)
        if len(reply) > limit:  # a server that ignores max_tokens: parse and record a bounded
            # reply (blanked whole, then cut, so no cut leaves part of a secret)
            logger.warning(
                "LLM server at %s answered %d characters (max_tokens=%d); reading the first %d",
                redact_url(self._url()),
                len(reply),
                self.max_tokens,
                limit,
            )
            # (`redact_start`: the same start, reading only as much as it needs; blanking a
            # 10 MB reply whole took 4 s of the event loop a decision)
            reply = f"{redact_start(reply, limit)} [cut: the reply had {len(reply)} characters]"
        command, outcome = parse_command(reply, admissible, self.parse)
        usage = getattr(response, "usage", None)
        self._note = {
            "reply": redact(reply),
            "parse": outcome,
            "admissible": bool(admissible) and command in admissible,
            "constraint": constraint if admissible else "none",
            "tokens_in": _count(getattr(usage, "prompt_tokens", 0)),
            "tokens_out": _count(getattr(usage, "completion_tokens", 0)),
            "latency_s": round(time.perf_counter() - started, 6),
            "retries": retries,
            "requests": requests,
        }
        self._pending = (self._last_turn, command)
        return command

    def _wait(self, retry: int) -> float:
        return min(self.max_backoff, self.backoff * 2**retry)

    def _retryable(self, exc: BaseException) -> bool:
        openai = _openai()
        retried = (
            openai.APIConnectionError,
            RequestTimeout,
            openai.RateLimitError,
            openai.InternalServerError,
            *_MALFORMED,
            openai.APIResponseValidationError,
        )
        # (408 and 409 too, as the openai client's own retries: a request the server timed out
        # or a lock it held is not the request's fault)
        return isinstance(exc, retried) or (
            isinstance(exc, openai.APIStatusError) and exc.status_code in _RETRIED_STATUSES
        )

    def _unavailable(self, exc: BaseException, attempts: int) -> ServerUnavailable:
        if isinstance(exc, (*_MALFORMED, _openai().APIResponseValidationError)):
            what = "answered without a reply"
            hint = "Is it an OpenAI-compatible server (`/chat/completions`)?"
        elif (redirected := _unfollowable_redirect(exc)) is not None:
            return self._redirected(redirected, "the request")
        elif (broken := _broken_answer(exc)) is not None:
            what, hint, exc = "gave answers that are not valid HTTP", _NOT_HTTP_HINT, broken
        elif isinstance(exc, _openai().APIStatusError):  # (429, 5xx, 408, 409: it is running)
            what = "did not answer"
            hint = (
                f"It answered HTTP {exc.status_code} each time: is it overloaded or "
                "rate-limiting? (`max_retries`, --llm-retries; fewer episodes in flight)"
            )
        else:
            what = "did not answer"
            hint = self._running_hint()
        return ServerUnavailable(
            f"LLM server at {redact_url(self._url())} {what} after {attempts} attempt(s) "
            f"({_described(exc)}). {hint} Rerun the same evaluation to resume."
        )

    def _failed(
        self, exc: BaseException, constraint: str, retries: int, requests: int
    ) -> float | None:
        """After a failed request: the wait before a retry, None to resend at once (a
        rejected constraint, not a retry), or raise `RequestRejected` / `ServerUnavailable`.
        Neither chains ``exc``: a server may have echoed a secret into it."""
        if (refused := refused_answer(exc)) is not None:
            raise self._refused(refused, "the request") from None
        if self._constraint_rejected(exc, constraint):
            return None
        if not self._retryable(exc):
            raise self._rejected(exc) from None
        if (redirected := _unfollowable_redirect(exc)) is not None:
            raise self._redirected(redirected, "the request") from None
        if retries >= self.max_retries:
            raise self._unavailable(exc, requests) from None
        logger.info("LLM request failed (%s); retry %d", _short(exc), retries + 1)
        # (a rate limit's Retry-After, up to max_backoff: retrying sooner only spent retries)
        return min(self.max_backoff, max(self._wait(retries), _retry_after(exc)))

    def _redirected(self, cause: BaseException, request: str) -> ServerUnavailable:
        """A server that answered with redirects the client cannot follow (a loop, another
        scheme): not retried, since the same request would get the same answer."""
        return ServerUnavailable(
            f"LLM server at {redact_url(self._url())} answered with a redirect the client "
            f"cannot follow ({type(cause).__name__}: {_short(cause)}). Not retried ({request} "
            "would get the same answer). Is `base_url` the API's own address (for example "
            "http://HOST:PORT/v1)? Rerun the same evaluation to resume."
        )

    def _refused(self, refused: AnswerRefused, request: str) -> ServerUnavailable:
        """An answer read no further (`answer_bound`): not retried, since the same request
        would get the same answer."""
        return ServerUnavailable(
            f"LLM server at {redact_url(self._url())} {_short(refused, 400)}. Not retried "
            f"({request} would get the same answer). Is it an OpenAI-compatible server? "
            "Rerun the same evaluation to resume."
        )

    def _rejected(self, exc: BaseException) -> RequestRejected:
        return RequestRejected(
            f"LLM server at {redact_url(self._url())} rejected the request for model "
            f"{self.model!r} ({type(exc).__name__}: {_short(exc)})"
        )

    def _url(self) -> str:
        return self.base_url or "https://api.openai.com/v1"

    def _running_hint(self) -> str:
        """What to check when the server did not answer: with no URL given, that the agent
        talks to OpenAI's API (a local server started by serve-local was never asked)."""
        if self.base_url is None:
            return (
                f"No base URL was given (--base-url, base_url=, ${BASE_URL_ENV}), so this is "
                "OpenAI's API: for a local server, start `turnbudget serve-local` and pass "
                "--base-url http://127.0.0.1:8080/v1."
            )
        return "Is it running? (`turnbudget serve-local` starts a local one.)"

    def _constraint_rejected(self, exc: BaseException, constraint: str) -> bool:
        """The server does not take this constraint: a 400, 422 or 5xx answer to a
        constrained request that names the constraint's field (llama-cpp-python reports
        request validation errors as 500); it is dropped for every episode."""
        openai = _openai()
        if constraint == "none" or not isinstance(exc, openai.APIStatusError):
            return False
        status = getattr(exc, "status_code", None)
        named = any(field in str(exc) for field in _CONSTRAINT_FIELDS)
        if not named or not (status in (400, 422) or (status is not None and status >= 500)):
            return False
        self._drop_constraint(constraint, exc)
        return True

    def _maybe_constraint(self, exc: BaseException, constraint: str) -> bool:
        """A 400 or 422 answer to a constrained request that names no constraint field: the
        constraint, or the request itself (`_decide` finds out by sending it plain)."""
        return (
            constraint != "none"
            and isinstance(exc, _openai().APIStatusError)
            and getattr(exc, "status_code", None) in (400, 422)
        )

    def _drop_constraint(self, constraint: str, exc: BaseException) -> None:
        if self._shared.constraint != "none":  # warn once
            logger.warning(
                "LLM server at %s rejected the %r constraint (%s); sending plain requests from now on",
                redact_url(self._url()),
                constraint,
                _short(exc),
            )
        self._shared.constraint = "none"

    def _client_kwargs(self) -> dict[str, Any]:
        key = os.environ.get(self.api_key_env)
        if key is None or (not key and self.api_key_env == DEFAULT_API_KEY_ENV):
            if self.api_key_env != DEFAULT_API_KEY_ENV:
                raise ValueError(
                    redact(
                        f"The environment variable {_shown_name(self.api_key_env)} "
                        "(`api_key_env`) is not set: set it to the API key (`api_key_env` "
                        "names the variable that holds the key, never the key itself)"
                    )
                )
            key = _NO_KEY
        if not _HEADER_VALUE.fullmatch(key):  # never shown: it is the key
            remember(key)
            raise ValueError(
                f"The API key in the environment variable {self.api_key_env!r} (`api_key_env`) "
                "cannot be sent in an HTTP header: it is empty, or holds a line break, another "
                "control character, leading or trailing spaces, or a non-ASCII character (a key "
                "read from a file with its newline?). Set it to the key alone"
            )
        url = self._connect_url()
        remember(key if key != _NO_KEY else None, *url_secrets(url))  # the values sent
        if key != _NO_KEY and url is not None and "@" in urllib.parse.urlsplit(url).netloc:
            self._one_authorization()
        # max_retries=0: the agent retries itself, to count and bound the retries.
        return {
            "api_key": key,
            "max_retries": 0,
            "timeout": self.timeout,
            **_split_query(url),
        }

    def _one_authorization(self) -> None:
        """A base URL with user info and a key: the HTTP client sends the user info as
        Basic auth in the one ``Authorization`` header, in place of the key's Bearer. A
        variable named on purpose is an error; the default one, often set for every
        program, a warning (once an agent) that its key is not sent."""
        what = (
            f"The LLM server's URL carries credentials (`user:password@`), sent as Basic auth "
            f"in the request's one Authorization header, so the API key in "
            f"the environment variable {_shown_name(self.api_key_env)} (`api_key_env`) is not sent"
        )
        if self.api_key_env != DEFAULT_API_KEY_ENV:
            raise ValueError(
                f"{what}. Give one of the two: the key (a URL without user info), or the "
                "URL's credentials (no `api_key_env`)"
            )
        if not self._shared.warned_user_info:
            self._shared.warned_user_info = True
            logger.warning("%s (set it empty to silence this)", what)

    def _new_client(self, *, is_async: bool = False, timeout: float | None = None) -> Any:
        """An ``openai`` client (blocking, or async) on the server; ``timeout`` replaces the
        agent's. With ``max_answer_bytes``, its HTTP client (the ``openai`` client's default
        one) asks for `ACCEPT_ENCODING` only and reads error answers bounded
        (`answer_bound.error_hooks`); `_send` reads the others bounded."""
        openai = _openai()
        kwargs = self._client_kwargs()
        if timeout is not None:
            kwargs["timeout"] = timeout
        if self.max_answer_bytes is not None:
            http = openai.DefaultAsyncHttpxClient if is_async else openai.DefaultHttpxClient
            kwargs["http_client"] = http(
                timeout=kwargs["timeout"],
                headers={"Accept-Encoding": ACCEPT_ENCODING},
                event_hooks=error_hooks(self.max_answer_bytes, is_async=is_async),
            )
        return (openai.AsyncOpenAI if is_async else openai.OpenAI)(**kwargs)

    def _resolve_constraint(self, owned_by: str | None) -> str:
        kind = _SERVER_CONSTRAINTS.get((owned_by or "").lower(), "json_schema")
        logger.info(
            "LLM server at %s (owned_by=%r): constrained decoding with %r",
            redact_url(self._url()),
            owned_by,
            kind,
        )
        return kind

    # -- one decision, as a conversation with the server --------------------------------------
    #
    # `_decide` is the decision, written once: it yields what it needs from the server
    # (`_Connect`, `_ListModels`, `_Create`, `_Sleep`) and is sent the answer, or thrown the
    # exception the request raised. `act` answers on the blocking client, `act_async` on the
    # async one; they know nothing else about a decision.

    def _decide(self, observation: str, info: Mapping[str, Any]) -> _Decision:
        messages, admissible = self._prepare(observation, info)
        started = time.perf_counter()
        yield _Connect()  # outside the retries: a missing key or URL is no server fault
        retries = requests = 0
        # A 400 or 422 to a constrained request that names no constraint field: this decision
        # is sent plain, and the constraint is dropped for every episode only if that answers
        # (a prompt past the context window is a 400 too, with or without the constraint).
        suspect: tuple[str, BaseException] | None = None
        while True:
            constraint = "none"
            requests += 1
            try:
                if suspect is None:
                    constraint = yield from self._constraint()
                body = self._request(messages, admissible, constraint)
                if suspect is not None:  # (the same decision plain: as long an answer, which
                    # a context window counts too; 32 tokens fitted where 59 did not)
                    body["max_tokens"] = self._request(messages, admissible, suspect[0])[
                        "max_tokens"
                    ]
                response = yield _Create(body)
                reply = _reply_text(response)
            except Exception as exc:
                if suspect is None and self._maybe_constraint(exc, constraint):
                    suspect = (constraint, exc)
                    continue
                wait = self._failed(exc, constraint, retries, requests)
                if wait is not None:
                    yield _Sleep(wait)
                    retries += 1
                continue
            if suspect is not None:
                self._drop_constraint(*suspect)
            return self._finish(response, reply, admissible, constraint, started, retries, requests)

    def _constraint(self) -> Generator[_Request, Any, str]:
        """The constraint to send: ``constrain``, or for ``auto`` the server's (asked once)."""
        if self.constrain != "auto":
            return self.constrain if self._shared.constraint is None else self._shared.constraint
        if self._shared.constraint is None:
            owned_by = None
            try:
                models = yield _ListModels()
                owned_by = next((owner for name, owner in models if name == self.model), None)
                owned_by = owned_by or (models[0][1] if models else None)
            except Exception as exc:  # a server without /v1/models: try JSON schema
                if self._retryable(exc) or refused_answer(exc) is not None:
                    raise  # retried like any request (or refused: a clear error)
                logger.debug("GET /models failed: %s", _short(exc))
            if self._shared.constraint is None:  # another episode may have resolved it meanwhile
                self._shared.constraint = self._resolve_constraint(owned_by)
        return self._shared.constraint

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        decision = self._decide(observation, info)
        answer: Any = None
        failure: Exception | None = None
        while True:
            try:
                request = decision.send(answer) if failure is None else decision.throw(failure)
            except StopIteration as done:
                return done.value
            # Only what a request raised goes back to the decision: an exception raised here
            # while waiting (a signal's handler: an episode's timeout, Ctrl-C) ends the call.
            answer = failure = None
            match request:
                case _Connect():
                    self._sync_client()
                case _ListModels() | _Create():
                    answer, failure = self._sync_request(
                        lambda client, request=request: self._send(client, request)
                    )
                case _Sleep(seconds):
                    time.sleep(seconds)

    async def act_async(self, observation: str, info: Mapping[str, Any]) -> str:
        decision, client = self._decide(observation, info), None
        answer: Any = None
        failure: Exception | None = None
        while True:
            try:
                request = decision.send(answer) if failure is None else decision.throw(failure)
            except StopIteration as done:
                return done.value
            answer = failure = None
            try:
                match request:
                    case _Connect():
                        client = self._async_client()
                    case _ListModels() | _Create():
                        answer = await self._within_deadline(self._send_async(client, request))
                    case _Sleep(seconds):
                        await asyncio.sleep(seconds)
            except Exception as exc:
                failure = exc

    def _send(self, client: Any, request: _ListModels | _Create) -> Any:
        """``request`` on the blocking client, its answer read through the client's streaming
        API to at most ``max_answer_bytes`` (`answer_bound.read_answer`): the completion
        (`_Create`), or the models listed as ``(id, owned_by)`` pairs (`_ListModels`)."""
        if isinstance(request, _Create):
            opened = client.chat.completions.with_streaming_response.create(**request.body)
        else:
            opened = client.models.with_streaming_response.list()
        with opened as response, _reading(response.http_response):
            body = read_answer(response.http_response, self.max_answer_bytes)
        return _parse_answer(request, body, response.http_response.status_code)

    async def _send_async(self, client: Any, request: _ListModels | _Create) -> Any:
        """`_send` on the async client."""
        if isinstance(request, _Create):
            opened = client.chat.completions.with_streaming_response.create(**request.body)
        else:
            opened = client.models.with_streaming_response.list()
        async with opened as response:
            with _reading(response.http_response):
                body = await aread_answer(response.http_response, self.max_answer_bytes)
        return _parse_answer(request, body, response.http_response.status_code)

    def _sync_request(self, request: Callable[[Any], Any]) -> tuple[Any, Exception | None]:
        """``request(client)`` on the blocking client, bounded by the agent's timeout as a
        whole: (its answer, None) or (None, what it raised). Past the timeout, that client is
        closed (its sockets with it, which ends the abandoned read), the next request builds
        a fresh one, and what it raised is `RequestTimeout`."""
        client = self._sync_client()

        def drop_client() -> None:
            if self._shared.sync_client is client:
                self._shared.sync_client = None
            client.close()

        return _within(self.timeout, lambda: request(client), drop_client)

    async def _within_deadline(self, request: Awaitable[Any]) -> Any:
        """``request``'s answer, the agent's timeout over the whole of it (cancelled past it).
        (``asyncio.wait_for``, not ``asyncio.timeout``: Python 3.10 has no such thing, and
        its wait_for raises ``asyncio.TimeoutError``, not yet the builtin one.)"""
        try:
            return await asyncio.wait_for(request, self.timeout)
        except (TimeoutError, asyncio.TimeoutError):
            raise RequestTimeout(_timeout_message(self.timeout)) from None

    def _sync_client(self) -> Any:
        if self._shared.sync_client is None:
            self._shared.sync_client = self._new_client()
        return self._shared.sync_client

    def _async_client(self) -> Any:
        loop = asyncio.get_running_loop()
        shared = self._shared
        if shared.async_client is None or shared.async_loop is not loop:
            # An httpx async client is bound to the loop it first ran on.
            shared.async_client = self._new_client(is_async=True)
            shared.async_loop = loop
        return shared.async_client


def _constrained_tokens(constraint: str, commands: list[str]) -> int:
    """The most tokens a reply under ``constraint`` may take to be whole: a token holds at
    least one byte of text, so the bytes of the longest reply it allows (a command, or for
    ``json_schema`` the JSON object naming one, with room for the spaces a schema's grammar
    lets in), and one more.

    Example:
        >>> _constrained_tokens("grammar", ["look", "take the brass key"])
        19
    """
    if constraint == "json_schema":
        longest = max(
            len(json.dumps({"command": c}, ensure_ascii=escaped).encode())
            for c in commands
            for escaped in (True, False)
        )
        return longest + 16
    return max(len(c.encode()) for c in commands) + 1


def _timeout_message(seconds: float) -> str:
    return f"no whole answer within the timeout of {seconds:g}s"


def _within(
    seconds: float, request: Callable[[], Any], give_up: Callable[[], None]
) -> tuple[Any, Exception | None]:
    """``request()`` on a helper thread, waited for at most ``seconds``: (its answer, None)
    or (None, what it raised). Past ``seconds``, ``give_up()`` runs (it closes the client,
    so the helper's read ends) and what it raised is `RequestTimeout`. An exception raised
    while waiting (a signal's handler: an episode's timeout, Ctrl-C) passes through."""
    done = threading.Event()
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, request()))
        except Exception as exc:  # (raised again in the caller's thread)
            outcome.append((False, exc))
        finally:
            done.set()

    threading.Thread(target=run, name="turnbudget-llm-request", daemon=True).start()
    try:
        answered = done.wait(seconds)
    except BaseException:
        # (an episode's timeout or Ctrl-C while waiting: the request must end with it, not
        # read on, holding one of the requests a server answers at a time)
        _give_up(give_up)
        raise
    if not answered:
        _give_up(give_up)
        return None, RequestTimeout(_timeout_message(seconds))
    if not outcome:  # (the request raised what is no Exception: SystemExit, ...)
        raise RuntimeError("the LLM request ended without an answer or an exception")
    finished, value = outcome[0]
    return (value, None) if finished else (None, value)


def _give_up(give_up: Callable[[], None]) -> None:
    try:
        give_up()
    except Exception as exc:  # (closing a client mid-read may complain; giving up stands)
        logger.debug("closing the LLM client to give up a request: %s", _short(exc))


# What a decision asks of the server (`ChatAgent._decide`).
class _Connect(NamedTuple):
    """The client (built on first use)."""


class _ListModels(NamedTuple):
    """``GET /models``: the models and who serves them."""


class _Create(NamedTuple):
    """``POST /chat/completions`` with these ``chat.completions.create`` keyword arguments."""

    body: dict[str, Any]


class _Sleep(NamedTuple):
    """Wait before a retry."""

    seconds: float


_Request = _Connect | _ListModels | _Create | _Sleep
_Decision = Generator[_Request, Any, str]


# A 2xx answer that could not be read as a reply: ours (`_parse_answer`, `_reply_text`), or
# the JSON decoder's (a body that is not JSON, or not UTF-8) from a subclass's `_send`.
_RETRIED_STATUSES = (408, 409)
_MALFORMED = (MalformedReply, json.JSONDecodeError, UnicodeDecodeError)


@contextlib.contextmanager
def _reading(response: Any) -> Generator[None, None, None]:
    """What reading an answer's body raises, as the client raises it when it reads the body
    itself: a connection error (a timeout, a dropped connection, a body that does not
    decompress; retried). `AnswerRefused` passes as it is."""
    try:
        yield
    except AnswerRefused:
        raise
    except Exception as exc:
        openai = _openai()
        timed_out = "Timeout" in type(exc).__name__  # (httpx's or httpx2's ReadTimeout, ...)
        raise (openai.APITimeoutError if timed_out else openai.APIConnectionError)(
            request=response.request
        ) from exc


def _parse_answer(request: _ListModels | _Create, body: bytes, status: int = 200) -> Any:
    """A 2xx answer's body (``status``: its code) as the client parses it: ``POST /chat/completions``, a
    ``ChatCompletion`` built leniently (`_reply_text` judges what it holds); ``GET /models``,
    its models as ``(id, owned_by)`` pairs (none from an answer that lists none)."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):  # (not JSON, not UTF-8, nested past the parser)
        if isinstance(request, _ListModels):
            return []
        if not body:  # (a 204 No Content, say)
            raise MalformedReply(f"a {status} answer with no body") from None
        raise MalformedReply(
            f"a {status} answer that is not JSON: {_excerpt(body[:4096])}"
        ) from None
    if isinstance(request, _ListModels):
        listed = data.get("data") if isinstance(data, dict) else None
        models = [m for m in (listed if isinstance(listed, list) else ()) if isinstance(m, dict)]
        return [(m.get("id"), _text_or_none(m.get("owned_by"))) for m in models]
    if not isinstance(data, dict):
        _reply_text(data, status)  # (raises: no choices)
    # (no field of an answer starts with "_": a key "_fields_set" was taken as `construct`'s
    # own argument, and the answer read as the server rejecting the request)
    fields = {k: v for k, v in data.items() if not k.startswith("_")}
    completion = _openai().types.chat.ChatCompletion.construct(**_read_parts(fields))
    _reply_text(completion, status)  # (judged here, where the answer's status is known)
    return completion


# What of a completion is read (`_reply_text`, `ChatAgent._finish`): the rest is not built.
_CHOICE_PARTS = ("index", "message", "finish_reason")
_MESSAGE_PARTS = ("role", "content")
_USAGE_PARTS = ("prompt_tokens", "completion_tokens", "total_tokens")


def _read_parts(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` with only the first choice, its message's role and content, and the token
    counts: `construct` builds a model of every choice, tool call and logprob, and 400,000
    choices in a 13 MB answer (under `MAX_ANSWER_BYTES`) took 25 s and 750 MB, on the event
    loop of every episode in flight, past any timeout. A part of another shape is kept as it
    is, for `_reply_text` to judge."""
    choices = fields.get("choices")
    if isinstance(choices, list) and choices:
        first = choices[0]
        if isinstance(first, dict):
            first = {k: first[k] for k in _CHOICE_PARTS if k in first}
            message = first.get("message")
            if isinstance(message, dict):
                first["message"] = {k: message[k] for k in _MESSAGE_PARTS if k in message}
        fields["choices"] = [first]
    usage = fields.get("usage")
    if isinstance(usage, dict):
        fields["usage"] = {k: usage[k] for k in _USAGE_PARTS if k in usage}
    return fields


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _retry_after(exc: BaseException) -> float:
    """The seconds an error answer asks the client to wait (``retry-after-ms``, OpenAI's, or
    ``Retry-After`` in seconds or as a date), at most `MAX_WAIT_S`; 0 when it asks for none or
    for what is no wait ("abc", -5, NaN).

    Example:
        >>> from types import SimpleNamespace  # (an openai status error holds its answer so)
        >>> _retry_after(SimpleNamespace(response=SimpleNamespace(headers={"retry-after": "12"})))
        12.0
    """
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return 0.0
    try:
        if (ms := headers.get("retry-after-ms")) is not None:
            seconds = float(ms) / 1000.0
        elif (text := headers.get("retry-after")) is None:
            return 0.0
        elif text.strip().replace(".", "", 1).isdigit():
            seconds = float(text)
        else:
            when = email.utils.parsedate_to_datetime(text)
            seconds = when.timestamp() - time.time()
    except (TypeError, ValueError, OverflowError, AttributeError):
        return 0.0
    # (a wait past a float's range, 400 digits or "inf" ms, is longer than any cap, not none:
    # it was retried at once, into the limit it asked to be spared)
    return min(seconds, MAX_WAIT_S) if seconds > 0.0 else 0.0  # (NaN is no wait)


def _reply_text(response: Any, status: int = 200) -> str:
    """The text of the answer's first choice (``content: null`` is an empty reply, the
    model's); `MalformedReply` when the answer (of HTTP ``status``) holds no choice to read
    (a server fault)."""
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        what = "without `choices`" if choices is None else f"with `choices` = {choices!r}"
        raise MalformedReply(f"a {status} answer {what}")
    message = getattr(choices[0], "message", None)
    if message is None:
        raise MalformedReply(f"a {status} answer whose first choice has no `message`")
    if not hasattr(message, "content"):  # (a `message` the client could not read as one)
        raise MalformedReply(
            f"a {status} answer whose `message` is not an object: {_excerpt(message)}"
        )
    content = getattr(message, "content", None)
    if isinstance(content, list) and (text := _text_parts(content)) is not None:
        content = text  # (content parts, as Mistral's reasoning models give: their text ones)
    if content is not None and not isinstance(content, str):
        raise MalformedReply(
            f"a {status} answer whose message content is not text: {_excerpt(content)}"
        )
    return content or ""


def _text_parts(parts: list[Any]) -> str | None:
    """The text of content given as parts (``[{"type": "thinking", ...}, {"type": "text",
    "text": "north"}]``): its ``text`` parts joined, the others (a model's thinking) left out;
    None when a part is no such object (not a reply)."""
    if not all(isinstance(part, dict) and isinstance(part.get("type"), str) for part in parts):
        return None
    texts = [part.get("text") for part in parts if part["type"] == "text"]
    return "".join(texts) if all(isinstance(text, str) for text in texts) else None


def _count(value: Any) -> int:
    """A token count from the answer's ``usage``: a whole number in ``[0, 2**53)`` (0 when
    the server gave none, or one no token count can be: a bool, 1e308, -5, nan).

    Example:
        >>> _count(7), _count("7"), _count(True), _count(1e308), _count(-5), _count("x")
        (7, 7, 0, 0, 0, 0)
    """
    if isinstance(value, bool):
        return 0
    try:
        count = int(value)
    except (TypeError, ValueError, OverflowError):
        return 0
    return count if 0 <= count < 2**53 else 0


def _split_query(url: str | None) -> dict[str, Any]:
    """The client's ``base_url``, and its query as ``default_query`` (the client would
    append the request path to the query)."""
    if url is None:
        return {"base_url": None}
    parts = urllib.parse.urlsplit(url)
    base = urllib.parse.urlunsplit((*parts[:3], "", "")).rstrip("/")
    query = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    return {"base_url": base, **({"default_query": query} if query else {})}


# URLs given as an argument with credentials -> the environment variable holding each.
_PUBLISHED: dict[str, str] = {}


def _publish_url(url: str) -> str:
    """Put ``url`` (with its credentials) in this process's environment, which worker
    processes inherit, and return the variable's name: the agent's pickle carries the
    name, never the credentials."""
    name = _PUBLISHED.setdefault(url, f"TURNBUDGET_LLM_URL_{os.urandom(4).hex().upper()}")
    os.environ[name] = url
    return name


def _excerpt(value: Any, limit: int = 80) -> str:
    """The start of ``value``'s repr, its secrets blanked before it is cut (a key that
    straddled the cut would be cut first and then not be recognised)."""
    text = redact_start(repr(value), limit + 1)
    return text if len(text) <= limit else text[:limit] + "..."


def _unfollowable_redirect(exc: BaseException | None) -> BaseException | None:
    """The cause of a connection error that is a server's answer, not its silence: redirects
    in a loop (httpx's ``TooManyRedirects``) or to a scheme it cannot speak
    (``UnsupportedProtocol``, a ``file://`` Location). None for any other error."""
    if exc is None or not isinstance(exc, _openai().APIConnectionError):
        return None
    cause = exc.__cause__
    # (by name: the openai client's transport is httpx, or in its newer releases httpx2)
    if type(cause).__name__ in ("TooManyRedirects", "UnsupportedProtocol") and type(
        cause
    ).__module__.partition(".")[0].startswith("httpx"):
        return cause
    return None


# What a server whose bytes are no HTTP answer is likely to be.
_NOT_HTTP_HINT = (
    "Is an OpenAI-compatible HTTP server listening at this address? (Another service on its "
    "port answers so, as does a server that speaks https where the URL says http, or one that "
    "stops mid-answer.)"
)


def _http_cause(exc: BaseException | None) -> BaseException | None:
    """The HTTP package's own error under an openai connection error (httpx's, or httpx2's in
    the client's newer releases), whose message says only "Connection error."; else None."""
    if exc is None or not isinstance(exc, _openai().APIConnectionError):
        return None
    cause = exc.__cause__
    return cause if type(cause).__module__.partition(".")[0].startswith("httpx") else None


def _broken_answer(exc: BaseException | None) -> BaseException | None:
    """The cause of a connection error where the server sent bytes that are no HTTP answer (a
    garbage status line, a bad Content-Length, a body cut short): it answered, so "did not
    answer ... Is it running?" misled. None for any other error, a connection the server
    closed with nothing sent included."""
    cause = _http_cause(exc)
    if type(cause).__name__ != "RemoteProtocolError":
        return None
    return None if "without sending a response" in str(cause) else cause


def _described(exc: BaseException) -> str:
    """``exc`` as error messages show it, type and message, with the HTTP package's cause of a
    connection error (its own message, "Connection error.", names nothing)."""
    text = f"{type(exc).__name__}: {_short(exc)}"
    cause = _http_cause(exc)
    return text if cause is None else f"{text} Cause: {type(cause).__name__}: {_short(cause)}"


def _short(exc: BaseException, limit: int = 200) -> str:
    """An error message on one line, with every secret blanked (it is logged and recorded).
    Only its start is read (`redact_start`): a server's error body, of up to
    ``max_answer_bytes``, is in the message of the exception the client raised."""
    text = " ".join(redact_start(str(exc), max(8 * limit, 4096)).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def make_llm_agent(args: str, **options: Any) -> ChatAgent:
    """Build a `ChatAgent` from the part of an agent spec after ``llm:`` (the model name).

    ``options`` are `ChatAgent` keyword arguments (``base_url``, ``api_key_env``,
    ``concurrency``, ...); None values are dropped so the defaults apply.
    ``local`` (or ``local:PATH.gguf``) is the model in this process, no server
    (`turnbudget.agents.local_llm.LocalChatAgent`).

    Example:
        >>> make_llm_agent("gemma-3-270m", base_url="http://127.0.0.1:8080/v1", parse="strict").parse
        'strict'
    """
    from turnbudget.agents.registry import check_options

    if not isinstance(args, str):
        raise TypeError(f"Expect `args` (what follows llm:) to be a str, got {brief(args)}")
    if not args or not args.strip():
        raise ValueError("Expect `llm:MODEL` with a model name, e.g. llm:gemma-3-270m")
    name, _, path = args.strip().partition(":")
    if name == "local":
        from turnbudget.agents.local_llm import make_local_agent

        return make_local_agent(path, **options)
    options = {k: v for k, v in options.items() if v is not None}
    check_options("llm", ChatAgent, options)  # (a misspelt option: a ValueError naming it)
    return ChatAgent(args.strip(), **options)
