"""Loading a saved policy reads weights only: a pickle planted in its files never runs.

The saved policies here are built by hand (torch only), as an attacker would: an SB3-shaped
``policy.zip`` whose ``data`` holds a cloudpickled payload, or whose ``policy.pth`` does.
"""

from __future__ import annotations

import base64
import io
import itertools
import json
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.rl
torch = pytest.importorskip("torch")

import turnbudget  # noqa: E402
from turnbudget.agents import make_agent  # noqa: E402
from turnbudget.agents.policy import PolicyAgent, _feature_size  # noqa: E402

ENCODING = {
    "format": 1,
    "env_id": "turnbudget/Maze-Easy-v0",
    "text_features": {"dim": 16, "ngrams": 2, "include_goal": True, "include_admissible": True},
    "max_actions": 6,
    "history": 2,
    "command_dim": 4,
    "budget": False,
    "reveal": None,
}


class _Touch:
    """Unpickling it creates ``marker`` (by ``pathlib.Path.touch``: no shell, no os.system)."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


def _state(encoding: dict, hidden=(12, 10)) -> dict:
    """An MlpPolicy's state dict (actor and critic), random weights."""
    generator = torch.Generator().manual_seed(0)
    sizes = [_feature_size(encoding), *hidden]
    state = {}
    for net in ("policy_net", "value_net"):
        for i, (n_in, n_out) in enumerate(itertools.pairwise(sizes)):
            state[f"mlp_extractor.{net}.{2 * i}.weight"] = torch.randn(
                n_out, n_in, generator=generator
            )
            state[f"mlp_extractor.{net}.{2 * i}.bias"] = torch.randn(n_out, generator=generator)
    state["action_net.weight"] = torch.randn(
        encoding["max_actions"], sizes[-1], generator=generator
    )
    state["action_net.bias"] = torch.randn(encoding["max_actions"], generator=generator)
    state["value_net.weight"] = torch.randn(1, sizes[-1], generator=generator)
    state["value_net.bias"] = torch.randn(1, generator=generator)
    return state


def _save(root: Path, state: dict, data: dict, encoding: dict = ENCODING) -> Path:
    """A policy directory shaped as `turnbudget.train` writes it."""
    root.mkdir()
    weights = io.BytesIO()
    torch.save(state, weights)
    with zipfile.ZipFile(root / "policy.zip", "w") as archive:
        archive.writestr("data", json.dumps(data))
        archive.writestr("policy.pth", weights.getvalue())
        archive.writestr("_stable_baselines3_version", "2.7.0")
    (root / "encoding.json").write_text(json.dumps(encoding))
    return root


def _pickled(obj: object) -> dict:
    """How SB3 stores a Python object in ``data``: cloudpickle, base64."""
    return {
        ":type:": "<class 'dict'>",
        ":serialized:": base64.b64encode(pickle.dumps(obj)).decode(),
    }


def _forward(state: dict, x: np.ndarray, activation) -> np.ndarray:
    w = {k: v.double().numpy() for k, v in state.items()}
    h = activation(
        w["mlp_extractor.policy_net.0.weight"] @ x + w["mlp_extractor.policy_net.0.bias"]
    )
    h = activation(
        w["mlp_extractor.policy_net.2.weight"] @ h + w["mlp_extractor.policy_net.2.bias"]
    )
    return w["action_net.weight"] @ h + w["action_net.bias"]


