"""`PolicyAgent`: a policy trained through the classic-RL stack, playing on the text contract.

A saved policy is a directory written by `turnbudget.train` (``turnbudget train``):

- ``policy.zip`` — the sb3-contrib ``MaskablePPO`` model;
- ``encoding.json`` — how observations became vectors and actions became
  commands in training (the `TextFeatures` settings, the `DiscreteActions`
  size, the `HistoryFeatures` window, whether and how the budget was shown,
  the network's ``activation``). This module owns the format: training
  writes it with `policy_encoding` and `write_encoding`, the agent reads it
  with `read_encoding`.

The agent rebuilds exactly those features from the text observation and the
info an evaluator hands it (``admissible_actions``, ``goal``, and the budget
keys when the budget was visible in training), so the same evaluator, probes
and reports serve it.

Loading reads weights only, so a saved policy from anyone is safe to play:
the actor's tensors come from the zip's ``policy.pth`` through
``torch.load(weights_only=True)``, which refuses anything but tensors and
plain containers, and the network (``MlpPolicy``: Linear layers, one
activation) is rebuilt from their shapes and ``encoding.json`` (JSON). The
zip's ``data`` (cloudpickled Python objects) is never read, and SB3 is not
imported. torch is imported only while loading: the network is copied into
NumPy arrays, so the agent pickles cheaply into worker processes and acts
there without torch.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from turnbudget.agents.base import EXECUTED_KEY
from turnbudget.wrappers.history_features import (
    FeatureEncoder,
    HistoryFeatures,
    text_features_vector,
)

__all__ = [
    "ENCODING_FILE",
    "ENCODING_FORMAT",
    "PolicyAgent",
    "load_policy",
    "make_policy_agent",
    "policy_encoding",
    "read_encoding",
    "write_encoding",
]

ENCODING_FILE = "encoding.json"
#: The version of ``encoding.json`` this module writes and reads.
ENCODING_FORMAT = 1
_POLICY_FILE = "policy.zip"
_WEIGHTS_MEMBER = "policy.pth"  # the policy's state dict, inside the SB3 zip
_MAX_WEIGHTS_BYTES = 1 << 30
_FALLBACK = "look"
_ACTIVATIONS = {
    "Tanh": np.tanh,
    "ReLU": lambda x: np.maximum(x, 0.0),
    "Identity": lambda x: x,
}
# SB3's MlpPolicy default, the only one training used before it wrote `activation`.
_DEFAULT_ACTIVATION = "Tanh"
_HIDDEN = "mlp_extractor.policy_net."
_HEAD = "action_net."
_CRITIC = ("mlp_extractor.value_net.", "value_net.")  # the value function: not needed to act

Layers = list[tuple[np.ndarray, np.ndarray, str]]


def _weights(path: Path) -> dict[str, np.ndarray]:
    """The policy's tensors from an SB3 zip, read as weights only (never unpickling objects)."""
    import torch

    try:
        with zipfile.ZipFile(path) as archive:
            if archive.getinfo(_WEIGHTS_MEMBER).file_size > _MAX_WEIGHTS_BYTES:
                raise ValueError(f"{_WEIGHTS_MEMBER} is over {_MAX_WEIGHTS_BYTES} bytes")
            raw = archive.read(_WEIGHTS_MEMBER)
    except (zipfile.BadZipFile, KeyError, OSError, ValueError) as exc:
        raise ValueError(
            f"Cannot read {path}: expect an SB3 model zip with {_WEIGHTS_MEMBER} ({exc})"
        ) from exc
    try:
        state = torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
    except Exception as exc:  # an untrusted file: whatever torch refuses, we refuse
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(
            f"Refusing {path}: its {_WEIGHTS_MEMBER} is not plain weights "
            f"(torch.load(weights_only=True): {reason})"
        ) from exc
    if not isinstance(state, Mapping) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()
    ):
        raise ValueError(f"Refusing {path}: expect {_WEIGHTS_MEMBER} to map names to tensors")
    return {k: v.detach().to(torch.float64).numpy() for k, v in state.items()}


