"""``llm:local``: `ChatAgent` on llama-cpp-python's ``Llama`` in this process (no server).

For one-machine runs: the model (Gemma 3 270M by default, see
`local_server.local_model_path`) is loaded once per process, and each decision
is a call into llama.cpp instead of an HTTP request. Everything else is
`ChatAgent`'s: the same prompts, parsing, step notes and retries, so the
in-process agent and the same agent on ``turnbudget serve-local`` choose the
same commands at temperature 0 with the same decoder: ``constrain="grammar"``
or ``"none"`` on both. The default ``"auto"`` picks a different one on each
(the token trie below in process, llama.cpp's grammar on the server), and the
two may choose differently where commands are close (10 of 12 Shop, Cooking
and Crafting episodes differed within 4 turns; Maze's agreed).

Constrained choice among the admissible commands (``guided_choice``, what
``constrain="auto"`` picks here) walks a token trie of the commands instead of
running a grammar over the whole vocabulary for every token: at each step only
the logits of the tokens that continue some admissible command are compared
(the highest at temperature 0, else sampled from their softmax), and the walk
stops as soon as one command is left, usually after one or two evaluated
tokens. Its answer is always an admissible command. ``grammar`` (llama.cpp's
GBNF, what the server does) and ``none`` work too.

Concurrency: one model answers one decision at a time (a lock). With several
episodes in flight their decisions interleave; the model's evaluated context
(its KV cache, a few MiB, not the logits) is saved after each decision in a
bounded cache (``cache_mb``), and a decision resumes from the saved context
that shares the longest prefix with its prompt, so each episode evaluates only
its new tokens. ``concurrency`` defaults to 1: in one process more episodes in
flight only overlap the envs' work with the model's.

Determinism: a decision depends on its request alone, never on what the process
evaluated before (other episodes, another order, a pool worker forked from a
busy process). llama.cpp's CPU kernels compute the tokens of a batch's last,
partial tile differently from whole tiles, so a context evaluated as one batch
of 91 tokens and cut at 81 gave logits up to 0.8 away from a fresh evaluation,
enough to change a choice at temperature 0. A prompt is therefore evaluated in
blocks of `BLOCK` tokens aligned to its start, then its tail as one batch, and
only whole blocks are ever reused: a prompt's logits are bitwise those of a
fresh evaluation, whatever the cache held. The price: each decision evaluates
again the tail its previous one left (measured on 40 Maze decisions: 37-38 CPU
seconds against 29-31 before; blocks of 16 cost the same, of 8 far more).
"""

from __future__ import annotations

import asyncio
import atexit
import ctypes
import os
import random
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from turnbudget.agents.llm import ChatAgent, RequestRejected, _Create, _ListModels, _short

__all__ = [
    "BLOCK",
    "LOCAL_OWNER",
    "LocalChatAgent",
    "TokenTrie",
    "check_chat_format",
    "make_local_agent",
]

#: ``owned_by`` of the in-process model (see `ChatAgent`'s server constraints).
LOCAL_OWNER = "turnbudget-local"

#: The ``constrain`` values the in-process model takes (no JSON schema decoding here).
_LOCAL_CONSTRAINTS = ("auto", "grammar", "guided_choice", "none")

#: Tokens per aligned block of prompt evaluation: a multiple of the CPU kernels' tile
#: (measured: 32 and 64 both give a fresh evaluation's logits bit for bit).
BLOCK = 32


#: The attribute of a ``Llama`` that holds how many tokens of its live context were
#: evaluated in whole aligned blocks: only those may be reused.
BLOCKS_ATTRIBUTE = "turnbudget_blocks"


class _Model:
    """One loaded model, its lock and its saved contexts."""

    def __init__(self, llama: Any, states: _States | None):
        self.llama = llama
        self.lock = threading.Lock()
        self.states = states


