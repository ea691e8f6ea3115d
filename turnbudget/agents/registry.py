"""One registry of agent specs: ``NAME[:ARGS]`` -> an agent, with lazy imports.

A spec is a name, optionally followed by a colon and an argument string that
the name's factory parses (``random``, ``oracle:0.1``). Factories are
registered as callables or as ``"module:attr"`` strings that are imported
only when the name is used, so listing or registering agents never pulls in
torch or an LLM client.

Where names come from, first match wins:

1. `register_agent` calls (built-ins included: `BUILTIN_AGENTS`);
2. installed distributions' entry points in the ``turnbudget.agents`` group,
   e.g. in a third-party ``pyproject.toml``::

       [project.entry-points."turnbudget.agents"]
       myagent = "mypackage.agents:make_my_agent"

   after which ``turnbudget eval --agent myagent:ARGS`` works.

A factory is called with the argument string (``""`` when the spec has none)
and returns an `Agent` or a `BatchAgent`; it raises ``ValueError`` for an
argument it cannot parse.

A spec whose name is none of those may name the code itself (`spec_source`
tells which kind a spec is):

- ``MODULE:ATTR[:ARGS]``: ``ATTR`` (dotted for a nested one) of an importable
  module, e.g. ``mypackage.agents:MyAgent``;
- ``PATH.py:ATTR[:ARGS]``: ``ATTR`` of a Python file, e.g. ``agents/mine.py:make``
  (loaded as a module named after the file's absolute path).

``ATTR`` is an agent class or a factory function. A class with a ``from_spec``
classmethod (as the built-ins have) is built by ``from_spec(ARGS)``; any other
class or function is called with ARGS as its one argument when it takes an
argument or ARGS were given, else with none (``MyAgent()``). What it builds must
be an agent (``reset``/``act``, ``act_batch`` or ``act_async``).

Example:
    >>> make_agent("oracle:0.1")
    OracleAgent(epsilon=0.1)
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import re
import sys
import weakref
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from turnbudget._checks import PATH_CHARS, brief, load_object

__all__ = [
    "BUILTIN_AGENTS",
    "ENTRY_POINT_GROUP",
    "SPEC_SOURCES",
    "AgentFactory",
    "agent_origin",
    "list_agents",
    "make_agent",
    "register_agent",
    "spec_source",
]

#: A factory builds an agent from the text after the spec's first colon.
AgentFactory = Callable[[str], Any]

# Agents built from code outside turnbudget, by id -> (a weak reference to the agent, where
# it came from) (`agent_origin`). By id, not a weak-keyed dict: a dataclass agent is
# unhashable, and its origin was lost (two keys given as arguments were one run).
_ORIGINS: dict[int, tuple[weakref.ref[Any], str]] = {}
# The shortest argument of an outside agent's spec blanked wherever it is echoed (a shorter
# one, "0.25", would blank that number in every message: no key is that short).
_SECRET_ARG_LENGTH = 8
# A module's file -> the start of its SHA-256, read when it was loaded (what its agents ran).
_CODE_DIGESTS: dict[str, str] = {}

#: The entry-point group through which installed distributions add agents.
ENTRY_POINT_GROUP = "turnbudget.agents"

#: The agents shipped with turnbudget: name -> ``"module:attr"`` of its factory.
#: ``policy`` and ``llm`` name modules that may be absent (or need an extra);
#: using them then fails with a clear error, not at import time.
BUILTIN_AGENTS: dict[str, str] = {
    "random": "turnbudget.agents.baselines:RandomAgent.from_spec",
    "oracle": "turnbudget.agents.baselines:OracleAgent.from_spec",
    "control": "turnbudget.agents.controls:make_control",  # agents whose true skill is known
    "house": "turnbudget.agents.house:HouseAgent.from_spec",  # a team game's fixed opponent
    "policy": "turnbudget.agents.policy:make_policy_agent",
    "llm": "turnbudget.agents.llm:make_llm_agent",
}

# The extra that holds a built-in agent's dependencies, for the error message.
_EXTRAS = {"policy": "rl", "llm": "llm"}

_REGISTRY: dict[str, AgentFactory | str] = dict(BUILTIN_AGENTS)

#: What `spec_source` may answer: where the code of a spec's agent comes from.
SPEC_SOURCES = ("builtin", "registered", "entry_point", "module", "file", "unknown")

# ``MODULE:ATTR``: a dotted module path and a (dotted) attribute, both Python identifiers.
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip() or ":" in name:
        raise ValueError(
            f"Expect an agent name to be a non-empty str without ':', got {brief(name)}"
        )
    return name.strip().lower()


def register_agent(name: str, factory: AgentFactory | str, *, overwrite: bool = False) -> None:
    """Make ``name`` (and ``name:ARGS``) usable by `make_agent` and ``turnbudget eval --agent``.

    Args:
        name: the spec's name (case-insensitive, no colon).
        factory: ``factory(args: str) -> agent``, or ``"module:attr"`` naming it
            (imported on first use).
        overwrite: replace an existing registration instead of raising ``ValueError``.
    """
    key = _check_name(name)
    if not (callable(factory) or isinstance(factory, str)):
        raise ValueError(f"Expect `factory` to be callable or 'module:attr', got {factory!r}")
    if key in _REGISTRY and not overwrite:
        raise ValueError(f"Agent {key!r} is already registered (pass overwrite=True to replace it)")
    _REGISTRY[key] = factory


def _entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    return {ep.name.lower(): ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


def list_agents() -> list[str]:
    """Every usable agent name: registered ones, then those from entry points, sorted."""
    return sorted(set(_REGISTRY) | set(_entry_points()))


def _resolve(name: str) -> AgentFactory:
    factory = _REGISTRY.get(name)
    if factory is None:
        entry_point = _entry_points().get(name)
        if entry_point is None:
            raise ValueError(
                f"Unknown agent {brief(name)}; expect one of {list_agents()}, or MODULE:ATTR or "
                "PATH.py:ATTR naming an agent class or factory"
            )
        try:
            return entry_point.load()
        except ImportError as err:
            raise ImportError(
                f"Cannot load agent {name!r} from entry point {entry_point.value!r} "
                f"(group {ENTRY_POINT_GROUP!r}): {err}"
            ) from err
    if not isinstance(factory, str):
        return factory
    try:
        return load_object(factory, what=f"agent {name!r}")
    except ImportError as err:
        module = factory.partition(":")[0]
        if isinstance(err.__cause__, ModuleNotFoundError) and err.__cause__.name == module:
            raise ValueError(
                f"Agent {name!r} is reserved for {module}, which this installation does not have"
            ) from err
        raise ImportError(
            f"Agent {name!r} needs a missing dependency{_extra_hint(name)}: {err}"
        ) from err


def _extra_hint(name: str) -> str:
    """``" (pip install -e '.[EXTRA]' in the turnbudget checkout)"`` for a built-in agent that needs an extra, else ""."""
    extra = _EXTRAS.get(name) if _REGISTRY.get(name) == BUILTIN_AGENTS.get(name) else None
    return f" (pip install -e '.[{extra}]' in the turnbudget checkout)" if extra else ""


def spec_source(spec: str) -> str:
    """Where the code of the agent ``spec`` names comes from (one of `SPEC_SOURCES`).

    ``"builtin"``: shipped with turnbudget (`BUILTIN_AGENTS`); ``"registered"``:
    `register_agent` in this process; ``"entry_point"``: an installed
    distribution; ``"module"`` / ``"file"``: a ``MODULE:ATTR`` / ``PATH.py:ATTR``
    spec (see the module doc); ``"unknown"``: none of those. Nothing is imported.

    Example:
        >>> [spec_source(s) for s in ("oracle:0.1", "mypackage.agents:MyAgent", "bots/a.py:A")]
        ['builtin', 'module', 'file']
    """
    if not isinstance(spec, str):
        raise ValueError(f"Expect an agent spec string NAME[:ARGS], got {brief(spec)}")
    name, _, rest = spec.strip().partition(":")
    key = name.strip().lower()
    if key in _REGISTRY:
        builtin = BUILTIN_AGENTS.get(key)
        return "builtin" if builtin is not None and _REGISTRY[key] == builtin else "registered"
    if key and key in _entry_points():
        return "entry_point"
    attr = rest.partition(":")[0].strip()
    if name.strip().endswith(".py") and _DOTTED.fullmatch(attr):
        return "file"
    if _DOTTED.fullmatch(name.strip()) and _DOTTED.fullmatch(attr):
        return "module"
    return "unknown"


def make_agent(spec: str, **options: Any) -> Any:
    """Build the agent that ``spec`` (``NAME[:ARGS]``, ``MODULE:ATTR[:ARGS]`` or
    ``PATH.py:ATTR[:ARGS]``: see the module doc) names.

    ``options`` are keyword arguments for factories that take them (``llm``:
    ``base_url``, ``api_key_env``, ``concurrency``, ...); None values are
    dropped, and options a factory does not take raise ``ValueError``.

    Raises:
        ValueError: an unknown name or module, a missing attribute, arguments
            the factory rejects, or something built that is not an agent.
        ImportError: the agent's module or a dependency of it is missing.
        FileNotFoundError: a ``policy:`` spec names a directory that holds no saved policy.

    Example:
        >>> make_agent("random")
        RandomAgent()
        >>> make_agent("turnbudget.agents.baselines:OracleAgent:0.25")
        OracleAgent(epsilon=0.25)
    """
    if not isinstance(spec, str):
        raise ValueError(f"Expect an agent spec string NAME[:ARGS], got {brief(spec)}")
    name, _, arg = spec.strip().partition(":")
    key = _check_name(name)
    options = {k: v for k, v in options.items() if v is not None}
    source = spec_source(spec)
    remember_spec_args(spec)  # (before the factory runs: its error may quote them)
    if source in ("module", "file"):
        attr, _, arg = arg.partition(":")
        factory = _load_code(name.strip(), attr.strip(), spec.strip(), source)
        if options:
            check_options(spec.strip(), factory, options)
        agent = _call_factory(factory, arg, options, spec.strip())
        _remember_origin(agent, factory, attr.strip(), arg)
    else:
        factory = _resolve(key)
        if options:
            check_options(name, factory, options)
        try:
            agent = factory(arg, **options)
        except ModuleNotFoundError as err:  # a dependency the factory imports as it builds
            raise ImportError(f"Agent {key!r} needs {err.name!r}{_extra_hint(key)}") from err
    if agent is None:
        raise ValueError(
            f"The factory of agent {brief(name)} returned None for {brief(spec, PATH_CHARS)}"
        )
    if not _is_agent(agent):
        raise ValueError(
            f"Agent spec {brief(spec, PATH_CHARS)} built {type(agent).__name__}, which is not an agent: expect "
            "reset(seed) and act(observation, info), act_batch(...) (a BatchAgent) or "
            "act_async(...) (an AsyncAgent)"
        )
    return agent


def remember_spec_args(spec: str) -> None:
    """Register the ARGS of a spec of code outside turnbudget (``PATH.py:ATTR:ARGS``,
    ``MODULE:ATTR:ARGS``, an entry point's ``NAME:ARGS``) as a secret, in this process:
    an error, a step note or a repr that quotes them is blanked here too, where a sealed
    agent's are written (it is built in another process)."""
    from turnbudget.agents.secrets import remember

    if not isinstance(spec, str):
        return
    source = spec_source(spec)
    name, _, arg = spec.strip().partition(":")
    if source == "module" and (name.strip() + ".").startswith("turnbudget."):
        return  # (the library's own agents: their reprs say their settings, as by name)
    if source in ("module", "file"):
        arg = arg.partition(":")[2]
    elif source != "entry_point":
        return
    remember(*_arg_values(arg))


def _arg_values(arg: str) -> list[str]:
    """``arg``, and each value in it named like a credential (``model=m,token=XYZ``: ``XYZ``,
    not ``m``) or shaped like a key (``m,AIzaSy...``; a named one only by a key's fixed
    shape), those of at least
    `_SECRET_ARG_LENGTH` characters: a factory that parses its arguments keeps a key alone,
    and a dataclass repr showed it (``token='XYZ'``). Other values stay as written: a
    model's name is what the run records."""
    from turnbudget.agents.secrets import is_credential_name, looks_like_key

    pieces = [arg]
    for piece in re.split(r"[,;&\s]+", arg):
        name, equals, value = piece.partition("=")
        if not equals:
            value = piece
        # (a named value by its name, or a key's fixed shape: a revision's digest or a
        # snapshot's path named as such is recorded, and earlier runs resume)
        if (equals and is_credential_name(name)) or looks_like_key(value, loosely=not equals):
            pieces.append(value)
    return [p for p in pieces if len(p) >= _SECRET_ARG_LENGTH]


def agent_origin(agent: Any) -> str | None:
    """Where an agent `make_agent` built from a ``MODULE:ATTR[:ARGS]`` or ``PATH.py:ATTR[:ARGS]``
    spec of code outside turnbudget came from: its ``ATTR``, a digest of its ``ARGS`` (never
    the arguments themselves: they may hold a key) and a digest of its module's code (None
    for any other agent). A run records it beside the agent's repr, so a rerun
    with other arguments or edited code is refused as another run, not resumed into this one
    (a default repr names only the class: ``:0.1`` and ``:0.9`` were one run)."""
    entry = _ORIGINS.get(id(agent))
    if entry is None or entry[0]() is not agent:  # (another object, since, under its id)
        return None
    return entry[1]


def _remember_origin(agent: Any, factory: Callable[..., Any], attr: str, arg: str) -> None:
    from turnbudget.agents.secrets import redact, remember

    # (a class's factory is its ``from_spec``, which a subclass of a built-in agent inherits:
    # the method's module was the library's, and the user's class was recorded as built in)
    owner = getattr(factory, "__self__", None)
    module_name = getattr(owner if isinstance(owner, type) else factory, "__module__", None) or ""
    if module_name == "turnbudget" or module_name.startswith("turnbudget."):
        return  # (the library's own agents: their reprs say their settings, as by name)
    remember(*_arg_values(arg))  # (blanked wherever echoed: an error quoting its key)
    path = getattr(sys.modules.get(module_name), "__file__", None)
    if path is not None and path not in _CODE_DIGESTS:
        try:
            _CODE_DIGESTS[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
        except OSError:
            _CODE_DIGESTS[path] = "unread"
    code = f" code sha256:{_CODE_DIGESTS[path]}" if path is not None else ""
    # The arguments by their digest, never as written: they may hold a key of any shape
    # (a GitHub token went into run.json, the summary and the report as it was typed).
    args = f":args sha256:{hashlib.sha256(arg.encode('utf-8', 'surrogatepass')).hexdigest()[:16]}"
    key = id(agent)
    with contextlib.suppress(TypeError):  # (no weak reference to it: its repr alone)
        ref = weakref.ref(agent, lambda _, key=key: _forget_origin(key))
        _ORIGINS[key] = (ref, redact(attr[:200]) + (args if arg else ":") + code)


def _forget_origin(key: int) -> None:
    entry = _ORIGINS.get(key)
    if entry is not None and entry[0]() is None:  # (not a newer agent's, under the same id)
        del _ORIGINS[key]


def _is_agent(obj: Any) -> bool:
    """Whether ``obj`` speaks one of the agent protocols (`turnbudget.agents.base`)."""
    if isinstance(obj, type):
        return False
    plain = callable(getattr(obj, "act", None)) and callable(getattr(obj, "reset", None))
    return (
        plain
        or callable(getattr(obj, "act_batch", None))
        or callable(getattr(obj, "act_async", None))
    )


def _as_written(text: str) -> str:
    """``text`` unquoted when it is short and printable (a spec's ``MODULE:ATTR``), else
    `brief`'s cut of it: a message names a spec, never repeats a hostile one."""
    return text if len(text) <= PATH_CHARS and text.isprintable() else brief(text, PATH_CHARS)


def _load_code(location: str, attr: str, spec: str, source: str) -> Callable[..., Any]:
    """The class or factory ``attr`` of the module (or Python file) ``location``."""
    if source == "file":
        module = load_agent_file(location, spec)
    else:
        try:
            module = importlib.import_module(location)
        except RecursionError:  # (a name of thousands of dotted parts: each imports its parent)
            raise ValueError(
                f"Cannot import {brief(location)} for agent {brief(spec, PATH_CHARS)}: a module "
                "name nested too deep"
            ) from None
        except ModuleNotFoundError as err:
            if err.name is not None and (location + ".").startswith(err.name + "."):
                raise ValueError(
                    f"Unknown agent {brief(location)}: not a registered name ({list_agents()}) "
                    f"nor a module that can be imported for {brief(spec, PATH_CHARS)} (no "
                    f"module named {brief(err.name)}; put its folder on PYTHONPATH, or name its "
                    "file: PATH.py:ATTR)"
                ) from err
            raise ImportError(
                f"Cannot import {brief(location)} for agent {brief(spec, PATH_CHARS)}: {err}"
            ) from err
        except ImportError as err:
            raise ImportError(
                f"Cannot import {brief(location)} for agent {brief(spec, PATH_CHARS)}: {err}"
            ) from err
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(
                f"Module {brief(location)} has no attribute {brief(attr)} (agent spec "
                f"{brief(spec, PATH_CHARS)})"
            ) from None
    if _is_agent(obj):
        raise ValueError(
            f"{_as_written(f'{location}:{attr}')} is an agent object; expect its class or a function that "
            f"builds one (agent spec {brief(spec, PATH_CHARS)}), so each run gets a fresh agent"
        )
    if not callable(obj):
        raise ValueError(
            f"Expect {_as_written(f'{location}:{attr}')} to be an agent class or a factory function, got "
            f"{type(obj).__name__} (agent spec {brief(spec, PATH_CHARS)})"
        )
    if isinstance(obj, type) and callable(getattr(obj, "from_spec", None)):
        return obj.from_spec
    return obj


#: How the name of a module `make_agent` loaded from a ``PATH.py`` starts.
AGENT_FILE_MODULE = "_turnbudget_agent_"


def load_agent_file(location: str, spec: str) -> Any:
    """The module a Python file defines, loaded once per path (a module named after it)."""
    import importlib.util

    try:
        path = Path(location).expanduser().resolve()
        found = path.is_file()
    except (OSError, RuntimeError, ValueError) as exc:  # (a name too long, "~nouser", a NUL)
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ValueError(
            f"Cannot load agent {brief(spec, PATH_CHARS)}: its file {brief(location, PATH_CHARS)} "
            f"cannot be read ({brief(reason, PATH_CHARS)})"
        ) from None
    if not found:
        raise ValueError(
            f"Cannot load agent {brief(spec, PATH_CHARS)}: there is no file "
            f"{brief(str(path), PATH_CHARS)}"
        )
    stem = re.sub(r"\W", "_", path.stem)
    module_name = f"{AGENT_FILE_MODULE}{stem}_{zlib.crc32(bytes(path)):08x}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    file_spec = importlib.util.spec_from_file_location(module_name, path)
    if file_spec is None or file_spec.loader is None:
        raise ValueError(
            f"Cannot load agent {brief(spec, PATH_CHARS)}: {brief(str(path), PATH_CHARS)} is not a "
            "Python file"
        )
    module = importlib.util.module_from_spec(file_spec)
    sys.modules[module_name] = module  # (so its classes pickle, and dataclasses find it)
    try:
        file_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


def _call_factory(factory: Callable[..., Any], arg: str, options: dict[str, Any], spec: str) -> Any:
    """``factory(arg, **options)`` when it takes a positional argument it needs or ``arg`` is
    given, else ``factory(**options)``; arguments it cannot take raise ``ValueError``."""
    import inspect

    args: tuple[str, ...] = (arg,)
    try:
        params = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):  # no signature to read: the argument string, as registered
        params = None
    if params is not None:
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        required = any(p.default is p.empty for p in positional)
        takes_one = bool(positional) or any(p.kind is p.VAR_POSITIONAL for p in params)
        if not arg and not required:
            args = ()
        elif not takes_one:
            raise ValueError(
                f"Agent spec {brief(spec, PATH_CHARS)}: {getattr(factory, '__qualname__', factory)} takes no "
                f"arguments, got {arg!r}"
            )
    return factory(*args, **options)


def check_options(name: str, factory: AgentFactory, options: dict[str, Any]) -> None:
    """Raise ValueError naming the ``options`` that ``factory`` (a function or a class) takes
    no keyword for; a factory taking ``**options`` checks its own (`make_llm_agent`)."""
    import inspect

    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # no signature to read: let the call decide
        return
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return
    taken = {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    unknown = sorted(set(options) - taken)
    if unknown:
        raise ValueError(f"Agent {name!r} takes no option(s) {unknown}")
