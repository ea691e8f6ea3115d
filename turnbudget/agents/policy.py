"""`PolicyAgent`: a policy trained through the classic-RL stack, playing on the text contract.

A saved policy is a directory in one of two formats:

- the training format, written by `turnbudget.train` (``turnbudget train``):
  ``policy.zip``, the sb3-contrib ``MaskablePPO`` model, and ``encoding.json``;
- the zoo format, written by `export_policy` (``turnbudget export-policy``):
  ``weights.npz``, the actor's arrays (float32; NumPy alone reads them, with
  ``allow_pickle=False``, so playing needs no torch), ``encoding.json``, and
  ``card.json``, how it was trained. The policies the package ships are in
  this format under ``turnbudget/zoo/<family>/<arm>/seed<k>``, played as
  ``policy:zoo/<family>/<arm>/seed<k>`` (`zoo_policies` lists them).

``encoding.json`` says how observations became vectors and actions became
commands in training (the `TextFeatures` settings, the `DiscreteActions`
size, the `HistoryFeatures` window, whether and how the budget was shown, the
network's ``activation``). This module owns both formats: training writes the
encoding with `policy_encoding` and `write_encoding`, the agent reads it with
`read_encoding`, `export_policy` converts a training directory to the zoo's.

The agent rebuilds exactly those features from the text observation and the
info an evaluator hands it (``admissible_actions``, ``goal``, and the budget
keys when the budget was visible in training), so the same evaluator, probes
and reports serve it.

Loading reads weights only, so a saved policy from anyone is safe to play:
``weights.npz`` is read with ``np.load(allow_pickle=False)`` and must hold
float arrays only; a zip's ``policy.pth`` is read through
``torch.load(weights_only=True)``, which refuses anything but tensors and
plain containers (with torch >= 2.10: older ones could be made to run code). The network (``MlpPolicy``: Linear layers, one activation)
is rebuilt from the arrays' shapes and ``encoding.json`` (JSON). The zip's
``data`` (cloudpickled Python objects) is never read, and SB3 is not
imported; torch is imported only while loading a zip. The network is kept as
NumPy arrays, so the agent pickles cheaply into worker processes and acts
there without torch. The zoo format keeps the float32 weights the zip holds,
so a policy plays the same actions in both.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from turnbudget._checks import (
    MAX_TURN_BUDGET,
    PATH_CHARS,
    brief,
    check_bool,
    check_seed,
    is_int,
    make_folders,
)
from turnbudget.agents.base import EXECUTED_KEY, admissible_commands
from turnbudget.records.files import EVALUATION_FILES, open_regular
from turnbudget.wrappers.history_features import (
    FeatureEncoder,
    HistoryFeatures,
    text_features_vector,
)
from turnbudget.wrappers.reveal_budget import check_reveal
from turnbudget.wrappers.text_features import MAX_DIM, MAX_NGRAMS

__all__ = [
    "CARD_FILE",
    "ENCODING_FILE",
    "ENCODING_FORMAT",
    "WEIGHTS_FILE",
    "ZOO",
    "PolicyAgent",
    "export_policy",
    "load_policy",
    "make_policy_agent",
    "policy_encoding",
    "read_encoding",
    "resolve_policy",
    "write_encoding",
    "zoo_card",
    "zoo_policies",
]

ENCODING_FILE = "encoding.json"
#: The version of ``encoding.json`` this module writes and reads.
ENCODING_FORMAT = 1
_POLICY_FILE = "policy.zip"
#: The zoo format's weights: the actor's float arrays, under SB3's parameter names.
WEIGHTS_FILE = "weights.npz"
#: How a zoo policy was trained (JSON: env, arm, seed, steps, budgets, command, commit).
CARD_FILE = "card.json"
_POLICY_FILES = (WEIGHTS_FILE, ENCODING_FILE, CARD_FILE)  # (what an export writes)
# What marks a directory as a run's, which an export never shares: a training run's files
# (its config.json is written first: a run stopped before its policy) and an evaluation's
# (a probe run's too: an export wrote beside its probes.jsonl).
_RUN_FILES = ("config.json", "progress.csv", "checkpoints", *EVALUATION_FILES)
#: The policies the package ships (``policy:zoo/<family>/<arm>/seed<k>``).
ZOO = Path(__file__).resolve().parents[1] / "zoo"
_ZOO_PREFIX = "zoo/"
_WEIGHTS_MEMBER = "policy.pth"  # the policy's state dict, inside the SB3 zip
_MAX_WEIGHTS_BYTES = 1 << 30
_SAFE_TORCH = "2.10"  # (the first torch whose weights-only loader has no known way to run code)
_MAX_JSON_BYTES = 1 << 20  # (an encoding or a card is a few hundred bytes)
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


def _check_safe_torch(torch: Any) -> None:
    """An ImportError unless this torch's ``torch.load(weights_only=True)`` is one that a
    crafted file cannot make run code: before 2.6 it could (CVE-2025-32434), before 2.10 it
    could corrupt memory (CVE-2026-24747)."""
    if torch.__version__ < _SAFE_TORCH:  # (a TorchVersion: compared as a version)
        raise ImportError(
            f"Reading a policy.zip needs torch >= {_SAFE_TORCH}, got {torch.__version__}: "
            f"an older torch.load(weights_only=True) can run code from a crafted file "
            f"(CVE-2025-32434, CVE-2026-24747). Upgrade torch, or play the policy's zoo "
            f"format (`turnbudget export-policy` where torch is safe: NumPy reads it)"
        )


def _torch() -> Any:
    """torch, to read a policy.zip, else an ImportError that says how to install it (`turnbudget
    export-policy` said "No module named 'torch'" and no more)."""
    try:
        import torch
    except ImportError as exc:  # (still "torch" by name: `make_agent` says which agent needs it)
        raise ModuleNotFoundError(
            f"Reading a policy.zip needs torch, of the rl extra (pip install -e '.[rl]' in the "
            f"turnbudget checkout): {exc}. A policy's zoo format plays without it",
            name="torch",
        ) from exc
    return torch


def zip_weights(path: Path, member: str = _WEIGHTS_MEMBER) -> Any:
    """``member`` of an SB3 model zip (``policy.pth``, ``policy.optimizer.pth``) read as
    weights only: tensors and plain values, never an unpickled object (ValueError else), and
    no more numbers than `_MAX_WEIGHTS_BYTES` hold."""
    torch = _torch()
    _check_safe_torch(torch)
    try:
        with zipfile.ZipFile(path) as archive:
            if archive.getinfo(member).file_size > _MAX_WEIGHTS_BYTES:
                raise ValueError(f"{member} is over {_MAX_WEIGHTS_BYTES} bytes")
            raw = archive.read(member)
        # torch.save writes a zip whose records torch.load inflates to the sizes their headers
        # claim: a 600 kB file inflated to 1 GB of zeros (and a legacy, non-zip file
        # allocates what its pickle claims). SB3 writes torch's zip format only.
        with zipfile.ZipFile(io.BytesIO(raw)) as records:
            if sum(i.file_size for i in records.infolist()) > _MAX_WEIGHTS_BYTES:
                raise ValueError(f"{member}'s records are over {_MAX_WEIGHTS_BYTES} bytes")
    except Exception as exc:  # an untrusted file (a corrupted one was zlib.error, or
        # NotImplementedError for a made-up zip version, naming no file)
        raise ValueError(
            f"Cannot read {path}: expect an SB3 model zip with {member} in torch's zip "
            f"format ({exc})"
        ) from exc
    try:
        loaded = torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
    except Exception as exc:  # an untrusted file: whatever torch refuses, we refuse
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(
            f"Refusing {path}: its {member} is not plain weights "
            f"(torch.load(weights_only=True): {reason})"
        ) from exc
    # Tensors may view their storage with stride 0 or share one: a 130 kB file held a layer
    # of 10**6 x 118 numbers, which playing it copied into 2.5 GB (a bigger one, past memory).
    held, stack, seen = 0, [loaded], set()
    while stack:
        item = stack.pop()
        if id(item) in seen:  # (a pickle may nest a list in itself, or one list many times)
            continue
        seen.add(id(item))
        if isinstance(item, torch.Tensor):
            held += item.numel() * item.element_size()
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    if held > _MAX_WEIGHTS_BYTES:
        raise ValueError(
            f"Refusing {path}: the tensors of its {member} hold {held:,} bytes of numbers, "
            f"over {_MAX_WEIGHTS_BYTES:,}"
        )
    return loaded


def policy_tensors(path: Path) -> dict[str, Any]:
    """The policy's state dict from an SB3 zip (`zip_weights`): names to dense CPU tensors of
    finite numbers, else ValueError (a sparse or a meta tensor, a NaN weight)."""
    torch = _torch()
    state = zip_weights(path)
    floats = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
    if not isinstance(state, Mapping) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()
    ):
        raise ValueError(f"Refusing {path}: expect {_WEIGHTS_MEMBER} to map names to tensors")
    for name, tensor in state.items():
        if tensor.layout is not torch.strided or tensor.device.type != "cpu":
            raise ValueError(f"Refusing {path}: {name} is not a dense tensor of numbers")
        # (float8 and float4 weights stopped the load with NotImplementedError: no isfinite)
        if tensor.dtype not in floats or not bool(torch.isfinite(tensor).all()):
            raise ValueError(
                f"Refusing {path}: {name} holds weights that are not finite floats "
                f"(float16, bfloat16, float32 or float64; got {tensor.dtype})"
            )
    return dict(state)


def _weights(path: Path) -> dict[str, np.ndarray]:
    """The policy's tensors from an SB3 zip, read as weights only (never unpickling objects)."""
    torch = _torch()
    tensors = policy_tensors(path)
    _check_numbers(path, sum(t.numel() for t in tensors.values()))
    return {k: v.detach().to(torch.float64).numpy() for k, v in tensors.items()}