# (model path, n_ctx, n_threads, chat format, cache MiB) -> the model: one per process.
_MODELS: dict[tuple[str, int, int, str, int], _Model] = {}
_MODELS_LOCK = threading.Lock()


def _formatter(chat_format: str) -> Any:
    """llama.cpp's chat formatter registered as ``chat_format`` (it builds the prompt whose
    tokens the model evaluates), or None: not registered, or a handler with no formatter
    (``functionary``)."""
    import inspect

    from llama_cpp import llama_chat_format

    from turnbudget.agents.local_server import chat_formats

    handler = chat_formats().get(chat_format)
    if handler is None:
        return None
    name = "format_" + chat_format.replace("-", "_").replace(".", "_")
    formatter = getattr(llama_chat_format, name, None)
    if formatter is None and inspect.isfunction(handler):
        # (registered under another name than its function's: llama-2 is format_llama2)
        formatter = inspect.getclosurevars(handler).nonlocals.get("chat_formatter")
    return formatter if callable(formatter) else None


def check_chat_format(chat_format: str) -> None:
    """Raise ``ValueError`` unless the in-process model can build prompts in ``chat_format``
    (one of llama.cpp's registered chat formats with a formatter): else every decision was
    refused, the first one after the model had loaded."""
    from turnbudget.agents.local_server import chat_formats

    if _formatter(chat_format) is None:
        usable = sorted(name for name in chat_formats() if _formatter(name) is not None)
        raise ValueError(
            "Expect `chat_format` to be one of llama.cpp's chat formats the in-process model "
            f"(llm:local) can use ({', '.join(usable)}), got {chat_format!r}"
        )


_NEEDS_LLAMA_CPP = (
    "llm:local needs llama-cpp-python: pip install -e '.[llm]' in the turnbudget checkout"
)


def _llama(model_path: str, n_ctx: int, n_threads: int, chat_format: str, cache_mb: int) -> _Model:
    key = (model_path, n_ctx, n_threads, chat_format, cache_mb)
    with _MODELS_LOCK:
        if key not in _MODELS:
            try:
                from llama_cpp import Llama
            except ImportError:
                raise ImportError(_NEEDS_LLAMA_CPP) from None
            check_chat_format(chat_format)  # (before the model loads)
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            try:
                llama = Llama(
                    model_path, n_ctx=n_ctx, n_threads=n_threads, n_threads_batch=n_threads,
                    chat_format=chat_format, logits_all=False, verbose=False,
                )  # fmt: skip
            except ValueError as exc:  # ("Failed to load model from file: PATH", no reason)
                raise ValueError(
                    f"llm:local cannot load the model {model_path!r} with a context of {n_ctx} "
                    f"tokens ({exc}): a truncated or damaged .gguf file, or `n_ctx` past what "
                    "this machine's memory holds?"
                ) from None
            if not _MODELS:
                atexit.register(_close_models)
            _MODELS[key] = _Model(llama, _States(cache_mb * 2**20) if cache_mb else None)
        return _MODELS[key]


def _close_models() -> None:
    """Free the models before the interpreter tears down the modules their finalizers use."""
    with _MODELS_LOCK:
        for model in _MODELS.values():
            model.llama.close()
        _MODELS.clear()


