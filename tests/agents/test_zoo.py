"""The zoo: the trained policies the package ships play from NumPy arrays, without torch.

The default suite: nothing here needs the rl extra. That a zoo policy plays the
actions of the SB3 policy it was exported from is in test_policy_agent.py (rl).
"""

from __future__ import annotations

import functools
import io
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import turnbudget
from turnbudget.agents import make_agent
from turnbudget.agents.policy import (
    CARD_FILE,
    ENCODING_FILE,
    WEIGHTS_FILE,
    ZOO,
    PolicyAgent,
    export_policy,
    resolve_policy,
    zoo_card,
    zoo_policies,
)
from turnbudget.cli import main as cli_main

ARMS = ("base", "fixed-tight", "fixed-generous", "budgetmix")
SEEDS = 5
MAX_POLICY_BYTES = 200_000  # one policy's weights.npz (64 x 64 MLP, float32: ~120 KB)
MAX_ZOO_BYTES = 5_000_000  # the whole zoo
CARD_KEYS = {"env_id", "arm", "seed", "how", "steps", "budget", "budget_mix", "reveal",
             "command", "commit", "train_config"}  # fmt: skip
SOME = "zoo/maze-easy/budgetmix/seed3"
OTHER = "zoo/maze-easy/base/seed1"


def test_the_zoo_holds_every_arm_with_five_training_seeds():
    shipped = set(zoo_policies())
    expected = {f"zoo/maze-easy/{a}/seed{s}" for a in ARMS for s in range(SEEDS)}
    assert expected <= shipped, sorted(expected - shipped)


def test_zoo_files_are_small_and_plain_arrays():
    total = 0
    for path in ZOO.rglob("*"):
        if path.is_file():
            total += path.stat().st_size
    assert total <= MAX_ZOO_BYTES, f"the zoo is {total} bytes"
    for spec in zoo_policies():
        weights = resolve_policy(spec) / WEIGHTS_FILE
        assert weights.stat().st_size <= MAX_POLICY_BYTES, (spec, weights.stat().st_size)
        with np.load(weights, allow_pickle=False) as arrays:
            assert {arrays[name].dtype for name in arrays.files} == {np.dtype(np.float32)}
            assert not any("value" in name for name in arrays.files)  # the actor only


def test_every_zoo_policy_has_a_card_saying_how_it_was_trained():
    for spec in zoo_policies():
        card = zoo_card(spec)
        assert card.keys() >= CARD_KEYS, (spec, sorted(CARD_KEYS - card.keys()))
        family, arm, seed = spec.split("/")[1:]
        assert (card["arm"], f"seed{card['seed']}") == (arm, seed)
        assert card["env_id"].split("/")[-1].rsplit("-v", 1)[0].lower() == family
        assert card["reveal"] == "never" and not PolicyAgent(spec).budget_aware
        assert "benchmarks/train_zoo.py" in card["command"]
        trained = card["train_config"]
        if arm.startswith("fixed-"):  # (the cards said T = None: train_zoo read a renamed field)
            assert card["budget"] == trained["turn_budget"] and not card["budget_mix"]
            assert f"T = {trained['turn_budget']}," in card["how"]
        else:
            assert card["budget"] is None and card["budget_mix"] == trained["budget_mix"]


_NO_TORCH = """
import sys
sys.modules["torch"] = None  # `import torch` now raises ImportError
import turnbudget
from turnbudget.agents import make_agent
from turnbudget.agents.policy import zoo_policies

specs = zoo_policies()
assert specs, "no zoo policies"
env = turnbudget.make("turnbudget/Maze-Easy-v0")
wins = 0
for spec in specs:
    agent = make_agent("policy:" + spec)
    for task in range(3):
        obs, info = env.reset(seed=task)
        agent.reset(task)
        done = False
        while not done:
            obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
            done = terminated or truncated
        wins += info["won"]
assert sys.modules["torch"] is None
print(len(specs), wins)
"""