def _check_numbers(path: Path, count: int) -> None:
    """A ValueError when the weights hold more numbers than `_MAX_WEIGHTS_BYTES` holds as
    float64, which they are read as: the stored size is checked, but 1 GiB of float16 zeros
    (a 1 MB file, compressed) became 4 GiB of float64 before any shape was read (5.8 GB at
    its peak, 29 s)."""
    if count * 8 > _MAX_WEIGHTS_BYTES:
        raise ValueError(
            f"Refusing {path}: its weights hold {count:,} numbers, over the "
            f"{_MAX_WEIGHTS_BYTES // 8:,} a policy may hold ({_MAX_WEIGHTS_BYTES:,} bytes as float64)"
        )


def _npz_weights(path: Path) -> dict[str, np.ndarray]:
    """The arrays of a zoo ``weights.npz``: float arrays only, never unpickling objects."""
    try:
        with zipfile.ZipFile(path) as archive:
            if sum(i.file_size for i in archive.infolist()) > _MAX_WEIGHTS_BYTES:
                raise ValueError(f"its arrays are over {_MAX_WEIGHTS_BYTES} bytes")
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except Exception as exc:  # an untrusted file: whatever NumPy or zipfile refuses, we refuse
        # (MemoryError: a header's shape of 2**40 floats in a small file; zlib.error and
        # tokenize.TokenError: corrupted bytes, which named no file)
        raise ValueError(
            f"Refusing {path}: expect a NumPy .npz of float arrays, read with "
            f"np.load(allow_pickle=False) ({exc})"
        ) from exc
    weights = {}
    for name, array in arrays.items():
        kind = f"dtype {array.dtype}" if isinstance(array, np.ndarray) else "no .npy array"
        if not isinstance(array, np.ndarray) or array.dtype.kind != "f":
            raise ValueError(f"Refusing {path}: expect float arrays, got {name!r} of {kind}")
    _check_numbers(path, sum(array.size for array in arrays.values()))
    for name, array in arrays.items():
        with np.errstate(over="ignore"):  # (a float128 of 1e400 is finite until it is played)
            weights[name] = array.astype(np.float64)
        if not np.isfinite(weights[name]).all():
            raise ValueError(f"Refusing {path}: {name!r} holds weights that are not finite")
    return weights