class TokenTrie:
    """The admissible commands as a trie of their tokens, and a walk that picks one.

    Args:
        commands: the admissible commands (non-empty).
        tokenize: a command's text -> its token ids.
        stop: the token that ends a reply (Gemma's ``<end_of_turn>``): where one
            command is a prefix of another (``take``, ``take key``), the model
            chooses between stopping and going on.

    Example:
        >>> trie = TokenTrie(["go north", "go south", "look"], str.split, stop="<eot>")
        >>> trie.options(())
        ['go', 'look']
        >>> trie.options(("go",)), trie.left(("go",)), trie.left(("look",))
        (['north', 'south'], 2, 'look')
    """

    def __init__(self, commands: Sequence[str], tokenize: Any, stop: Any):
        if not commands:
            raise ValueError("Expect at least one admissible command to choose from")
        self.stop = stop
        self._children: dict[tuple, list] = {}
        self._commands: dict[tuple, list[str]] = {}  # prefix -> commands under it
        self._ends: dict[tuple, str] = {}  # full token sequence -> its command
        for command in dict.fromkeys(commands):
            tokens = tuple(tokenize(command))
            self._ends.setdefault(tokens, command)
            for i in range(len(tokens) + 1):
                self._commands.setdefault(tokens[:i], []).append(command)
                if i < len(tokens):
                    children = self._children.setdefault(tokens[:i], [])
                    if tokens[i] not in children:
                        children.append(tokens[i])

    def options(self, prefix: tuple) -> list:
        """The tokens that may follow ``prefix`` (``stop`` where a command ends there)."""
        ends = [self.stop] if prefix in self._ends and prefix in self._children else []
        return list(self._children.get(prefix, ())) + ends

    def left(self, prefix: tuple) -> int | str:
        """The command once ``prefix`` leaves only one, else how many are left."""
        under = self._commands[prefix]
        return under[0] if len(under) == 1 else len(under)

    @property
    def longest(self) -> int:
        """The most tokens a walk may evaluate: the longest command's."""
        return max(map(len, self._ends))

    def ended(self, prefix: tuple) -> str:
        return self._ends[prefix]

    def walk(self, logits_after: Any, temperature: float, rng: random.Random) -> tuple[str, int]:
        """Pick a command. ``logits_after(tokens)`` evaluates the prompt (on its first call)
        and then ``tokens``, and returns the logits of the token after them (indexable by
        token). A token that is the only way on is taken without asking. Returns the
        command and how many of its tokens were picked.

        Example:
            >>> trie = TokenTrie(["go north", "go south", "look"], str.split, stop="<eot>")
            >>> asked = []
            >>> def logits_after(tokens):
            ...     asked.append(tokens)
            ...     return {"go": 0.0, "look": 1.0, "north": 0.5, "south": 2.0}
            >>> trie.walk(logits_after, 0.0, random.Random(0)), asked
            (('look', 1), [[]])
        """
        prefix: tuple = ()
        pending: list = []
        while True:
            left = self.left(prefix)
            if isinstance(left, str):
                return left, len(prefix)
            options = self.options(prefix)
            if not options:  # (commands that tokenize alike, "go  north" and "go north": the
                # model cannot tell them apart, and the first of them is played)
                return self.ended(prefix), len(prefix)
            if len(options) == 1:
                picked = options[0]
            else:
                logits = logits_after(pending)
                pending = []
                picked = options[_pick([float(logits[t]) for t in options], temperature, rng)]
            if picked == self.stop:
                return self.ended(prefix), len(prefix)
            prefix = (*prefix, picked)
            pending.append(picked)


def _pick(scores: list[float], temperature: float, rng: random.Random) -> int:
    best = max(range(len(scores)), key=scores.__getitem__)  # first on ties
    if temperature <= 0:
        return best
    import math

    weights = [math.exp((s - scores[best]) / temperature) for s in scores]
    return rng.choices(range(len(scores)), weights)[0]


def _same(a: Sequence[int], b: Sequence[int]) -> int:
    """The length of the common prefix of two token sequences."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _reusable(tokens: Sequence[int], blocks: int, prompt: Sequence[int]) -> int:
    """How much of a context (``tokens``, of which ``blocks`` were evaluated in whole
    aligned blocks) a prompt may reuse: whole blocks it shares, short of its last token."""
    n = min(_same(tokens, prompt), blocks, len(prompt) - 1)
    return n - n % BLOCK


def _reusable_live(llama: Any, prompt: Sequence[int]) -> int:
    """How much of a ``Llama``'s live context a prompt may reuse (see `_reusable`)."""
    return _reusable(llama._input_ids.tolist(), getattr(llama, BLOCKS_ATTRIBUTE, 0), prompt)


