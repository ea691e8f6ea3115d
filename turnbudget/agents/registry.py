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

Example:
    >>> make_agent("oracle:0.1")
    OracleAgent(epsilon=0.1)
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from typing import Any

from turnbudget._checks import load_object

__all__ = [
    "BUILTIN_AGENTS",
    "ENTRY_POINT_GROUP",
    "AgentFactory",
    "list_agents",
    "make_agent",
    "register_agent",
]

#: A factory builds an agent from the text after the spec's first colon.
AgentFactory = Callable[[str], Any]

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


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip() or ":" in name:
        raise ValueError(f"Expect an agent name to be a non-empty str without ':', got {name!r}")
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
            raise ValueError(f"Unknown agent {name!r}; expect one of {list_agents()}")
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
        extra = _EXTRAS.get(name)
        hint = f" (pip install 'turnbudget[{extra}]')" if extra else ""
        raise ImportError(f"Agent {name!r} needs a missing dependency{hint}: {err}") from err


def make_agent(spec: str, **options: Any) -> Any:
    """Build the agent that ``spec`` (``NAME[:ARGS]``) names.

    ``options`` are keyword arguments for factories that take them (``llm``:
    ``base_url``, ``api_key_env``, ``concurrency``, ...); None values are
    dropped, and options a factory does not take raise ``ValueError``.

    Raises:
        ValueError: an unknown name, or arguments the factory rejects.
        ImportError: the agent's module or a dependency of it is missing.

    Example:
        >>> make_agent("random")
        RandomAgent()
    """
    if not isinstance(spec, str):
        raise ValueError(f"Expect an agent spec string NAME[:ARGS], got {spec!r}")
    name, _, arg = spec.strip().partition(":")
    factory = _resolve(_check_name(name))
    options = {k: v for k, v in options.items() if v is not None}
    if options:
        _check_options(name, factory, options)
        agent = factory(arg, **options)
    else:
        agent = factory(arg)
    if agent is None:
        raise ValueError(f"The factory of agent {name!r} returned None for {spec!r}")
    return agent


def _check_options(name: str, factory: AgentFactory, options: dict[str, Any]) -> None:
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