def _feature_size(encoding: Mapping[str, Any]) -> int:
    """The length of the feature vector the encoding builds (what the network takes)."""
    spec = encoding["text_features"]
    blocks = 1 + bool(spec["include_goal"]) + bool(spec["include_admissible"])
    encoder = FeatureEncoder(
        encoding["max_actions"], encoding["history"], encoding["command_dim"], encoding["budget"]
    )
    return int(spec["dim"]) * blocks + encoder.size()


def _network(weights: Mapping[str, np.ndarray], encoding: Mapping[str, Any], where: Path) -> Layers:
    """The actor's layers as ``(weight, bias, activation)``: SB3's ``MlpPolicy`` actor
    (``Linear``, activation, ..., then the ``action_net`` head), from its tensors' shapes."""
    activation = encoding.get("activation", _DEFAULT_ACTIVATION)
    if not isinstance(activation, str) or activation not in _ACTIVATIONS:
        raise ValueError(
            f"Expect `activation` in {where / ENCODING_FILE} to be one of "
            f"{sorted(_ACTIVATIONS)}, got {activation!r}"
        )
    indices = {k[len(_HIDDEN) :].partition(".")[0] for k in weights if k.startswith(_HIDDEN)}
    hidden = sorted(int(i) for i in indices if i.isdigit())
    names = [f"{_HIDDEN}{i}." for i in hidden] + [_HEAD]
    expected = {n + p for n in names for p in ("weight", "bias")}
    unexpected = sorted(k for k in weights if k not in expected and not k.startswith(_CRITIC))
    if unexpected or not expected <= weights.keys() or hidden != list(range(0, 2 * len(hidden), 2)):
        raise ValueError(
            f"PolicyAgent plays MlpPolicy models (Linear layers, each hidden one followed by "
            f"an activation); {where / _POLICY_FILE} has the parameters {sorted(weights)}"
        )
    try:
        size = _feature_size(encoding)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{where / ENCODING_FILE} is not a feature encoding: {exc!r}") from exc
    layers: Layers = []
    for name in names:
        weight, bias = weights[name + "weight"], weights[name + "bias"]
        if weight.ndim != 2 or weight.shape[1] != size or bias.shape != (weight.shape[0],):
            raise ValueError(
                f"{name}weight in {where / _POLICY_FILE} has shape {weight.shape} (bias "
                f"{bias.shape}): expect (n, {size}) after {ENCODING_FILE}'s features"
            )
        size = weight.shape[0]
        layers.append((weight.T.copy(), bias.copy(), activation if name != _HEAD else "Identity"))
    if size != int(encoding["max_actions"]):
        raise ValueError(
            f"{where / _POLICY_FILE} scores {size} actions; {ENCODING_FILE} says "
            f"max_actions={encoding['max_actions']}"
        )
    return layers


def load_policy(path: str | Path) -> tuple[dict[str, Any], Layers]:
    """``(encoding, layers)`` of a saved policy directory (see the module docstring).

    Raises:
        FileNotFoundError: ``path`` is not a saved policy directory (or its ``policy.zip``).
        ValueError: a file holds anything but plain weights and JSON, or they do not fit.
    """
    root = Path(path)
    if root.is_file() and root.name == _POLICY_FILE:
        root = root.parent
    if not (root / ENCODING_FILE).is_file() or not (root / _POLICY_FILE).is_file():
        raise FileNotFoundError(
            f"{str(path)!r} is not a saved policy: expect a directory with {_POLICY_FILE} and "
            f"{ENCODING_FILE} (written by `turnbudget train`)"
        )
    encoding = read_encoding(root)
    return encoding, _network(_weights(root / _POLICY_FILE), encoding, root)


# -- encoding.json: written by training, read by the agent --------------------------------