def evaluate_in_blocks(llama: Any, prompt: Sequence[int]) -> int:
    """Bring a ``Llama``'s live context to the prompt's whole blocks before its last token,
    reusing what it may, and return where they end: the caller evaluates the rest (the
    tail) in one batch. The in-process model and `llama_server` both start here."""
    end = (len(prompt) - 1) // BLOCK * BLOCK
    llama.n_tokens = _reusable_live(llama, prompt)
    for start in range(llama.n_tokens, end, BLOCK):
        llama.eval(prompt[start : start + BLOCK])
    setattr(llama, BLOCKS_ATTRIBUTE, end)
    return end


class _States:
    """The model's evaluated context after each of the last few decisions: its KV cache
    (``llama_state_seq_get_data``), not its logits, in at most ``max_bytes``.

    With several episodes in flight the model serves them in turn, and each decision
    would recompute its episode's prompt from the first token that differs from the
    previous decision's (another episode's). Restoring the saved context that shares
    the most whole blocks with the prompt keeps that at the new tokens. The oldest
    entries go first; an entry is a few MiB (the KV cache of its tokens)."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        # tokens -> (the context's KV cache, how many of its tokens are whole blocks)
        self.entries: OrderedDict[tuple[int, ...], tuple[bytes, int]] = OrderedDict()
        self.size = 0

    def restore(self, llama: Any, prompt: Sequence[int]) -> None:
        import llama_cpp

        best, longest = None, _reusable_live(llama, prompt)
        for tokens, (_, blocks) in self.entries.items():
            n = _reusable(tokens, blocks, prompt)
            if n > longest:
                best, longest = tokens, n
        if best is None:
            return
        data, blocks = self.entries[best]
        self.entries.move_to_end(best)
        llama._ctx.kv_cache_seq_rm(-1, 0, -1)
        buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if llama_cpp.llama_state_seq_set_data(llama._ctx.ctx, buffer, len(data), 0) != len(data):
            llama.reset()  # evaluate the whole prompt rather than trust a partial state
            return
        llama.input_ids[: len(best)] = best
        llama.n_tokens = len(best)
        llama._requires_eval = True
        setattr(llama, BLOCKS_ATTRIBUTE, blocks)

    def save(self, llama: Any) -> None:
        import llama_cpp

        # Only the whole blocks, what a later prompt may reuse (`_reusable`): the live
        # context is cut to them first. A saved tail and answer, restored and then cut by
        # llama.cpp, changed the next decision's logits (with a grammar, "recipes" became
        # "inventory" after three other episodes): a decision must depend on its request alone.
        blocks = getattr(llama, BLOCKS_ATTRIBUTE, 0)
        if llama.n_tokens > blocks:
            llama._ctx.kv_cache_seq_rm(-1, blocks, -1)
            llama.n_tokens = blocks
            llama._requires_eval = True
        tokens = tuple(llama._input_ids.tolist())
        size = llama_cpp.llama_state_seq_get_size(llama._ctx.ctx, 0)
        if not tokens or size > self.max_bytes:
            return
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(llama._ctx.ctx, buffer, size, 0)
        self.size -= len(self.entries.pop(tokens, (b"", 0))[0])
        self.entries[tokens] = (ctypes.string_at(buffer, written), blocks)
        self.size += written
        while self.size > self.max_bytes:
            self.size -= len(self.entries.popitem(last=False)[1][0])


class _Completions:
    """``create`` (a chat completion) and ``list`` (the models) on the in-process model."""

    def __init__(self, agent: LocalChatAgent):
        model = _llama(
            str(agent.model_path), agent.n_ctx, agent.n_threads, agent.chat_format,
            agent.cache_mb,
        )  # fmt: skip
        self.llama, self.lock, self.states = model.llama, model.lock, model.states
        self.model = agent.model
        self.chat_format = agent.chat_format
        self.n_ctx = agent.n_ctx

    def list(self) -> list[tuple[str, str]]:
        return [(self.model, LOCAL_OWNER)]

    def create(self, **body: Any) -> Any:
        extra = body.get("extra_body") or {}
        if extra and not {"guided_choice", "grammar"} & set(extra):
            raise ValueError(f"the in-process model takes no constraint {sorted(extra)}")
        with self.lock:
            prompt, stop = self._prompt(body["messages"])
            trie = None
            if "guided_choice" in extra:
                trie = self._trie(list(extra["guided_choice"]), stop)
                # (a walk evaluates a command's tokens whatever `max_tokens`: a command past
                # the context failed mid-decode, "llama_decode returned 1")
                answer_room = trie.longest
            else:
                answer_room = int(body.get("max_tokens") or 1)
            if len(prompt) + answer_room > self.n_ctx:  # llama.cpp would fail mid-decode
                raise ValueError(
                    f"the prompt is {len(prompt)} tokens and the answer may take {answer_room}: "
                    f"past the context of {self.n_ctx} tokens. Shorten the history window "
                    "(`history=`) or raise `n_ctx`"
                )
            if self.states is not None:
                self.states.restore(self.llama, prompt)
            try:
                if trie is not None:
                    return self._choose(prompt, body, trie)
                # llama.cpp's completion evaluates the rest (the tail) in one batch.
                evaluate_in_blocks(self.llama, prompt)
                grammar = None
                if "grammar" in extra:
                    from llama_cpp import LlamaGrammar

                    grammar = LlamaGrammar.from_string(extra["grammar"], verbose=False)
                answer = self.llama.create_chat_completion(
                    messages=body["messages"], temperature=body["temperature"],
                    max_tokens=body["max_tokens"], seed=body.get("seed"), grammar=grammar,
                )  # fmt: skip
                return _response(answer["choices"][0]["message"]["content"], **answer["usage"])
            finally:
                if self.states is not None:
                    self.states.save(self.llama)

    def _prompt(self, messages: list[dict[str, str]]) -> tuple[list[int], int]:
        """The prompt's tokens as llama.cpp's chat handler builds them, and the stop token."""
        formatter = _formatter(self.chat_format)
        if formatter is None:  # (checked when the model loaded: a registry changed since)
            check_chat_format(self.chat_format)
        llama = self.llama
        formatted = formatter(messages=messages)
        prompt = llama.tokenize(
            formatted.prompt.encode(), add_bos=not formatted.added_special, special=True
        )
        stop = formatted.stop if isinstance(formatted.stop, str) else (formatted.stop or [""])[0]
        stop_tokens = llama.tokenize(stop.strip().encode(), add_bos=False, special=True)
        return prompt, stop_tokens[0] if len(stop_tokens) == 1 else llama.token_eos()

    def _trie(self, commands: list[str], stop: int) -> TokenTrie:
        tokenize = self.llama.tokenize
        return TokenTrie(
            commands, lambda c: tokenize(c.encode(), add_bos=False, special=False), stop
        )

    def _choose(self, prompt: list[int], body: dict[str, Any], trie: TokenTrie) -> Any:
        """The constrained choice: a walk down the commands' token trie."""
        import numpy as np

        llama = self.llama
        started = False

        def logits_after(tokens: list[int]) -> Any:
            nonlocal started
            if not started:  # the prompt: its whole blocks, then its tail in one batch
                started = True
                tokens = [*prompt[evaluate_in_blocks(llama, prompt) :], *tokens]
            llama.eval(tokens)
            return np.ctypeslib.as_array(llama._ctx.get_logits_ith(-1), shape=(llama.n_vocab(),))

        rng = random.Random(body.get("seed"))
        command, n_out = trie.walk(logits_after, float(body["temperature"]), rng)
        return _response(command, prompt_tokens=len(prompt), completion_tokens=n_out)

    def close(self) -> None:
        """Nothing to close: the model stays loaded for the process's other agents."""