def _feature_size(encoding: Mapping[str, Any]) -> int:
    """The length of the feature vector the encoding builds (what the network takes)."""
    spec = encoding["text_features"]
    blocks = 1 + bool(spec["include_goal"]) + bool(spec["include_admissible"])
    encoder = FeatureEncoder(
        encoding["max_actions"], encoding["history"], encoding["command_dim"], encoding["budget"]
    )
    return int(spec["dim"]) * blocks + encoder.size()


def _network(
    weights: Mapping[str, np.ndarray], encoding: Mapping[str, Any], source: Path
) -> Layers:
    """The actor's layers as ``(weight, bias, activation)``: SB3's ``MlpPolicy`` actor
    (``Linear``, activation, ..., then the ``action_net`` head), from its tensors' shapes
    (``source``: the weights' file, for the messages)."""
    where = source.parent
    activation = encoding.get("activation", _DEFAULT_ACTIVATION)
    if not isinstance(activation, str) or activation not in _ACTIVATIONS:
        raise ValueError(
            f"Expect `activation` in {where / ENCODING_FILE} to be one of "
            f"{sorted(_ACTIVATIONS)}, got {activation!r}"
        )
    indices = {k[len(_HIDDEN) :].partition(".")[0] for k in weights if k.startswith(_HIDDEN)}
    # (isascii: int() refused a layer named "²", which isdigit() takes, naming no file)
    hidden = sorted(int(i) for i in indices if i.isascii() and i.isdigit())
    names = [f"{_HIDDEN}{i}." for i in hidden] + [_HEAD]
    expected = {n + p for n in names for p in ("weight", "bias")}
    unexpected = sorted(k for k in weights if k not in expected and not k.startswith(_CRITIC))
    if unexpected or not expected <= weights.keys() or hidden != list(range(0, 2 * len(hidden), 2)):
        raise ValueError(
            f"PolicyAgent plays MlpPolicy models (Linear layers, each hidden one followed by "
            f"an activation); {source} has the parameters {sorted(weights)}"
        )
    try:
        size = _feature_size(encoding)
    except (KeyError, TypeError, ValueError, OverflowError) as exc:  # ("dim": Infinity)
        raise ValueError(f"{where / ENCODING_FILE} is not a feature encoding: {exc!r}") from exc
    layers: Layers = []
    for name in names:
        weight, bias = weights[name + "weight"], weights[name + "bias"]
        if weight.ndim != 2 or weight.shape[1] != size or bias.shape != (weight.shape[0],):
            raise ValueError(
                f"{name}weight in {source} has shape {weight.shape} (bias "
                f"{bias.shape}): expect (n, {size}) after {ENCODING_FILE}'s features"
            )
        size = weight.shape[0]
        layers.append((weight.T.copy(), bias.copy(), activation if name != _HEAD else "Identity"))
    if size != int(encoding["max_actions"]):
        raise ValueError(
            f"{source} scores {size} actions; {ENCODING_FILE} says "
            f"max_actions={encoding['max_actions']}"
        )
    return layers