def policy_encoding(
    features: HistoryFeatures, env_id: str, activation: str = _DEFAULT_ACTIVATION
) -> dict[str, Any]:
    """The ``encoding.json`` of a policy trained on a stack that ends in ``features``.

    It holds `HistoryFeatures.spec_dict` (the `TextFeatures` settings, the action
    slots, the history window, how the budget was shown), the env id, and the
    name of the network's activation (SB3's ``policy.activation_fn.__name__``).

    Example:
        >>> import turnbudget
        >>> env = turnbudget.make("turnbudget/Maze-Easy-v0", discrete_actions=6,
        ...                       text_features=16, info="text")
        >>> encoding = policy_encoding(HistoryFeatures(env, history=2), "turnbudget/Maze-Easy-v0")
        >>> encoding["format"], encoding["max_actions"], encoding["history"], encoding["activation"]
        (1, 6, 2, 'Tanh')
    """
    if activation not in _ACTIVATIONS:
        raise ValueError(
            f"Expect `activation` to be one of {sorted(_ACTIVATIONS)} (what PolicyAgent "
            f"plays), got {activation!r}"
        )
    return {
        "format": ENCODING_FORMAT,
        "env_id": str(env_id),
        **features.spec_dict(),
        "activation": activation,
    }


def write_encoding(directory: str | Path, encoding: Mapping[str, Any]) -> Path:
    """Write ``encoding.json`` (from `policy_encoding`) into a saved policy directory."""
    version = encoding.get("format")
    if version != ENCODING_FORMAT:
        raise ValueError(f"Expect an encoding of format {ENCODING_FORMAT}, got {version!r}")
    path = Path(directory) / ENCODING_FILE
    path.write_text(json.dumps(dict(encoding), indent=2) + "\n")
    return path


def read_encoding(directory: str | Path) -> dict[str, Any]:
    """A saved policy directory's ``encoding.json``, checked for its format.

    Raises:
        ValueError: the file is not JSON or not of a format this version reads.
    """
    path = Path(directory) / ENCODING_FILE
    try:
        encoding = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not JSON: {exc}") from exc
    version = encoding.get("format") if isinstance(encoding, dict) else None
    if version != ENCODING_FORMAT:
        raise ValueError(f"Unknown encoding format {version!r} in {Path(directory)}")
    return encoding