class _AsyncCompletions:
    """The async face of `_Completions`: each call in a worker thread, so the event loop
    (and the envs of other episodes) runs while the model computes."""

    def __init__(self, sync: _Completions):
        self.sync = sync

    async def list(self) -> list[tuple[str, str]]:
        return self.sync.list()

    async def create(self, **body: Any) -> Any:
        return await asyncio.to_thread(self.sync.create, **body)

    async def close(self) -> None:
        """Nothing to close."""


def _response(content: str, prompt_tokens: int = 0, completion_tokens: int = 0, **_: Any) -> Any:
    """An answer shaped like the openai client's (what `ChatAgent` reads)."""
    message = SimpleNamespace(content=content)
    usage = SimpleNamespace(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
    return SimpleNamespace(choices=[SimpleNamespace(message=message)], usage=usage)


class LocalChatAgent(ChatAgent):
    """`ChatAgent` on llama-cpp-python's ``Llama`` in this process (``llm:local``).

    Args:
        model_path: a ``.gguf`` file (default: Gemma 3 270M, `local_model_path`).
        n_threads: CPU threads (1 keeps a shared machine usable).
        n_ctx: the context window in tokens.
        chat_format: llama.cpp's chat template name.
        cache_mb: memory for the evaluated contexts of the last decisions (their
            KV cache), so episodes in flight each resume from their own prompt
            (0: none; then only the previous decision's prefix is reused).
        **options: `ChatAgent` keyword arguments (``history``, ``parse``,
            ``constrain``, ``temperature``, ...); not ``base_url`` or ``api_key_env``.

    Example (needs the ``llm`` extra)::

        agent = LocalChatAgent(history=4)
        evaluate("turnbudget/Maze-Easy-v0", agent, ks=(1,), ts=(8,), n=1, tasks=2)
    """

    default_concurrency = 1

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        n_threads: int = 1,
        n_ctx: int = 4096,
        chat_format: str = "gemma",
        cache_mb: int = 64,
        **options: Any,
    ):
        from turnbudget.agents.local_server import DEFAULT_MODEL, check_llama_settings

        for name in ("base_url", "api_key_env", "model"):
            if name in options:
                raise ValueError(  # (the value is not shown: it may be a key or a URL's)
                    f"Expect no `{name}` for the in-process model (llm:local); use llm:MODEL "
                    "for a server"
                )
        if options.get("constrain") == "json_schema":  # (every decision was refused)
            raise ValueError(
                f"Expect `constrain` to be one of {_LOCAL_CONSTRAINTS} for the in-process model "
                "(llm:local), got 'json_schema'"
            )
        check_llama_settings(n_threads, n_ctx, cache_mb)
        if model_path is not None and (
            not isinstance(model_path, (str, os.PathLike)) or not str(model_path).strip()
        ):
            raise TypeError(f"Expect `model_path` to be a path to a .gguf file, got {model_path!r}")
        model = DEFAULT_MODEL if model_path is None else Path(model_path).stem
        if not model.strip() or not model.isprintable():  # (it names the model: see below)
            raise ValueError(  # (the error named `model`, which no caller of llm:local gives)
                "Expect `model_path` to be a .gguf file whose name is one printable line, got "
                f"{str(model_path)!r}"
            )
        if not isinstance(chat_format, str) or not chat_format.strip():
            raise ValueError(
                f"Expect `chat_format` to be a llama.cpp chat format, got {chat_format!r}"
            )
        from turnbudget.agents.local_server import _llama_cpp_installed

        if _llama_cpp_installed():  # (else the first decision names the extra to install)
            check_chat_format(chat_format)
        self.model_path = None if model_path is None else Path(model_path)
        self.n_threads = n_threads
        self.n_ctx = n_ctx
        self.chat_format = chat_format
        self.cache_mb = cache_mb
        super().__init__(model, **options)  # (the file's name names the model)

    def __repr__(self) -> str:
        # The chat format and the context size change what the model is shown; a model file
        # of another size is another model under the same name (said only when not the
        # default, so runs recorded before still resume).
        base = super().__repr__().replace("ChatAgent(", "LocalChatAgent(", 1)[:-1]
        if self.chat_format != "gemma":
            base += f", chat_format={self.chat_format!r}"
        if self.n_ctx != 4096:
            base += f", n_ctx={self.n_ctx}"
        if self.model_path is not None:
            try:
                base += f", model_bytes={self.model_path.stat().st_size}"
            except OSError:
                base += ", model_bytes=None"
        return base + ")"

    def preflight(self) -> None:
        """There is no server to ask: check, once before the first episode, that the model
        file is there and a GGUF file, and that llama-cpp-python (and for the default model
        its package) is installed (else every episode failed to run on it, each retried)."""
        from turnbudget.agents.local_server import (
            MODEL_PACKAGE_MISSING,
            _llama_cpp_installed,
            _model_package_installed,
        )

        if self.model_path is not None:
            _check_model(self.model_path)
        elif not _model_package_installed():
            raise ImportError(MODEL_PACKAGE_MISSING)
        if not _llama_cpp_installed():
            raise ImportError(_NEEDS_LLAMA_CPP)

    def _rejected(self, exc: BaseException) -> RequestRejected:
        return RequestRejected(
            f"llm:local ({self.model}) cannot answer: {type(exc).__name__}: {_short(exc)}"
        )

    def _send(self, client: Any, request: _ListModels | _Create) -> Any:
        """The in-process model's answer as it is (no HTTP answer to read, nor to bound)."""
        return client.create(**request.body) if isinstance(request, _Create) else client.list()

    async def _send_async(self, client: Any, request: _ListModels | _Create) -> Any:
        if isinstance(request, _Create):
            return await client.create(**request.body)
        return await client.list()

    def _sync_client(self) -> Any:
        if self._shared.sync_client is None:
            if self.model_path is None:
                from turnbudget.agents.local_server import local_model_path

                self.model_path = local_model_path()
            # (also without `preflight`: llama.cpp read a FIFO for ever)
            _check_model(self.model_path)
            self._shared.sync_client = _Completions(self)
        return self._shared.sync_client

    def _async_client(self) -> Any:
        if self._shared.async_client is None:
            self._shared.async_client = _AsyncCompletions(self._sync_client())
        return self._shared.async_client