def test_a_pickle_in_the_zips_data_never_runs_and_the_weights_load(tmp_path):
    marker = tmp_path / "pwned"
    payload = _Touch(marker)
    data = {key: _pickled(payload) for key in ("policy_class", "policy_kwargs", "observation_space",
                                                "action_space", "lr_schedule", "clip_range")}  # fmt: skip
    state = _state(ENCODING)
    root = _save(tmp_path / "saved", state, data)
    pickle.loads(pickle.dumps(payload))  # the payload works: unpickled, it creates the marker
    assert marker.exists()
    marker.unlink()

    try:
        agent = make_agent(f"policy:{root}")  # no "activation" in encoding.json: SB3's Tanh
    finally:  # whatever loading did, it must not have run the payload
        assert not marker.exists(), "loading the policy unpickled its zip's data"
    x = np.random.default_rng(0).normal(size=_feature_size(ENCODING))
    np.testing.assert_allclose(agent.logits(x), _forward(state, x, np.tanh), rtol=1e-12)
    env = turnbudget.make("turnbudget/Maze-Easy-v0", turn_budget=5)
    obs, info = env.reset(seed=0)
    agent.reset(0)
    assert agent.act(obs, info) in info["admissible_actions"]
    assert not marker.exists()

    relu = _save(tmp_path / "relu", state, data, {**ENCODING, "activation": "ReLU"})
    relu_logits = PolicyAgent(relu).logits(x)
    np.testing.assert_allclose(relu_logits, _forward(state, x, lambda v: np.maximum(v, 0)))
    assert not marker.exists()


def test_weights_that_hold_objects_are_refused(tmp_path):
    marker = tmp_path / "pwned"
    state = {**_state(ENCODING), "action_net.bias": _Touch(marker)}
    root = _save(tmp_path / "saved", state, {})
    with pytest.raises(ValueError, match=r"Refusing .*policy\.zip: its policy\.pth is not plain"):
        PolicyAgent(root)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda s, e: ({**s, "features_extractor.cnn.0.weight": torch.zeros(2, 2)}, e),
            "MlpPolicy",
        ),
        (lambda s, e: ({k: v for k, v in s.items() if k != "action_net.bias"}, e), "MlpPolicy"),
        (
            lambda s, e: (
                {**s, "action_net.weight": torch.zeros(7, 10), "action_net.bias": torch.zeros(7)},
                e,
            ),
            "scores 7 actions.*max_actions=6",
        ),
        (lambda s, e: (s, {**e, "command_dim": 5}), "shape"),
        (lambda s, e: (s, {**e, "activation": "os.system"}), "activation"),
        (lambda s, e: (s, {**e, "activation": ["Tanh"]}), "activation"),
        (
            lambda s, e: (s, {k: v for k, v in e.items() if k != "history"}),
            "not a feature encoding",
        ),
    ],
    ids=[
        "other-extractor",
        "missing-head",
        "actions",
        "features",
        "activation",
        "activation-list",
        "encoding",
    ],
)
def test_weights_that_do_not_fit_say_why(tmp_path, change, message):
    state, encoding = change(_state(ENCODING), dict(ENCODING))
    root = _save(tmp_path / "saved", state, {}, encoding)
    with pytest.raises(ValueError, match=message):
        PolicyAgent(root)


def test_a_file_that_is_not_a_zip_is_refused(tmp_path):
    root = tmp_path / "saved"
    root.mkdir()
    (root / "policy.zip").write_bytes(pickle.dumps(_Touch(tmp_path / "pwned")))
    (root / "encoding.json").write_text(json.dumps(ENCODING))
    with pytest.raises(ValueError, match="expect an SB3 model zip"):
        PolicyAgent(root)
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("how", ["deflate", "version"])
def test_a_corrupted_zip_is_refused_naming_it(tmp_path, how):
    """A policy.zip whose policy.pth no longer inflates was zlib.error, and one with a zip
    version past zipfile's NotImplementedError, neither naming the file."""
    from _support import broken_zip

    root = _save(tmp_path / "saved", _state(ENCODING), {})
    weights = io.BytesIO()
    torch.save(_state(ENCODING), weights)
    (root / "policy.zip").write_bytes(broken_zip("policy.pth", weights.getvalue(), how))
    with pytest.raises(
        ValueError, match=r"Cannot read .*saved/policy\.zip: expect an SB3 model zip"
    ):
        PolicyAgent(root)