def _check_path(value: Any, name: str) -> str | Path:
    """``value`` if it is a path (a str or os.PathLike), else a TypeError naming ``name``
    (None reached `pathlib` and failed in its words, naming no argument)."""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(
            f"Expect `{name}` to be a policy directory (a str or a path), got {brief(value)}"
        )
    return value


def resolve_policy(path: str | Path) -> Path:
    """The directory of a saved policy: ``zoo/<family>/<arm>/seed<k>`` names one the package
    ships (`ZOO`); anything else is a path (a directory, its ``policy.zip`` or ``weights.npz``).

    Example:
        >>> resolve_policy("zoo/maze-easy/budgetmix/seed3") == ZOO / "maze-easy/budgetmix/seed3"
        True
    """
    text = str(path)
    if text.startswith(_ZOO_PREFIX):
        name = text[len(_ZOO_PREFIX) :].strip("/")
        parts = name.split("/")
        if not name or any(p in ("", ".", "..") for p in parts):
            raise ValueError(f"Expect `zoo/<family>/<arm>/seed<k>`, got {text!r}")
        return ZOO.joinpath(*parts)
    root = Path(path)
    return root.parent if _is_file(root) and root.name in (_POLICY_FILE, WEIGHTS_FILE) else root


def _same_path(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one directory (False where the system cannot say)."""
    try:
        return a.resolve() == b.resolve()
    except (OSError, RuntimeError, ValueError):
        return False


def _is_file(path: Path) -> bool:
    """Whether ``path`` is a file; False where the system cannot look (a name past its length
    limit was an OSError that repeated the whole name, naming no policy)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def _read_weights(root: Path) -> tuple[dict[str, np.ndarray], Path]:
    """The weights of a policy directory and the file they came from: ``weights.npz`` (the
    zoo format) when present, else ``policy.zip``."""
    if _is_file(root / WEIGHTS_FILE):
        return _npz_weights(root / WEIGHTS_FILE), root / WEIGHTS_FILE
    return _weights(root / _POLICY_FILE), root / _POLICY_FILE


def load_policy(path: str | Path) -> tuple[dict[str, Any], Layers]:
    """``(encoding, layers)`` of a saved policy (see the module docstring and `resolve_policy`).

    Raises:
        FileNotFoundError: ``path`` is not a saved policy directory.
        ValueError: a file holds anything but plain weights and JSON, or they do not fit.
    """
    root = resolve_policy(path)
    has_weights = _is_file(root / WEIGHTS_FILE) or _is_file(root / _POLICY_FILE)
    if not _is_file(root / ENCODING_FILE) or not has_weights:
        known = f"; the zoo has {', '.join(zoo_policies()) or 'none'}"
        raise FileNotFoundError(
            f"{brief(str(path), PATH_CHARS)} is not a saved policy: expect a directory with "
            f"{ENCODING_FILE} and {WEIGHTS_FILE} (the zoo format) or {_POLICY_FILE} (written by "
            "`turnbudget train`)" + (known if str(path).startswith(_ZOO_PREFIX) else "")
        )
    encoding = read_encoding(root)
    weights, source = _read_weights(root)
    return encoding, _network(weights, encoding, source)


def export_policy(
    source: str | Path,
    destination: str | Path,
    card: Mapping[str, Any] | None = None,
    *,
    overwrite: bool = False,
) -> Path:
    """Write the saved policy ``source`` in the zoo format into ``destination``.

    ``weights.npz`` holds the actor's arrays only (the value function is not
    needed to act) as float32, the precision the SB3 zip stores, so the
    exported policy plays exactly the actions of its source; ``encoding.json``
    is copied; ``card``, if given, becomes ``card.json`` (how it was trained), else the
    source's own ``card.json``, if it has one, is carried over (it describes these weights).
    Reading a ``policy.zip`` needs torch; the result does not.

    A ``destination`` that holds a policy already (any of its three files) is
    refused unless ``overwrite``; then the policy is replaced whole: a card it
    had is removed when neither ``card`` nor the source gives one (it described other
    weights). Exported onto itself, a policy keeps its card. A run's directory (a training
    run's ``policy.zip``, ``config.json``, ``progress.csv`` or ``checkpoints``; an evaluation's
    ``run.json`` or ``episodes.jsonl``) is refused as a ``destination`` unless it is the source.

    Returns:
        ``destination``.
    """
    # Checked before anything is read or written: "" would mean the working directory, and a
    # card that is not JSON would fail after the weights were written.
    if not isinstance(destination, (str, Path)) or not str(destination).strip():
        raise ValueError(f"Expect `destination` to be a non-empty path, got {brief(destination)}")
    overwrite = check_bool(overwrite, "overwrite")
    if Path(destination).exists() and not Path(destination).is_dir():  # ("File exists")
        raise ValueError(
            f"Expect `destination` to be a directory, but {str(destination)!r} is an existing file"
        )
    root = resolve_policy(_check_path(source, "source"))
    # (overwrite replaced the export's files only: a run's policy.zip stayed, which `train
    # --init` loads, beside weights.npz, which is played, and its config and summary described
    # the run, not the policy exported; an evaluation's logs stayed beside a policy)
    run_files = [
        name
        for name in (_POLICY_FILE, *_RUN_FILES)
        if (Path(destination) / name).exists() or (Path(destination) / name).is_symlink()
    ]
    if run_files and not _same_path(Path(destination), root):
        what = "an evaluation run" if set(run_files) & set(EVALUATION_FILES) else "a training run"
        raise ValueError(
            f"{destination} holds {what} ({', '.join(run_files)}): export into another "
            f"directory, or remove the run first"
        )
    linked = [name for name in _POLICY_FILES if (Path(destination) / name).is_symlink()]
    if linked:  # (the writes went through a link, dangling or not: files outside destination)
        raise ValueError(
            f"{destination} holds symbolic links where the policy's files go "
            f"({', '.join(linked)}): the export would write through them; remove them first"
        )
    held = [name for name in _POLICY_FILES if (Path(destination) / name).exists()]
    if held and not overwrite:
        raise ValueError(
            f"{destination} holds a policy already ({', '.join(held)}): pass overwrite=True "
            f"(--overwrite) to replace it, or export into another directory"
        )
    card_text = None
    if card is not None:
        if not isinstance(card, Mapping):
            raise TypeError(
                f"Expect `card` to be a mapping (the card.json object), got {brief(card)}"
            )
        try:
            card_text = json.dumps(dict(card), indent=2, allow_nan=False) + "\n"
        except (TypeError, ValueError) as exc:
            raise ValueError(f"Expect `card` to hold JSON values only: {exc}") from None
        except RecursionError:  # (a card nested 100,000 deep)
            raise ValueError("Expect `card` to hold JSON values nested less deeply") from None
    encoding, _ = load_policy(root)  # checks that the weights make a network we play
    if card_text is None and _is_file(root / CARD_FILE):
        # (dropped, a zoo policy exported elsewhere lost how it was trained, and one exported
        # onto itself its own card)
        source_card = _json_file(root / CARD_FILE, "a policy card")
        if not isinstance(source_card, dict):
            raise ValueError(
                f"{root / CARD_FILE} is not a policy card: expect a JSON object, got "
                f"{brief(source_card)} (pass a card to replace it)"
            )
        try:
            card_text = json.dumps(source_card, indent=2, allow_nan=False) + "\n"
        except RecursionError:  # (parsed, but nested past what the encoder writes)
            raise ValueError(f"{root / CARD_FILE} is nested too deeply to copy") from None
    weights, _ = _read_weights(root)
    with np.errstate(over="ignore"):
        actor = {
            name: array.astype(np.float32)
            for name, array in sorted(weights.items())
            if not name.startswith(_CRITIC)
        }
    for name, array in actor.items():  # (checked before anything is written)
        if not np.isfinite(array).all():
            raise ValueError(
                f"Refusing to export {root}: {name!r} holds weights past float32's range "
                f"(the precision the zoo format stores), which would play as inf"
            )
    out = Path(destination)
    make_folders(out)  # (removed again if it fails)
    np.savez_compressed(out / WEIGHTS_FILE, **actor)
    write_encoding(out, encoding)
    if card_text is not None:
        (out / CARD_FILE).write_text(card_text)
    else:
        (out / CARD_FILE).unlink(missing_ok=True)
    return out


def zoo_policies() -> list[str]:
    """The specs of the policies the package ships, ``zoo/<family>/<arm>/seed<k>``, sorted."""
    if not ZOO.is_dir():
        return []
    found = (p.parent.relative_to(ZOO).as_posix() for p in ZOO.glob(f"*/*/*/{WEIGHTS_FILE}"))
    return sorted(_ZOO_PREFIX + name for name in found)


def zoo_card(spec: str) -> dict[str, Any]:
    """The ``card.json`` of a zoo policy (``zoo/<family>/<arm>/seed<k>``): how it was trained."""
    path = resolve_policy(spec) / CARD_FILE
    if not _is_file(path):
        raise FileNotFoundError(
            f"{brief(spec, PATH_CHARS)} has no {CARD_FILE}: expect one of {zoo_policies()}"
        )
    card = _json_file(path, "a policy card")
    if not isinstance(card, dict):
        raise ValueError(f"{path} is not a policy card: expect a JSON object, got {brief(card)}")
    return card


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
    encoding = _json_file(path, "a feature encoding", nan=True)
    version = encoding.get("format") if isinstance(encoding, dict) else None
    if version != ENCODING_FORMAT:
        raise ValueError(f"Unknown encoding format {version!r} in {Path(directory)}")
    env_id = encoding.get("env_id")
    if not isinstance(env_id, str) or not env_id.strip():  # (the agent's `env_id`)
        raise ValueError(
            f"Expect `env_id` in {path} to be the id the policy was trained on, got {brief(env_id)}"
        )
    _check_text_settings(encoding, path)
    return encoding


def _json_file(path: Path, what: str, nan: bool = False) -> Any:
    """The JSON value of a policy's small file (``what`` it should be, for the messages);
    NaN and Infinity only with ``nan`` (an encoding's fields are checked by name later).

    Raises:
        ValueError: the file is not a regular file (a FIFO, a device), is over
            `_MAX_JSON_BYTES`, not JSON, or nested past the interpreter.
    """
    # (a FIFO blocked for ever, /dev/zero was read until the memory ran out: `--init` reads
    # the encoding of a directory that need hold only a policy.zip)
    with open_regular(path) as f:
        data = f.read(_MAX_JSON_BYTES + 1)
    if len(data) > _MAX_JSON_BYTES:  # (a 2 GB file was read whole)
        raise ValueError(f"{path} is over {_MAX_JSON_BYTES:,} bytes: not {what}")
    try:
        return json.loads(data.decode("utf-8"), parse_constant=None if nan else _not_json)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ValueError(f"{path} is not JSON: {type(exc).__name__}") from exc


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON number")


def _check_text_settings(encoding: dict[str, Any], path: Path) -> None:
    """The fields an agent reads at every turn, checked when the policy loads (they failed, or
    ran for ever, in ``act``): the text features' settings and the reveal's. (A ``dim`` of 0
    with weights sized to fit loaded, then every turn divided by zero; ``"false"`` read as
    true.)"""
    spec = encoding.get("text_features")
    spec = spec if isinstance(spec, Mapping) else {}
    for name, most in (("ngrams", MAX_NGRAMS), ("dim", MAX_DIM)):
        value = spec.get(name)
        if not is_int(value) or not 1 <= value <= most:
            raise ValueError(
                f"Expect `text_features.{name}` in {path} to be an int from 1 to {most:,}, "
                f"got {brief(value)}"
            )
    for name in ("include_goal", "include_admissible"):
        if not isinstance(spec.get(name), bool):
            raise ValueError(
                f"Expect `text_features.{name}` in {path} to be true or false, "
                f"got {brief(spec.get(name))}"
            )
    reveal = encoding.get("reveal")
    if reveal is None:
        return
    try:
        if not isinstance(reveal, Mapping):
            raise ValueError("not a mapping")
        mode, final_turns, _ = check_reveal(
            reveal.get("mode"), reveal.get("final_turns"), reveal.get("template")
        )
    except ValueError as exc:
        raise ValueError(
            f"Expect `reveal` in {path} to be None or RevealBudget's settings "
            f"(mode, final_turns, template): {exc}"
        ) from None
    # In the one spelling training writes, which the agent reads: "final=2" and "FINAL", which
    # RevealBudget takes, were read as "always", and the budget shown at every turn; and
    # "never" as training writes it, None (read as a mode, the agent saw the budget, its
    # template appended to every observation, and declared itself budget-aware).
    if mode == "never":
        encoding["reveal"] = None
    else:
        encoding["reveal"] = {**reveal, "mode": mode, "final_turns": final_turns}


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
    training, so both ways of evaluating give the same features. The budget's
    numbers enter the features only on the turns its text shows (trained with
    ``reveal="final=k"``: the last k), as in training.

    Args:
        path: A saved policy directory (or its ``policy.zip`` or ``weights.npz``), or
            ``zoo/<family>/<arm>/seed<k>``, a policy the package ships.
        deterministic: Play the most likely command instead of sampling.

    Example:
        >>> agent = PolicyAgent("zoo/maze-easy/budgetmix/seed0")
        >>> agent.name, agent.budget_aware
        ('policy:zoo/maze-easy/budgetmix/seed0', False)

        or ``turnbudget eval --env turnbudget/Maze-Easy-v0 --agent policy:runs/mix``
    """

    needs_oracle = False

    def __init__(self, path: str | Path, deterministic: bool = False):
        self.path = str(_check_path(path, "path"))
        self.deterministic = check_bool(deterministic, "deterministic")
        self.encoding, self._layers = load_policy(path)
        # (budget features, or the budget in the text: a policy trained with the budget shown
        # but no budget features was played budget-blind, without training's budget text)
        self.budget_aware = bool(self.encoding["budget"]) or self.encoding.get("reveal") is not None
        #: The id the policy was trained on (``encoding.json``): the features it plays from
        #: mean what they meant in training only on that game.
        self.env_id: str = self.encoding["env_id"]
        self._rng = np.random.default_rng(0)
        self._encoder: FeatureEncoder | None = None
        self._cache: dict[str, int] = {}
        self._base_cache: dict[tuple[str, tuple[str, ...]], np.ndarray] = {}
        self._cache_goal: str | None = None
        self._goal: str | None = None
        self._pending: str | None = None
        self._digest: str | None = None

    @property
    def name(self) -> str:
        short = self.path if self.path.startswith(_ZOO_PREFIX) else Path(self.path).name
        return f"policy:{short}" + (":det" if self.deterministic else "")

    def __repr__(self) -> str:
        # (the weights' digest: a run records this repr, and a policy retrained in place was
        # the same configuration, so a rerun resumed the old weights' episodes as the new's)
        return (
            f"PolicyAgent({self.path!r}, deterministic={self.deterministic}, "
            f"weights={self.digest!r})"
        )

    @property
    def digest(self) -> str:
        """The start of a SHA-256 of what the policy plays: its encoding and its network."""
        if self._digest is None:
            h = hashlib.sha256(json.dumps(self.encoding, sort_keys=True).encode())
            for weight, bias, activation in self._layers:
                for array in (weight, bias):
                    h.update(f"{array.dtype.str}{array.shape}".encode())
                    h.update(np.ascontiguousarray(array).tobytes())
                h.update(activation.encode())
            self._digest = h.hexdigest()[:16]
        return self._digest

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_encoder": None, "_cache": {}, "_base_cache": {},
                "_cache_goal": None}  # fmt: skip

    def _new_encoder(self) -> FeatureEncoder:
        e = self.encoding
        return FeatureEncoder(e["max_actions"], e["history"], e["command_dim"], e["budget"])

    # -- the protocol ---------------------------------------------------------

    def reset(self, seed: int) -> None:
        self._rng = np.random.default_rng(check_seed(seed))
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
        if not np.isfinite(logits).all():  # (NaN played the first command every turn)
            raise ValueError(
                f"{self.name}'s logits are not finite numbers ({logits.tolist()}): its weights "
                f"overflow on this observation"
            )
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
        admissible = _admissible(observation, info)  # (checked before the window moves)
        shown = self._budget_shown(info)  # (the numbers on the turns the text shows them)
        left, budget = (
            (_turns(info, "turns_left"), _turns(info, "turn_budget")) if shown else (None, None)
        )
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
        commands = sorted(admissible)[: self.encoding["max_actions"]]
        text = self._with_budget(observation, info)
        base = self._base(text, admissible)
        extra = encoder.encode(text, commands, left, budget)
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

    def _budget_shown(self, info: Mapping[str, Any]) -> bool:
        """Whether the budget shows this turn: as the env's `RevealBudget` says
        (``budget_visible``), else (evaluated with ``reveal=None``) by training's rule."""
        visible = info.get("budget_visible")
        if visible is not None:
            return visible is True
        reveal = self.encoding.get("reveal")
        left = _turns(info, "turns_left") if reveal is not None else None
        if left is None:
            return False
        return reveal["mode"] != "final" or left <= int(reveal["final_turns"])

    def _with_budget(self, observation: str, info: Mapping[str, Any]) -> str:
        """``observation`` with the budget text training's `RevealBudget` showed, where the env
        does not show it itself."""
        if info.get("budget_visible") is not None or not self._budget_shown(info):
            return observation
        return observation + self.encoding["reveal"]["template"].format(
            turns_left=int(info["turns_left"]), turns_used=info.get("turns_used"),
            turn_budget=info.get("turn_budget"),
        )  # fmt: skip

    def logits(self, features: np.ndarray) -> np.ndarray:
        """The policy's unmasked logits for one feature vector."""
        x = np.asarray(features, dtype=np.float64)
        for weight, bias, activation in self._layers:
            x = _ACTIVATIONS[activation](x @ weight + bias)
        return x


def _admissible(observation: Any, info: Any) -> list[str]:
    """The admissible commands of a turn, once ``observation`` and ``info`` are checked to be
    what an env hands out (`turnbudget.agents.base.admissible_commands`)."""
    if not isinstance(observation, str):
        raise TypeError(
            f"Expect `observation` to be the env's text, a str, got {brief(observation)}"
        )
    return admissible_commands(info)


def _turns(info: Mapping[str, Any], key: str) -> int | None:
    """``info[key]``, a budget key (``turns_left``, ``turn_budget``), if it is a count of turns;
    None where absent. ("x" and None stopped the turn in int()'s words, inf with an
    OverflowError, none naming the key.)"""
    value = info.get(key)
    if value is None:
        return None
    if not is_int(value) or not 0 <= value <= MAX_TURN_BUDGET:  # (10**400: no float holds it)
        error = TypeError if not is_int(value) else ValueError
        raise error(
            f"Expect info[{key!r}] to be a number of turns, an int from 0 to "
            f"{MAX_TURN_BUDGET:,}, got {brief(value)}"
        )
    return int(value)


def make_policy_agent(arg: str) -> PolicyAgent:
    """The ``policy:PATH[:det]`` agent spec: a saved policy, sampled (or its argmax with ``:det``);
    ``policy:zoo/<family>/<arm>/seed<k>`` plays one the package ships (`zoo_policies`).

    Example:
        ``turnbudget eval --env turnbudget/Maze-Easy-v0 --agent policy:runs/mix:det``
    """
    text = str(arg).strip()
    if not text:
        raise ValueError("Expect `policy:PATH[:det]` with the directory of a saved policy")
    deterministic = text.endswith(":det")
    return PolicyAgent(text[: -len(":det")] if deterministic else text, deterministic)