def _check_model(path: Path) -> None:
    """Raise unless ``path`` is a regular file that begins as a GGUF file does."""
    if not path.is_file():
        why = (
            "a directory" if path.is_dir()
            else "not a regular file" if path.exists()  # (a FIFO)
            else "no such file"
        )  # fmt: skip
        raise FileNotFoundError(
            f"Expect the model of llm:local to be a .gguf file, got {str(path)!r} ({why})"
        )
    from turnbudget.agents.local_server import gguf_problem

    # (llama.cpp refused any other file in every episode, each a failure to run)
    if problem := gguf_problem(path):
        raise ValueError(
            f"Expect the model of llm:local to be a .gguf file, got {str(path)!r} ({problem})"
        )


def make_local_agent(args: str, **options: Any) -> LocalChatAgent:
    """Build a `LocalChatAgent` from what follows ``llm:local`` (``""`` or ``:PATH.gguf``).

    ``options`` are keyword arguments as for `make_llm_agent`; None values are dropped.
    """
    import inspect

    from turnbudget.agents.registry import check_options

    options = {k: v for k, v in options.items() if v is not None}
    # Its own keywords (the model's path is the spec's), then `ChatAgent`'s for the rest.
    own = set(inspect.signature(LocalChatAgent).parameters) - {"model_path", "options"}
    check_options("llm:local", ChatAgent, {k: v for k, v in options.items() if k not in own})
    return LocalChatAgent(args.strip() or None, **options)