class PolicyAgent:
    """Play a saved policy: text observation -> features -> masked logits -> a command.

    Each turn the agent rebuilds the training features (`TextFeatures`
    blocks, then `FeatureEncoder`'s slots and window), masks the slots past
    the admissible commands, and samples from the policy's distribution with
    a generator seeded by ``reset(seed)`` (so repeats of a task are
    independent and Pass@K means something), or takes the most likely command
    with ``deterministic=True``.

    The window records what was *executed*: ``info["executed_action"]``
    (`EXECUTED_KEY`, which the engines set after every turn: the agent's own
    command unless a slip replaced it or the engine forced it), else the
    agent's own choice. Teacher-forced turns go through `observe`.

    ``budget_aware`` is True when the policy was trained with the budget
    visible: its behaviour depends on T, so Pass@(K,T) must be measured by
    rerunning each T (the evaluator's ``mode="auto"`` does), and it reads
    ``turns_left``/``turn_budget`` from the info it receives. If the
    observation does not already show the budget (evaluated with
    ``reveal=None``), the agent appends the text `RevealBudget` showed in
    training, so both ways of evaluating give the same features.

    Args:
        path: A saved policy directory (or its ``policy.zip``).
        deterministic: Play the most likely command instead of sampling.

    Example:
        ``turnbudget eval --env turnbudget/Maze-Easy-v0 --agent policy:runs/mix``
    """

    needs_oracle = False

    def __init__(self, path: str | Path, deterministic: bool = False):
        self.path = str(path)
        self.deterministic = bool(deterministic)
        self.encoding, self._layers = load_policy(path)
        self.budget_aware = bool(self.encoding["budget"])
        self._rng = np.random.default_rng(0)
        self._encoder: FeatureEncoder | None = None
        self._cache: dict[str, int] = {}
        self._base_cache: dict[tuple[str, tuple[str, ...]], np.ndarray] = {}
        self._cache_goal: str | None = None
        self._goal: str | None = None
        self._pending: str | None = None

    @property
    def name(self) -> str:
        return f"policy:{Path(self.path).name}" + (":det" if self.deterministic else "")

    def __repr__(self) -> str:
        return f"PolicyAgent({self.path!r}, deterministic={self.deterministic})"

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_encoder": None, "_cache": {}, "_base_cache": {},
                "_cache_goal": None}  # fmt: skip

    def _new_encoder(self) -> FeatureEncoder:
        e = self.encoding
        return FeatureEncoder(e["max_actions"], e["history"], e["command_dim"], e["budget"])

    # -- the protocol ---------------------------------------------------------

    def reset(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)
        if self._encoder is None:
            self._encoder = self._new_encoder()
        self._goal = None
        self._pending = None

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        features, commands = self._see(observation, info)
        if not commands:
            self._pending = _FALLBACK
            return _FALLBACK
        logits = self.logits(features)[: len(commands)]
        if self.deterministic:
            index = int(np.argmax(logits))
        else:
            p = np.exp(logits - logits.max())
            p /= p.sum()
            index = min(int(np.searchsorted(np.cumsum(p), self._rng.random(), side="right")),
                        len(commands) - 1)  # fmt: skip
        self._pending = commands[index]
        return commands[index]

    def observe(self, observation: str, info: Mapping[str, Any], executed_action: str) -> None:
        """A turn played for the agent (a teacher-forced prefix): remember it as executed."""
        self._see(observation, info)
        self._pending = str(executed_action)

    # -- features and network -------------------------------------------------

    def _see(self, observation: str, info: Mapping[str, Any]) -> tuple[np.ndarray, list[str]]:
        if self._encoder is None:
            self.reset(0)
        encoder = self._encoder
        assert encoder is not None
        if self._goal is None:  # first turn of the episode
            goal = info.get("goal")
            goal_text = str(goal) if goal is not None else observation.split("\n", 1)[0]
            if goal_text != self._cache_goal:  # the goal block is part of the cached vectors
                self._base_cache.clear()
                self._cache_goal = goal_text
            self._goal = goal_text
            encoder.reset(self._goal)
        elif self._pending is not None:
            executed = info.get(EXECUTED_KEY)
            encoder.record(str(executed) if executed is not None else self._pending)
        self._pending = None
        admissible = list(info.get("admissible_actions") or ())
        commands = sorted(admissible)[: self.encoding["max_actions"]]
        text = self._with_budget(observation, info)
        base = self._base(text, admissible)
        extra = encoder.encode(text, commands, info.get("turns_left"), info.get("turn_budget"))
        return np.concatenate([base, extra]), commands

    def _base(self, text: str, admissible: list[str]) -> np.ndarray:
        """The `TextFeatures` blocks, memoized per (observation, commands) within the episode's goal."""
        key = (text, tuple(admissible))
        hit = self._base_cache.get(key)
        if hit is None:
            if len(self._base_cache) > 50_000:
                self._base_cache.clear()
            spec = self.encoding["text_features"]
            assert self._goal is not None
            hit = text_features_vector(text, self._goal, admissible, spec, self._cache)
            self._base_cache[key] = hit
        return hit

    def _with_budget(self, observation: str, info: Mapping[str, Any]) -> str:
        reveal = self.encoding.get("reveal")
        if reveal is None or info.get("budget_visible") is not None or "turns_left" not in info:
            return observation
        left = int(info["turns_left"])
        if reveal["mode"] == "final" and left > int(reveal["final_turns"]):
            return observation
        return observation + reveal["template"].format(
            turns_left=left, turns_used=info.get("turns_used"), turn_budget=info.get("turn_budget")
        )

    def logits(self, features: np.ndarray) -> np.ndarray:
        """The policy's unmasked logits for one feature vector."""
        x = np.asarray(features, dtype=np.float64)
        for weight, bias, activation in self._layers:
            x = _ACTIVATIONS[activation](x @ weight + bias)
        return x


def make_policy_agent(arg: str) -> PolicyAgent:
    """The ``policy:PATH[:det]`` agent spec: a saved policy, sampled (or its argmax with ``:det``).

    Example:
        ``turnbudget eval --env turnbudget/Maze-Easy-v0 --agent policy:runs/mix:det``
    """
    text = str(arg).strip()
    if not text:
        raise ValueError("Expect `policy:PATH[:det]` with the directory of a saved policy")
    deterministic = text.endswith(":det")
    return PolicyAgent(text[: -len(":det")] if deterministic else text, deterministic)
