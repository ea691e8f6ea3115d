"""What BC and PPO share: the rl extra's check, torch's settings, the vector env, the model,
and saving a policy directory. torch and SB3 are imported inside the functions."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import time
from pathlib import Path
from typing import Any

from turnbudget._checks import brief, make_folders
from turnbudget.agents.policy import read_encoding, write_encoding
from turnbudget.train.batched import batched_vec_env
from turnbudget.train.config import TrainConfig
from turnbudget.train.stack import batch_encoder, make_env, training_encoding

__all__ = ["RL_EXTRA", "require_rl"]

RL_EXTRA = "pip install -e '.[rl]' in the turnbudget checkout"


def require_rl() -> None:
    """Raise an ImportError that says how to install the rl extra when part of it is missing."""
    try:
        import sb3_contrib  # noqa: F401
        import stable_baselines3  # noqa: F401
        import torch  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"Training needs the rl extra (torch, stable-baselines3, sb3-contrib): {RL_EXTRA} "
            f"({exc})"
        ) from exc


def require_tensorboard() -> None:
    """An ImportError that names the package when ``log="tensorboard"`` cannot be written
    (SB3 found out with an AssertionError traceback once `out` held the run's config)."""
    try:
        from torch.utils.tensorboard import SummaryWriter  # noqa: F401 (what SB3 writes with)
    except ImportError as exc:
        raise ImportError(
            f"`log`='tensorboard' (--log tensorboard) needs the tensorboard package: pip "
            f"install tensorboard, or log 'csv' ({exc})"
        ) from exc


def setup_torch(config: TrainConfig) -> None:
    import torch

    torch.set_num_threads(config.torch_threads)
    torch.manual_seed(config.seed)


class TimedVecEnv:
    """Wrap a VecEnv: add up the wall time spent in reset/step (the envs and wrappers), and
    drop SB3's ``TimeLimit.truncated`` flag when the budget's end is not to be bootstrapped."""

    def __init__(self, venv: Any, bootstrap: bool = True):
        from stable_baselines3.common.vec_env import VecEnvWrapper

        class Timed(VecEnvWrapper):
            env_seconds = 0.0

            def reset(self):
                t = time.perf_counter()
                out = self.venv.reset()
                Timed.env_seconds += time.perf_counter() - t
                return out

            def step_wait(self):
                t = time.perf_counter()
                obs, rewards, dones, infos = self.venv.step_wait()
                Timed.env_seconds += time.perf_counter() - t
                if not bootstrap:
                    for info in infos:
                        info["TimeLimit.truncated"] = False
                return obs, rewards, dones, infos

            def step_async(self, actions):
                t = time.perf_counter()
                self.venv.step_async(actions)
                Timed.env_seconds += time.perf_counter() - t

        self.env = Timed(venv)
        self.cls = Timed


def vec_env(config: TrainConfig) -> Any:
    """``config.n_envs`` training stacks in this process or one process each, each in a
    Monitor, featurised together (`batched_vec_env`: the vectors of `make_env`'s stacks,
    built for all sub-envs at once; the sub-envs' infos are small, as SB3 copies them)."""
    from stable_baselines3.common.monitor import Monitor

    # Monitor: episode return and length in the logs (rollout/ep_rew_mean, ep_len_mean).
    fns = [lambda i=i: Monitor(make_env(config, i, batched=True)) for i in range(config.n_envs)]
    return batched_vec_env(fns, batch_encoder(config), processes=config.vec_env == "subproc")


def new_model(config: TrainConfig, venv: Any) -> Any:
    """A new MaskablePPO with this run's settings, starting, when ``config.init`` is given,
    from the network and optimizer state saved there (read as weights only)."""
    from sb3_contrib import MaskablePPO

    model = MaskablePPO(
        "MlpPolicy",
        venv,
        n_steps=config.n_steps,
        batch_size=config.batch_size,
        n_epochs=config.n_epochs,
        learning_rate=config.learning_rate,
        gamma=config.gamma,
        ent_coef=config.ent_coef,
        policy_kwargs={"net_arch": list(config.net_arch)},
        seed=config.seed,
        device="cpu",
        verbose=0,
    )
    if config.init:
        # The init's network and optimizer state, read as weights only: never
        # `MaskablePPO.load`, which unpickles the zip's ``data`` (code a sent file could run).
        from turnbudget.agents.policy import policy_tensors, zip_weights

        check_init_encoding(config, model.policy.activation_fn.__name__)
        path = Path(config.init) / "policy.zip"
        try:  # (a file no policy's: said as such, not as another network)
            tensors = policy_tensors(path)
            optimizer_state = zip_weights(path, "policy.optimizer.pth")
        except ValueError as exc:
            reason = _first_line(exc)
            where = "" if str(path) in reason else f" {path}:"
            raise ValueError(f"`--init`{where} {reason}") from None
        if not _optimizer_state_shaped(optimizer_state):  # (torch's own reader: AttributeError)
            raise ValueError(
                f"`--init` {path}: its policy.optimizer.pth is no optimizer state (expect "
                f"{{'state': {{int: ...}}, 'param_groups': [{{...}}]}}), got {brief(optimizer_state)}"
            )
        optimizer = model.policy.optimizer
        # This run's optimizer settings: torch's reader takes each group's from the file
        # (maximize, weight_decay, betas, capturable...), and a tampered or foreign file
        # trained by gradient ascent, or failed deep inside Adam's first step.
        settings = [{k: v for k, v in g.items() if k != "params"} for g in optimizer.param_groups]
        try:
            model.policy.load_state_dict(tensors)
            optimizer.load_state_dict(optimizer_state)
            for group, own in zip(optimizer.param_groups, settings, strict=True):
                group.update(own)
            _check_optimizer_state(optimizer)
        except (RuntimeError, KeyError, TypeError, ValueError) as exc:  # (another network)
            raise ValueError(
                f"`--init` {path}: its network is not this run's (--net-arch "
                f"{','.join(map(str, config.net_arch))}): {_first_line(exc)}"
            ) from None
        model.set_random_seed(config.seed)  # (as before the init's weights replaced these)
    return model


def _first_line(exc: BaseException) -> str:
    """An error's first line, or its type's name when it says nothing."""
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _optimizer_state_shaped(state: Any) -> bool:
    """Whether ``state`` has the shape of torch's optimizer state: ``{"state": {int: dict},
    "param_groups": [dict with "params"]}``."""
    if not isinstance(state, dict):
        return False
    moments, groups = state.get("state"), state.get("param_groups")
    return (
        isinstance(moments, dict)
        and all(isinstance(k, int) and isinstance(v, dict) for k, v in moments.items())
        and isinstance(groups, list)
        and all(isinstance(g, dict) and isinstance(g.get("params"), list) for g in groups)
    )


def _check_optimizer_state(optimizer: Any) -> None:
    """A ValueError unless the optimizer state just loaded fits its parameters: torch's
    ``load_state_dict`` checks the groups' sizes, not the moments' shapes or the step, and a
    state that did not fit failed deep inside the first Adam step of training."""
    import torch

    for group in optimizer.param_groups:
        for name, value in group.items():
            numbers = value if isinstance(value, (tuple, list)) and name != "params" else [value]
            if name != "params" and not all(
                isinstance(x, (int, float)) and math.isfinite(x)
                for x in numbers
                if not isinstance(x, bool) and x is not None
            ):
                raise ValueError(f"its optimizer's {name} is {brief(value)}, not a finite number")
        for param in group["params"]:
            for name, value in optimizer.state.get(param, {}).items():
                if not isinstance(value, torch.Tensor):
                    raise ValueError(f"its optimizer state's {name} is {brief(value)}")
                expected = () if name == "step" else tuple(param.shape)
                if tuple(value.shape) != expected or not torch.isfinite(value).all():
                    raise ValueError(
                        f"its optimizer state's {name} has shape {tuple(value.shape)} (or values "
                        f"that are not finite), not {expected} as its parameter's"
                    )


def check_init_encoding(config: TrainConfig, activation: str) -> None:
    """A ValueError unless ``config.init``'s ``encoding.json`` describes this run's features
    (its env id aside: a policy may start from one trained on another game). Features of the
    same length but another meaning (the budget shown on other turns) were taken silently,
    and another length was reported as a ``--net-arch`` mismatch."""
    where = Path(config.init)
    try:
        theirs = read_encoding(where)
    except FileNotFoundError:
        raise ValueError(
            f"`--init` {where}: no encoding.json beside its policy.zip, so its features "
            f"cannot be checked against this run's"
        ) from None
    ours = training_encoding(config, activation)
    differ = [
        k for k in sorted(set(ours) | set(theirs)) if k != "env_id" and ours.get(k) != theirs.get(k)
    ]
    if differ:
        shown = "; ".join(
            f"{k}: {brief(theirs.get(k))} there, {ours.get(k)!r} here" for k in differ
        )
        raise ValueError(
            f"`--init` {where} was trained on other features than this run's ({shown}): "
            f"train with its settings (its config.json), or from scratch"
        )


#: What a training run writes into its ``out`` (and `start_out` clears): a run stopped
#: before its end leaves some of them, which the next run into ``out`` must not keep; and an
#: exported policy's files (`turnbudget.agents.policy`), whose weights.npz is read before a
#: policy.zip: kept, the new run's name played the old policy.
RUN_FILES = ("config.json", "policy.zip", "encoding.json", "summary.json", "progress.csv",
             "checkpoints", "weights.npz", "card.json")  # fmt: skip
_EVENTS = "events.out.tfevents.*"  # (log="tensorboard")


def start_out(config: TrainConfig) -> Path:
    """Make ``config.out`` this run's, once it may be (`check_out`): the files a run before
    it left there (`RUN_FILES`, TensorBoard events; a run stopped midway left its progress
    and checkpoints beside an older run's policy) are removed, and this run's ``config.json``
    is written at once, so a run stopped before its end is known for what it was."""
    out = Path(config.out)
    make_folders(out)  # (removed again if it fails)
    for path in [*(out / name for name in RUN_FILES), *out.glob(_EVENTS)]:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
    _write_config(config)
    return out


def _write_config(config: TrainConfig) -> None:
    (Path(config.out) / "config.json").write_text(
        json.dumps(dataclasses.asdict(config), indent=2) + "\n"
    )


def check_finite(model: Any, config: TrainConfig) -> None:
    """Raise a ValueError saying that training diverged when a weight of the policy is no
    longer a finite number (the learner's own error then, if any, is only its symptom: torch's
    refusal of NaN logits, with a dump of the tensor)."""
    diverged = [
        name
        for name, tensor in model.policy.state_dict().items()
        if tensor.is_floating_point() and not tensor.isfinite().all()
    ]
    if diverged:
        raise ValueError(
            f"Training diverged: {diverged[0]} holds weights that are not finite, so nothing "
            f"was saved in {config.out} (a smaller learning_rate, ent_coef or process_scale?)"
        ) from None


def save_policy(model: Any, config: TrainConfig) -> Path:
    """Write the policy directory ``config.out``: ``policy.zip``, ``encoding.json``, ``config.json``."""
    check_finite(model, config)  # (a policy no one can play, which a summary would call finished)
    out = Path(config.out)
    make_folders(out)  # (removed again if it fails)
    model.save(out / "policy.zip")
    # PolicyAgent rebuilds the network from the weights' shapes and the activation's name:
    # it never unpickles the zip's objects.
    write_encoding(out, training_encoding(config, model.policy.activation_fn.__name__))
    _write_config(config)
    return out


def write_summary(config: TrainConfig, summary: dict[str, Any]) -> dict[str, Any]:
    """Write ``summary.json`` into ``config.out``, last and atomically (a run killed before it
    left no summary: callers that resume read its presence as "finished"); return ``summary``."""
    path = Path(config.out) / "summary.json"
    partial = path.with_suffix(".json.partial")
    partial.write_text(json.dumps(summary, indent=2) + "\n")
    os.replace(partial, path)
    return summary