def test_zoo_policies_load_and_act_without_torch():
    proc = subprocess.run(
        [sys.executable, "-c", _NO_TORCH], capture_output=True, text=True, check=False, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    count, wins = map(int, proc.stdout.split())
    assert count == len(zoo_policies()) and wins > 0


def test_zoo_specs_resolve_through_the_agent_registry():
    agent = make_agent(f"policy:{SOME}")
    assert isinstance(agent, PolicyAgent)
    assert agent.name == f"policy:{SOME}"
    assert make_agent(f"policy:{SOME}:det").name == f"policy:{SOME}:det"
    assert resolve_policy(SOME) == ZOO / "maze-easy" / "budgetmix" / "seed3"


@pytest.mark.parametrize("spec", ["zoo/", "zoo/../agents", "zoo/maze-easy//seed0"])
def test_bad_zoo_names_are_refused(spec):
    with pytest.raises(ValueError, match="zoo/<family>/<arm>/seed<k>"):
        PolicyAgent(spec)


def test_an_unknown_zoo_policy_lists_the_zoo():
    with pytest.raises(FileNotFoundError, match=r"the zoo has .*maze-easy/base/seed0"):
        make_agent("policy:zoo/maze-easy/base/seed99")


def test_list_zoo_shows_every_policy(capsys):
    assert cli_main(["list", "--zoo"]) == 0
    out = capsys.readouterr().out
    for spec in zoo_policies():
        assert f"policy:{spec}" in out


def test_export_of_a_zoo_policy_is_the_same_policy(tmp_path):
    """export_policy reads either format; the copy plays exactly as the original."""
    copy = export_policy(SOME, tmp_path / "copy", card=zoo_card(SOME))
    assert json.loads((copy / CARD_FILE).read_text()) == zoo_card(SOME)
    a, b = PolicyAgent(SOME), PolicyAgent(copy)
    x = np.random.default_rng(0).normal(size=(8, a._layers[0][0].shape[0]))
    np.testing.assert_array_equal([a.logits(v) for v in x], [b.logits(v) for v in x])


@pytest.mark.parametrize(
    ("destination", "card", "error", "says"),
    [
        ("", None, ValueError, "non-empty path"),
        ("  ", None, ValueError, "non-empty path"),
        (None, None, ValueError, "non-empty path"),
        ("copy", ["arm"], TypeError, "mapping"),
        ("copy", {"when": object()}, ValueError, "JSON values only"),
        ("copy", {"score": float("nan")}, ValueError, "JSON values only"),
        # (a RecursionError out of json.dumps)
        ("copy", functools.reduce(lambda inner, _: {"a": inner}, range(100_000), {}), ValueError,
         "nested less deeply"),
    ],
)  # fmt: skip
def test_export_refuses_bad_arguments_before_writing(
    destination, card, error, says, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # ("" was the working directory)
    with pytest.raises(error, match=says):
        export_policy(SOME, destination, card=card)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("path", [None, 5, b"zoo/maze-easy/base/seed0", ["p"]])
def test_a_policy_path_that_is_no_path_is_a_type_error_naming_it(path, tmp_path):
    """pathlib's own TypeError ("expected str, bytes or os.PathLike object") named no argument."""
    with pytest.raises(TypeError, match=r"Expect `path` to be a policy directory"):
        PolicyAgent(path)
    with pytest.raises(TypeError, match=r"Expect `source` to be a policy directory"):
        export_policy(path, tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("overwrite", [False, True])
def test_an_export_never_writes_through_a_link_where_a_policy_file_goes(tmp_path, overwrite):
    """A (dangling) link named weights.npz or encoding.json in the destination was written
    through, without overwrite: the weights landed outside the destination."""
    destination, elsewhere = tmp_path / "p", tmp_path / "elsewhere"
    destination.mkdir()
    elsewhere.mkdir()
    (destination / WEIGHTS_FILE).symlink_to(elsewhere / "taken.npz")
    (destination / ENCODING_FILE).symlink_to(elsewhere / "taken.json")
    with pytest.raises(ValueError, match="holds symbolic links where the policy's files go"):
        export_policy(SOME, destination, overwrite=overwrite)
    assert list(elsewhere.iterdir()) == []


def test_export_into_a_policy_is_refused_unless_overwrite_and_leaves_no_stale_card(tmp_path):
    """An export into a directory holding a policy replaced its weights silently and kept
    its card, which then described other weights."""
    destination = export_policy(SOME, tmp_path / "p", card=zoo_card(SOME))
    before = {name: (destination / name).read_bytes() for name in ("weights.npz", "card.json")}
    with pytest.raises(
        ValueError, match=r"holds a policy already \(weights\.npz, encoding\.json, card\.json\)"
    ):
        export_policy(OTHER, destination)
    assert {name: (destination / name).read_bytes() for name in before} == before
    export_policy(OTHER, destination, overwrite=True)
    assert (destination / "weights.npz").read_bytes() != before["weights.npz"]
    # (not the card of the weights replaced: the new weights' own, carried from their source)
    assert json.loads((destination / "card.json").read_text()) == zoo_card(OTHER)
    cardless = export_policy(OTHER, tmp_path / "cardless")
    (cardless / "card.json").unlink()
    export_policy(cardless, destination, overwrite=True)
    assert not (destination / "card.json").exists()  # (it described the weights replaced)
    export_policy(SOME, destination, card=zoo_card(SOME), overwrite=True)
    assert {name: (destination / name).read_bytes() for name in before} == before


def test_an_export_keeps_the_card_of_its_source(tmp_path):
    """A zoo policy exported elsewhere lost its card.json, and one exported onto itself
    deleted its own: the card says how these weights were trained."""
    copy = export_policy(SOME, tmp_path / "copy")
    assert json.loads((copy / "card.json").read_text()) == zoo_card(SOME)
    before = {p.name: p.read_bytes() for p in copy.iterdir()}
    assert cli_main(["export-policy", str(copy), str(copy), "--overwrite"]) == 0
    assert {p.name: p.read_bytes() for p in copy.iterdir()} == before
    given = export_policy(SOME, tmp_path / "given", card={"arm": "mine"})  # (a card given wins)
    assert json.loads((given / "card.json").read_text()) == {"arm": "mine"}


def test_export_policy_on_the_command_line_refuses_a_policy_unless_overwrite(tmp_path, capsys):
    destination = tmp_path / "p"
    assert cli_main(["export-policy", SOME, str(destination)]) == 0
    capsys.readouterr()
    assert cli_main(["export-policy", OTHER, str(destination)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("turnbudget export-policy: error: ") and "--overwrite" in err
    assert cli_main(["export-policy", OTHER, str(destination), "--overwrite"]) == 0


def _zoo_copy(tmp_path: Path) -> Path:
    return export_policy(SOME, tmp_path / "p")


def test_weights_that_hold_objects_are_refused(tmp_path):
    """np.load(allow_pickle=False): an object array (a pickle) is never unpickled."""
    root = _zoo_copy(tmp_path)
    marker = tmp_path / "pwned"
    with np.load(root / WEIGHTS_FILE) as arrays:
        weights = {name: arrays[name] for name in arrays.files}
    weights["action_net.bias"] = np.array([_Touch(marker)], dtype=object)
    np.savez(root / WEIGHTS_FILE, **weights)
    with pytest.raises(ValueError, match=r"Refusing .*allow_pickle=False"):
        PolicyAgent(root)
    assert not marker.exists()


def test_weights_that_are_not_floats_are_refused(tmp_path):
    root = _zoo_copy(tmp_path)
    with np.load(root / WEIGHTS_FILE) as arrays:
        weights = {name: arrays[name] for name in arrays.files}
    weights["action_net.bias"] = weights["action_net.bias"].astype(np.int64)
    np.savez(root / WEIGHTS_FILE, **weights)
    with pytest.raises(
        ValueError, match=r"expect float arrays, got 'action_net\.bias' of dtype int64"
    ):
        PolicyAgent(root)


def test_a_weights_file_that_is_not_an_npz_is_refused(tmp_path):
    root = _zoo_copy(tmp_path)
    (root / WEIGHTS_FILE).write_bytes(b"not a zip")
    with pytest.raises(ValueError, match=r"Refusing .*expect a NumPy \.npz"):
        PolicyAgent(root)
    with zipfile.ZipFile(root / WEIGHTS_FILE, "w") as archive:
        archive.writestr("x.npy", b"garbage")
    with pytest.raises(ValueError, match="Refusing"):
        PolicyAgent(root)


def _npy(header: bytes) -> bytes:
    """A .npy file of ``header`` (padded as NumPy pads it) and a few bytes of data."""
    header = header.ljust(118) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + bytes(12)


@pytest.mark.parametrize("how", ["deflate", "version", "header"])
def test_a_corrupted_weights_file_is_refused_naming_it(tmp_path, how):
    """A weights.npz whose bytes were damaged: compressed data that no longer inflates was
    zlib.error, a zip version field past zipfile's NotImplementedError, and a .npy header
    cut mid-tuple tokenize.TokenError, none naming the file."""
    from _support import broken_zip

    root = _zoo_copy(tmp_path)
    good = _npy(b"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }")
    if how == "header":
        with zipfile.ZipFile(root / WEIGHTS_FILE, "w") as archive:
            archive.writestr(
                "a.npy", _npy(b"{'descr': '<f4', 'fortran_order': False, 'shape': (3, ")
            )
    else:
        (root / WEIGHTS_FILE).write_bytes(broken_zip("a.npy", good, how))
    with pytest.raises(ValueError, match=rf"Refusing {re.escape(str(root / WEIGHTS_FILE))}"):
        PolicyAgent(root)


def test_half_floats_past_the_limit_as_float64_are_refused_before_they_are_converted(
    tmp_path, monkeypatch
):
    """The limit counted the stored bytes, and every array was then made float64: 1 GiB of
    float16 zeros (a 1 MB file, compressed) took 5.8 GB and 29 s before its shape was
    refused. The numbers are counted as the float64s they become, before any is converted."""
    import numpy as np

    import turnbudget.agents.policy as policy

    monkeypatch.setattr(policy, "_MAX_WEIGHTS_BYTES", 1 << 20)
    root = _zoo_copy(tmp_path)
    halves = np.zeros((1, (1 << 20) // 8 + 1), np.float16)  # 256 KiB stored, 1 MiB + 8 as float64
    np.savez_compressed(root / WEIGHTS_FILE, **{"action_net.weight": halves})
    assert (root / WEIGHTS_FILE).stat().st_size < 1 << 20
    with pytest.raises(ValueError, match=r"holds? 131,073 numbers, over the 131,072"):
        PolicyAgent(root)


def test_a_path_past_the_systems_name_limit_is_no_saved_policy_and_is_cut():
    """pathlib's OSError (File name too long) repeated a 100,000-character name whole."""
    for path in ("p" * 100_000, "zoo/maze-easy/base/" + "s" * 100_000):
        with pytest.raises(FileNotFoundError, match=r"characters\) is not a saved policy") as info:
            PolicyAgent(path)
        assert len(str(info.value)) < 5_000
    with pytest.raises(FileNotFoundError, match=r"characters\) has no card\.json") as info:
        zoo_card("zoo/maze-easy/base/" + "s" * 100_000)
    assert len(str(info.value)) < 5_000


def test_weights_of_the_wrong_shape_say_why(tmp_path):
    root = _zoo_copy(tmp_path)
    with np.load(root / WEIGHTS_FILE) as arrays:
        weights = {name: arrays[name] for name in arrays.files}
    weights["action_net.weight"] = weights["action_net.weight"][:, :3]
    np.savez(root / WEIGHTS_FILE, **weights)
    with pytest.raises(ValueError, match=r"action_net\.weight in .*weights\.npz has shape"):
        PolicyAgent(root)


def test_weights_of_a_layer_named_by_a_digit_that_is_no_number_say_why(tmp_path):
    """``"²".isdigit()`` is true: int() raised "invalid literal for int()", naming no file."""
    root = _zoo_copy(tmp_path)
    with np.load(root / WEIGHTS_FILE) as arrays:
        weights = {name: arrays[name] for name in arrays.files}
    weights["mlp_extractor.policy_net.\u00b2.weight"] = weights["action_net.weight"]
    np.savez(root / WEIGHTS_FILE, **weights)
    with pytest.raises(ValueError, match=r"PolicyAgent plays MlpPolicy models .*weights\.npz"):
        PolicyAgent(root)


def test_weights_that_are_not_finite_are_refused(tmp_path):
    root = _zoo_copy(tmp_path)
    with np.load(root / WEIGHTS_FILE) as arrays:
        weights = {name: arrays[name] for name in arrays.files}
    weights["action_net.bias"][0] = np.nan  # (a NaN policy loaded and played "go north")
    np.savez(root / WEIGHTS_FILE, **weights)
    with pytest.raises(ValueError, match=r"'action_net\.bias' holds weights that are not finite"):
        PolicyAgent(root)


def test_weights_finite_only_in_a_wider_float_are_refused(tmp_path):
    """A float128 of 1e400 passed the finiteness check as stored, and played as inf: NaN
    logits, and the first command every turn."""
    root = _zoo_copy(tmp_path)
    with np.load(root / WEIGHTS_FILE) as arrays:
        weights = {name: arrays[name] for name in arrays.files}
    weights["action_net.weight"] = weights["action_net.weight"].astype(np.longdouble)
    weights["action_net.weight"] *= np.longdouble("1e400")
    assert np.isfinite(weights["action_net.weight"]).all()
    np.savez(root / WEIGHTS_FILE, **weights)
    with pytest.raises(ValueError, match=r"'action_net\.weight' holds weights that are not finite"):
        PolicyAgent(root)


def test_weights_that_overflow_in_play_stop_the_agent_by_name(tmp_path):
    """Finite float64 weights near 1e308 overflow in ``x @ W``: the logits were NaN or inf,
    and the agent played the first command every turn, unannounced."""
    root = _zoo_copy(tmp_path)
    with np.load(root / WEIGHTS_FILE) as arrays:
        weights = {name: arrays[name].astype(np.float64) for name in arrays.files}
    head = weights["action_net.weight"]
    weights["action_net.weight"] = head / np.abs(head).max() * 1e308
    np.savez(root / WEIGHTS_FILE, **weights)
    agent = PolicyAgent(root)
    env = gym.make("turnbudget/Maze-Easy-v0", turn_budget=10)
    observation, info = env.reset(seed=0)
    agent.reset(0)
    refused = pytest.raises(ValueError, match=r"logits are not finite numbers .*overflow")
    with np.errstate(over="ignore", invalid="ignore"), refused:
        agent.act(observation, info)


def test_export_refuses_weights_past_float32_before_writing(tmp_path):
    """Float64 weights of 1e300 loaded, and were written as float32 inf: an exported policy
    that its own loader refused."""
    source = _zoo_copy(tmp_path)
    with np.load(source / WEIGHTS_FILE) as arrays:
        weights = {name: arrays[name].astype(np.float64) for name in arrays.files}
    weights["action_net.bias"] = weights["action_net.bias"] + 1e300
    np.savez(source / WEIGHTS_FILE, **weights)
    PolicyAgent(source)  # (it plays: float64 holds it)
    with pytest.raises(ValueError, match=r"'action_net\.bias' holds weights past float32's range"):
        export_policy(source, tmp_path / "exported")
    assert not (tmp_path / "exported").exists()


@pytest.mark.parametrize(
    "text, says",
    [
        ("[" * 100_000 + "]" * 100_000, r"is not JSON: RecursionError"),
        ('{"env_id": NaN, "steps": Infinity}', r"is not JSON"),
        ("[1, 2]", r"is not a policy card: expect a JSON object"),
    ],
)
def test_a_card_that_is_no_json_object_is_refused(tmp_path, text, says):
    """``zoo_card`` read a card with a bare ``json.loads``: a RecursionError escaped, NaN and
    Infinity were read as numbers, and a list was returned as the card."""
    root = _zoo_copy(tmp_path)
    (root / CARD_FILE).write_text(text)
    with pytest.raises(ValueError, match=says):
        zoo_card(str(root))
    with (root / CARD_FILE).open("wb") as sparse:  # (read whole, however large)
        sparse.truncate(2 << 30)
    with pytest.raises(ValueError, match=r"is over 1,048,576 bytes"):
        zoo_card(str(root))


def test_an_npy_header_of_a_huge_shape_is_refused_without_the_memory(tmp_path):
    """A small file whose .npy header says 2**40 floats: NumPy tried to allocate 8 TiB."""
    root = _zoo_copy(tmp_path)
    header = np.lib.format.header_data_from_array_1_0(np.zeros(1))
    header["shape"] = (2**40,)
    raw = io.BytesIO()
    np.lib.format.write_array_header_1_0(raw, header)
    with zipfile.ZipFile(root / WEIGHTS_FILE, "w") as archive:
        archive.writestr("action_net.bias.npy", raw.getvalue() + b"\0" * 64)
    with pytest.raises(ValueError, match=r"Refusing .*expect a NumPy \.npz"):
        PolicyAgent(root)


@pytest.mark.parametrize(
    "change, says",
    [
        # (each loaded, then failed or ran for ever in act(); or crashed the load)
        ({"text_features": {"ngrams": 10**9}}, r"`text_features\.ngrams` .* an int from 1 to 8"),
        ({"text_features": {"ngrams": "2"}}, r"`text_features\.ngrams`"),
        ({"text_features": {"dim": float("inf")}}, r"`text_features\.dim` .* an int from 1 to"),
        # (a dim of 0 with weights sized to fit loaded, then every turn divided by zero)
        ({"text_features": {"dim": 0}}, r"`text_features\.dim` .* an int from 1 to 1,048,576"),
        ({"text_features": {"dim": -3}}, r"`text_features\.dim`"),
        ({"text_features": {"dim": 16.7}}, r"`text_features\.dim`"),
        ({"text_features": {"include_goal": "false"}}, r"`text_features\.include_goal` .* true or false"),
        ({"text_features": {"include_admissible": 1}}, r"`text_features\.include_admissible`"),
        ({"reveal": "always"}, r"Expect `reveal` in .* RevealBudget's settings"),
        ({"reveal": {"mode": "always", "final_turns": None, "template": "{0}"}}, r"`reveal`"),
        ({"reveal": {"mode": "always", "final_turns": None,
                     "template": "{turns_left:>999999999999}"}}, r"`reveal`"),
    ],
)  # fmt: skip
def test_an_encoding_that_cannot_play_is_refused_when_the_policy_loads(tmp_path, change, says):
    root = _zoo_copy(tmp_path)
    encoding = json.loads((root / ENCODING_FILE).read_text())
    for key, value in change.items():
        encoding[key] = {**encoding[key], **value} if key == "text_features" else value
    (root / ENCODING_FILE).write_text(json.dumps(encoding))
    with pytest.raises(ValueError, match=says):
        PolicyAgent(root)


@pytest.mark.parametrize(
    "reveal",
    [{"mode": "final=2", "final_turns": None}, {"mode": " FINAL ", "final_turns": 2}],
)
def test_an_encoding_s_reveal_in_another_spelling_plays_as_its_own(tmp_path, reveal):
    """RevealBudget takes "final=2" and "FINAL": the agent read them as "always" and, played
    with reveal=None, added the budget's text to every turn's features, not the last 2."""
    template = "\n[{turns_left} turns left]"
    features = []
    for name, settings in [("theirs", reveal), ("ours", {"mode": "final", "final_turns": 2})]:
        root = export_policy(SOME, tmp_path / name)
        encoding = json.loads((root / ENCODING_FILE).read_text())
        encoding["reveal"] = {**settings, "template": template}
        (root / ENCODING_FILE).write_text(json.dumps(encoding))
        agent = PolicyAgent(root)
        agent.reset(0)
        info = {"goal": "Find the Mossy Study.", "admissible_actions": ["go north", "look"],
                "turns_left": 10, "turn_budget": 12}  # fmt: skip
        features.append(agent._see("You are in the Iron Garden.", info)[0])
    np.testing.assert_array_equal(*features)


def test_an_encoding_file_too_large_or_too_deep_is_refused(tmp_path):
    root = _zoo_copy(tmp_path)
    (root / ENCODING_FILE).write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match=r"is not JSON: RecursionError"):
        PolicyAgent(root)
    with (root / ENCODING_FILE).open("wb") as sparse:  # (2 GB were read whole: 4.2 GB of memory)
        sparse.truncate(2 << 30)
    with pytest.raises(ValueError, match=r"is over 1,048,576 bytes"):
        PolicyAgent(root)


_READ_ENCODING_CHILD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))  # (a read of /dev/zero: MemoryError)
from turnbudget.agents.policy import read_encoding
try:
    read_encoding(sys.argv[1])
except ValueError as exc:
    print("ValueError:", exc)
"""


@pytest.mark.parametrize("special", ["fifo", "dev-zero"])
def test_an_encoding_that_is_not_a_regular_file_is_refused(tmp_path, special):
    """``turnbudget train --init DIR`` reads DIR's encoding.json (DIR need hold only a
    policy.zip): a FIFO there blocked the run for ever, and a link to /dev/zero read until the
    memory ran out. (A child process: a regression hangs it, which `HANG_GUARD` reports.)"""

    from _support import make_not_regular, run_child

    root = tmp_path / "init"
    root.mkdir()
    make_not_regular(root / ENCODING_FILE, special)
    done = run_child(_READ_ENCODING_CHILD, str(root))
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"{root / ENCODING_FILE}: not a regular file" in done.stdout


class _Touch:
    """Unpickling it creates ``marker``."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


@pytest.mark.parametrize("flag", ["no", "false", 0.5, [0]])
def test_deterministic_is_a_bool(flag):
    """Any value was read as ``bool(deterministic)``: "no" played the most likely command."""
    from turnbudget.agents.policy import PolicyAgent

    with pytest.raises(ValueError, match=r"Expect `deterministic` to be True or False"):
        PolicyAgent("turnbudget/zoo/maze-easy/base/seed0", deterministic=flag)


@pytest.mark.parametrize(
    ("observation", "info", "says"),
    [
        ("You are here.", None, r"Expect `info` to be the env's info, a mapping, got None"),
        ("You are here.", ["look"], r"Expect `info` to be the env's info, a mapping, got \["),
        (None, {"admissible_actions": ["look"]}, r"Expect `observation` to be the env's text"),
        ("x", {"admissible_actions": "look"}, r"info\['admissible_actions'\] to be a list"),
        ("x", {"admissible_actions": 5}, r"info\['admissible_actions'\] to be a list"),
        ("x", {"admissible_actions": [1, "look"]}, r"to hold commands \(str\) only"),
    ],
    ids=["info-none", "info-list", "observation-none", "commands-str", "commands-int", "mixed"],
)
def test_a_turn_that_is_no_envs_turn_is_a_type_error_naming_it(observation, info, says):
    """info=None was an AttributeError ("'NoneType' object has no attribute 'get'"), commands
    of ints and strs a TypeError from sorting them, and a str of commands was played one
    character at a time ("l" for "look")."""
    agent = PolicyAgent(OTHER)
    agent.reset(seed=0)
    with pytest.raises(TypeError, match=says):
        agent.act(observation, info)
    with pytest.raises(TypeError, match=says):
        agent.observe(observation, info, "look")
    agent.reset(seed=0)  # (the refused turn left nothing behind: the episode plays on)
    env = gym.make("turnbudget/Maze-Easy-v0")
    observation, info = env.reset(seed=0)
    assert agent.act(observation, info) in info["admissible_actions"]


@pytest.mark.parametrize("seed", [-1, "7", 1.5, None])
def test_a_reset_seed_that_is_no_seed_names_it(seed):
    """NumPy's own message ("SeedSequence expects int...") named no argument; None drew an
    unseeded generator, so the repeats of a task were not reproducible."""
    with pytest.raises(ValueError, match=r"Expect `seed` to be an int"):
        PolicyAgent(OTHER).reset(seed)


@pytest.mark.parametrize("env_id", [None, 7, "", ["turnbudget/Maze-Easy-v0"]])
def test_an_encoding_without_the_id_it_was_trained_on_is_refused(tmp_path, env_id):
    """The game a policy was trained on is its `env_id`: an encoding with none (or not a str)
    loaded, and named no game."""
    root = _zoo_copy(tmp_path)
    encoding = json.loads((root / ENCODING_FILE).read_text())
    encoding["env_id"] = env_id
    (root / ENCODING_FILE).write_text(json.dumps(encoding))
    with pytest.raises(ValueError, match=r"Expect `env_id` in .*encoding\.json to be the id"):
        PolicyAgent(root)
    assert PolicyAgent(OTHER).env_id == "turnbudget/Maze-Easy-v0"


@pytest.mark.parametrize(
    ("budget_keys", "error", "says"),
    [
        ({"turns_left": "x"}, TypeError, r"info\['turns_left'\] to be a number of turns"),
        ({"turns_left": float("inf")}, TypeError, r"info\['turns_left'\] .* got inf"),
        ({"turns_left": float("nan")}, TypeError, r"info\['turns_left'\]"),
        ({"turns_left": True}, TypeError, r"info\['turns_left'\]"),
        ({"turns_left": -1}, ValueError, r"info\['turns_left'\] .* int from 0 to 2,147,483,647"),
        ({"turns_left": 10**400}, ValueError, r"info\['turns_left'\]"),
        ({"turns_left": 3, "turn_budget": "12"}, TypeError, r"info\['turn_budget'\]"),
    ],
    ids=["str", "inf", "nan", "bool", "negative", "huge", "budget-str"],
)
def test_budget_keys_that_are_no_turn_counts_are_refused_naming_them(
    tmp_path, budget_keys, error, says
):
    """A policy that shows its budget read ``turns_left`` with int(): "x" was int()'s
    ValueError, inf an OverflowError, neither naming the key."""
    root = _zoo_copy(tmp_path)
    encoding = json.loads((root / ENCODING_FILE).read_text())
    encoding["reveal"] = {"mode": "always", "final_turns": None, "template": " [{turns_left}]"}
    (root / ENCODING_FILE).write_text(json.dumps(encoding))
    agent = PolicyAgent(root)
    agent.reset(seed=0)
    env = gym.make("turnbudget/Maze-Easy-v0", turn_budget=12)
    observation, info = env.reset(seed=0)
    with pytest.raises(error, match=says):
        agent.act(observation, {**info, **budget_keys})
    with pytest.raises(error, match=says):
        agent.observe(observation, {**info, **budget_keys}, "look")
    agent.reset(seed=0)  # (the refused turn left nothing behind: the episode plays on)
    assert agent.act(observation, info) in info["admissible_actions"]
    assert agent.act(observation, {**info, "turns_left": None}) in info["admissible_actions"]


def test_a_policy_trained_with_the_budget_in_its_text_only_is_budget_aware(tmp_path):
    """Trained with RevealBudget showing the budget but no numeric budget features, the policy
    was played budget-blind: budget_aware read the features alone, so the evaluator kept
    the budget from it, did not append training's budget text, and ran truncate mode."""
    import numpy as np

    from turnbudget.agents.policy import policy_encoding, write_encoding
    from turnbudget.eval.run.agent_view import agent_info
    from turnbudget.wrappers.history_features import HistoryFeatures

    env_id = "turnbudget/Maze-Easy-v0"
    stack = turnbudget.make(env_id, reveal="always", discrete_actions=6, text_features=32,
                            info="text")  # fmt: skip
    trained = HistoryFeatures(stack, budget=False)
    write_encoding(tmp_path, policy_encoding(trained, env_id))
    n = trained.observation_space.shape[0]
    np.savez(tmp_path / WEIGHTS_FILE, **{"action_net.weight": np.ones((6, n), np.float32),
                                         "action_net.bias": np.zeros(6, np.float32)})  # fmt: skip
    agent = PolicyAgent(str(tmp_path))
    assert agent.budget_aware
    obs, _ = trained.reset(seed=3)
    _, plain_info = turnbudget.make(env_id).reset(seed=3)
    text, _ = turnbudget.make(env_id).reset(seed=3)
    agent.reset(0)
    features, _ = agent._see(text, agent_info(plain_info, show_budget=agent.budget_aware))
    assert np.array_equal(features.astype(np.float32), obs)  # training's features, budget text too


def test_an_encoding_s_reveal_of_mode_never_plays_as_no_reveal(tmp_path):
    """Training writes None for a budget never shown; {"mode": "never", ...} was read as a
    reveal: the agent declared itself budget-aware and appended the template to every turn."""
    features = []
    for name, reveal in [("never", {"mode": "never", "final_turns": None, "template": "x"}),
                         ("none", None)]:  # fmt: skip
        root = export_policy(SOME, tmp_path / name)
        encoding = json.loads((root / ENCODING_FILE).read_text())
        encoding["reveal"] = reveal
        (root / ENCODING_FILE).write_text(json.dumps(encoding))
        agent = PolicyAgent(root)
        assert not agent.budget_aware
        agent.reset(0)
        info = {"goal": "Find the Mossy Study.", "admissible_actions": ["go north", "look"],
                "turns_left": 10, "turn_budget": 12}  # fmt: skip
        features.append(agent._see("You are in the Iron Garden.", info)[0])
    np.testing.assert_array_equal(*features)
