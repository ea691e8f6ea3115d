"""Recoverable errors per agent (slip, transient, setback), on a seed-and-round schedule."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv
from pettingzoo.utils.wrappers import BaseParallelWrapper

from turnbudget._checks import brief, text_of
from turnbudget.envs.native.base import sanitize_for_display
from turnbudget.multiagent.base import TEXT_KEY
from turnbudget.multiagent.wrappers._common import (
    find_team_wrapper,
    require_parallel,
    require_single_team,
)
from turnbudget.multiagent.wrappers.team_turn_budget import begin_team_reset
from turnbudget.wrappers._common import EpisodeSeeder
from turnbudget.wrappers.inject_errors import (
    ERROR_KINDS,
    ErrorSchedule,
    InjectedError,
    narrate,
    repeat_seed,
    valid_as_seen,
)

__all__ = ["InjectTeamErrors"]

# Sent in place of an agent's command for a transient error: any non-admissible
# command costs that agent its turn and changes nothing.
_NO_OP_COMMAND = ""


class InjectTeamErrors(BaseParallelWrapper):
    """Inject `InjectErrors`' recoverable errors into each agent's turns, independently.

    Each agent has its own `ErrorSchedule`: whether and which error fires at
    round t for agent a depends only on the episode's seed, a and t, never on
    anyone's actions, so two teams on the same seed face the same draws. As
    with `InjectErrors`, the ``repeat`` reset option
    (``reset(seed=s, options={"repeat": r})``) makes the draws of attempt r a
    pure function of (s, r, a, t): repeated attempts at one task are
    independent, two teams on the same (s, r) are paired. What is shared is
    whether an error fires and its kind; its concrete effect depends on the state. An
    error fires at the start of the round, before the commands run:

    - ``slip``: the agent's command is replaced by another admissible one
      that is not optimal for it and keeps the game winnable for it (checked
      on a copy of the game); it does not fire when there is none;
    - ``transient``: the agent's command fails with a message (its turn is
      spent, the state unchanged);
    - ``setback``: the game's ``inject_setback(agent, rng)`` perturbs the
      state for that agent, then every command runs.

    The narration goes before that agent's observation text; its
    ``info["injected_error"]`` is an `InjectedError` (distances from the
    game's ``distance_to_goal(agent)``), absent on quiet rounds, and its
    ``info["valid_action"]`` tells whether its *own* command was admissible
    in the state it saw (a setback's is not blamed for the changed state).
    The other agents' commands always run as sent.

    Args:
        env: A team env whose raw env has the oracle (``distance_to_goal``,
            ``optimal_actions`` for slips, ``inject_setback`` for setbacks).
        rate: Probability in [0, 1] that an error fires for an agent at a round.
        kinds: The kinds drawn when the rate fires.
        weights: Relative weights of ``kinds`` (uniform if None).
        schedule: Fixed errors ``{round: kind}`` for every agent.
        transient_message: What the agent reads on a transient error.

    Example:
        >>> from turnbudget.multiagent import vault_v0
        >>> env = InjectTeamErrors(vault_v0.parallel_env(), schedule={1: "transient"})
        >>> _ = env.reset(seed=0)
        >>> _, _, _, _, infos = env.step({"operator": "wait", "runner": "look"})
        >>> infos["runner"]["injected_error"]["kind"], infos["runner"]["valid_action"]
        ('transient', True)
    """

    def __init__(
        self,
        env: ParallelEnv,
        rate: float = 0.0,
        kinds: Sequence[str] = ERROR_KINDS,
        weights: Sequence[float] | None = None,
        schedule: Mapping[int, str] | Sequence[tuple[int, str]] | None = None,
        transient_message: str = "Your attempt fails: something went wrong. Nothing changes.",
    ):
        super().__init__(env)
        require_parallel(env, InjectTeamErrors)
        self.errors = {
            agent: ErrorSchedule(rate, kinds, weights, schedule) for agent in env.possible_agents
        }
        if not isinstance(transient_message, str):
            raise ValueError(
                f"Expect `transient_message` to be a str, got {brief(transient_message)}"
            )
        self.transient_message = transient_message
        game = env.unwrapped
        used = next(iter(self.errors.values())).used_kinds
        methods = ["distance_to_goal"]
        methods += ["optimal_actions"] if "slip" in used else []
        methods += ["inject_setback"] if "setback" in used else []
        missing = [m for m in methods if not callable(getattr(game, m, None))]
        if missing:
            raise TypeError(
                f"InjectTeamErrors needs {', '.join(missing)} on {type(game).__name__} "
                "(drop the kinds that need it)"
            )
        require_single_team(env, InjectTeamErrors)
        # Refused here, not deep in an episode: over a classic-RL adapter a slip's or a
        # transient's command reached an index space (ValueError on the round it fired) and a
        # narration an array (IndexError); over NumericInfo no slip ever fired (no command list).
        for agent in env.possible_agents:
            space = env.observation_space(agent)
            if not isinstance(space, spaces.Dict) or not isinstance(
                space.spaces.get(TEXT_KEY), spaces.Text
            ):
                raise ValueError(
                    f"InjectTeamErrors needs Dict observations with a Text {TEXT_KEY!r} (errors "
                    f"narrate into it), got {space} for {agent!r}: put TeamTextFeatures outside "
                    "InjectTeamErrors (make_team(..., errors=..., text_features=N) stacks them "
                    "in order)"
                )
            if used & {"slip", "transient"} and not isinstance(
                env.action_space(agent), spaces.Text
            ):
                raise ValueError(
                    f"InjectTeamErrors' slip and transient errors need Text actions, got "
                    f"{env.action_space(agent)} for {agent!r}: put TeamDiscreteActions outside "
                    "InjectTeamErrors (make_team(..., errors=..., discrete_actions=N) stacks "
                    "them in order)"
                )
        from turnbudget.multiagent.wrappers.record_team_outcomes import RecordTeamOutcomes
        from turnbudget.multiagent.wrappers.team_numeric_info import TeamNumericInfo

        if "slip" in used and find_team_wrapper(env, TeamNumericInfo) is not None:
            raise ValueError(
                "InjectTeamErrors' slips draw from info['admissible_actions'], which "
                "TeamNumericInfo drops: put TeamNumericInfo outside InjectTeamErrors "
                "(make_team(..., errors=..., info='numeric') stacks them in order)"
            )
        if find_team_wrapper(env, RecordTeamOutcomes) is not None:
            # Recorded below the errors, a slip's substitute was the agent's command and a
            # setback the agent's error: an oracle team had self-inflicted errors.
            raise ValueError(
                "InjectTeamErrors must sit inside RecordTeamOutcomes, whose records tell an "
                "injected error from the agent's command: wrap the env in InjectTeamErrors "
                "first (make_team(..., errors=..., record=...) stacks them in order)"
            )
        self._seeder = EpisodeSeeder("InjectTeamErrors")
        self._round = 0
        self._admissible: dict[str, list[str]] = {}

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        begin_team_reset(self.env, seed, options)  # (checks `repeat`: no draw on a refused reset)
        episode_seed = repeat_seed(self._seeder.next_seed(seed), options)
        for index, schedule in enumerate(self.errors.values()):
            schedule.start(int(np.random.default_rng([episode_seed, index]).integers(2**63)))
        self._round = 0
        observations, infos = self.env.reset(seed=seed, options=options)
        self._admissible = {a: list(i.get("admissible_actions", [])) for a, i in infos.items()}
        return observations, infos

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        # Before the round counts or an error touches the game: a refused round changes nothing.
        actions = self.unwrapped.check_actions(actions, self.agents)
        if not self.agents:
            return self.env.step(actions)
        self._round += 1
        game = self.env.unwrapped
        own = dict(actions)  # what each agent sent (the errors may replace it)
        actions = dict(actions)
        events: dict[str, InjectedError] = {}
        planned = {agent: self.errors[agent].planned(self._round) for agent in self.agents}
        # The listed command each agent's spelling plays in the state it saw, before a setback
        # changes it ("N" is as valid as "go north"): read on rounds with an error only.
        seen = (
            {a: game.world.parse(a, str.__str__(c)) for a, c in own.items() if isinstance(c, str)}
            if any(planned.values())
            else {}
        )
        for agent in self.agents:
            kind = planned[agent]
            if kind is not None:
                rng = self.errors[agent].turn_rng(self._round)
                events[agent] = getattr(self, f"_{kind}")(game, agent, actions, rng)
        observations, rewards, terminations, truncations, infos = self.env.step(actions)
        # Every command is judged on the state its agent saw (`valid_as_seen`): one that did
        # not run (a slip, a transient error), or ran after a setback, anyone's, changed it.
        setback = any(e["kind"] == "setback" and e["applied"] for e in events.values())
        for agent, info in infos.items():
            event = events.get(agent)
            stopped = event is not None and event["applied"] and event["kind"] != "setback"
            if stopped or setback:
                ran = None if stopped else info.get("valid_action")
                info["valid_action"] = valid_as_seen(
                    own.get(agent), self._admissible.get(agent, []), ran, seen.get(agent)
                )
        for agent, event in events.items():
            info = infos[agent]
            if event["kind"] == "slip" and event["applied"]:
                event["distance_after"] = game.distance_to_goal(agent)
            assert "injected_error" not in info, "info['injected_error'] set twice"
            info["injected_error"] = event
            if event["narration"]:
                text = observations[agent][TEXT_KEY]
                if event["kind"] == "transient":  # drop the env's own invalid-command feedback
                    text = text.partition("\n\n")[2]
                space = self.observation_space(agent)[TEXT_KEY]
                observations[agent] = {
                    **observations[agent], TEXT_KEY: narrate(event["narration"], text, space)
                }  # fmt: skip
        self._admissible = {a: list(i.get("admissible_actions", [])) for a, i in infos.items()}
        return observations, rewards, terminations, truncations, infos

    # -- the three kinds -------------------------------------------------------------------

    def _event(self, kind: str, before: Any, after: Any, narration: str) -> InjectedError:
        return InjectedError(
            kind=kind, turn=self._round, applied=True, distance_before=before,
            distance_after=after, narration=narration, replaced_action=None,
        )  # fmt: skip

    def _setback(
        self, game: Any, agent: str, actions: dict, rng: np.random.Generator
    ) -> InjectedError:
        before = game.distance_to_goal(agent)
        narration = str(game.inject_setback(agent, rng))
        return self._event("setback", before, game.distance_to_goal(agent), narration)

    def _transient(
        self, game: Any, agent: str, actions: dict, rng: np.random.Generator
    ) -> InjectedError:
        distance = game.distance_to_goal(agent)
        event = self._event("transient", distance, distance, self.transient_message)
        actions[agent] = _NO_OP_COMMAND
        return event

    def _slip(
        self, game: Any, agent: str, actions: dict, rng: np.random.Generator
    ) -> InjectedError:
        before = game.distance_to_goal(agent)
        own = actions.get(agent)  # any value: a non-string one is a spent turn, not an error
        # (and the command it plays respelt: "LOOK" for "look" replaced it by itself)
        played = game.world.parse(agent, str.__str__(own)) if isinstance(own, str) else None
        excluded = {own if isinstance(own, str) else None, played, *game.optimal_actions(agent)}
        candidates = [c for c in self._admissible.get(agent, []) if c not in excluded]
        for index in rng.permutation(len(candidates)):
            replacement = candidates[index]
            trial = copy.deepcopy(game.world)  # cheap: the world shares its tables
            trial.step({**actions, agent: replacement})
            if not trial.over and trial.distance_to_goal(agent) is not None:
                event = self._event(
                    "slip", before, None,
                    f'Your hand slips: instead of "{sanitize_for_display(text_of(own))}", you '
                    f"{replacement}.",
                )  # fmt: skip
                event["replaced_action"] = replacement
                actions[agent] = replacement
                return event
        event = self._event("slip", before, before, "")
        event["applied"] = False
        return event