def test_a_torch_whose_weights_only_load_can_run_code_is_refused(tmp_path, monkeypatch):
    """torch.load(weights_only=True) ran code from a crafted file before torch 2.6
    (CVE-2025-32434) and could corrupt memory before 2.10 (CVE-2026-24747): the rl extra
    allowed torch 2.3, and a policy someone sent was read with it."""
    from torch.torch_version import TorchVersion

    root = _save(tmp_path / "saved", _state(ENCODING), {})
    monkeypatch.setattr(torch, "__version__", TorchVersion("2.5.1"))
    monkeypatch.setattr(torch, "load", lambda *a, **k: pytest.fail("torch.load was called"))
    with pytest.raises(ImportError, match=r"torch >= 2\.10, got 2\.5\.1.*CVE-2025-32434"):
        PolicyAgent(root)


def test_tensors_holding_more_numbers_than_allowed_are_refused_before_they_are_read(
    tmp_path, monkeypatch
):
    """A layer that views one stored number with stride 0 (a file of a few kB) was copied
    whole: 10**6 x 118 numbers took 2.5 GB to load, and a larger one ran out of memory."""
    import turnbudget.agents.policy as policy

    monkeypatch.setattr(policy, "_MAX_WEIGHTS_BYTES", 1 << 20)
    width = (1 << 20) // (4 * _feature_size(ENCODING)) + 1  # just over 1 MiB of float32
    state = _state(ENCODING, hidden=(width,))
    state["mlp_extractor.policy_net.0.weight"] = torch.zeros(1).expand(
        width, _feature_size(ENCODING)
    )
    state = {k: v for k, v in state.items() if "value_net" not in k}
    root = _save(tmp_path / "saved", state, {})
    assert (root / "policy.zip").stat().st_size < 1 << 20
    with pytest.raises(ValueError, match=r"policy\.pth hold [\d,]+ bytes of numbers, over 1,048"):
        PolicyAgent(root)


def test_records_that_inflate_past_the_limit_are_refused_before_torch_reads_them(
    tmp_path, monkeypatch
):
    """torch.load inflates the records of policy.pth (itself a zip) to the sizes their headers
    claim: a 600 kB policy.zip became 1 GB of zeros, past the limit on policy.pth's size."""
    import turnbudget.agents.policy as policy

    monkeypatch.setattr(policy, "_MAX_WEIGHTS_BYTES", 1 << 20)
    state = {**_state(ENCODING), "value_net.weight": torch.zeros(1, 1 << 19)}  # 2 MiB of zeros
    weights = io.BytesIO()
    torch.save(state, weights)
    deflated = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(weights.getvalue())) as saved,
        zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as archive,
    ):
        for name in saved.namelist():
            archive.writestr(name, saved.read(name))
    root = _save(tmp_path / "saved", state, {})
    with zipfile.ZipFile(root / "policy.zip", "w") as archive:
        archive.writestr("policy.pth", deflated.getvalue())
    assert (root / "policy.zip").stat().st_size < 1 << 19
    with pytest.raises(ValueError, match=r"policy\.pth's records are over 1048576 bytes"):
        PolicyAgent(root)


def test_weights_in_torchs_legacy_format_are_refused(tmp_path):
    """The pre-zip format allocates the storage sizes its pickle claims; SB3 never writes it."""
    root = _save(tmp_path / "saved", _state(ENCODING), {})
    weights = io.BytesIO()
    torch.save(_state(ENCODING), weights, _use_new_zipfile_serialization=False)
    with zipfile.ZipFile(root / "policy.zip", "w") as archive:
        archive.writestr("policy.pth", weights.getvalue())
    with pytest.raises(ValueError, match=r"policy\.pth in torch's zip format"):
        PolicyAgent(root)


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float4_e2m1fn_x2"])
def test_weights_of_a_float_torch_cannot_check_are_refused_by_name(tmp_path, dtype):
    """float8 and float4 weights stopped the load with NotImplementedError ("isfinite" not
    implemented), naming no file."""
    if not hasattr(torch, dtype):
        pytest.skip(f"this torch has no {dtype}")
    state = _state(ENCODING)
    state["action_net.bias"] = torch.zeros(6, dtype=torch.uint8).view(getattr(torch, dtype))
    root = _save(tmp_path / "saved", state, {})
    with pytest.raises(ValueError, match=rf"action_net\.bias holds weights .*got torch\.{dtype}"):
        PolicyAgent(root)
