"""Bad command-line input to play, list and export-policy: a one-line error that names the
flag (or the file) and what was expected, exit code 2, nothing written."""

from __future__ import annotations

import pytest

from turnbudget.cli import main


@pytest.mark.parametrize("env_id", ["CartPole-v1", "FrozenLake-v1"])
def test_play_refuses_an_id_without_a_turn_budget(capsys, env_id):
    assert main(["play", env_id]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        f"turnbudget play: error: {env_id!r} has no TurnBudget: play takes the text games "
        "with turn budgets (`turnbudget list` shows them)"
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "--k", "1", "--t", "4", "--n", "1", "--tasks", "1", "--no-plots"],
        ["probe", "--tasks", "1"],
        ["validate", "--tasks", "6"],
    ],
    ids=["eval", "probe", "validate"],
)
def test_the_engines_refuse_an_id_without_a_turn_budget_without_naming_a_flag_they_lack(
    tmp_path, capsys, argv
):
    """eval, probe and validate passed on make's "pass `turn_budget`", a flag they have not."""
    out = tmp_path / "out"
    assert main([*argv, "--env", "CartPole-v1", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        f"turnbudget {argv[0]}: error: 'CartPole-v1' has no TurnBudget: the engines play the "
        "text games with turn budgets (`turnbudget list` shows them), or an id registered to "
        "make one"
    )
    assert not out.exists()


def test_list_refuses_a_negative_seed_count(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["list", "--seeds", "-1"])
    assert exit_.value.code == 2
    assert "argument --seeds: expect an int >= 0, got '-1'" in capsys.readouterr().err


def test_list_refuses_a_seed_count_that_would_never_end(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["list", "--seeds", "99999999999999999999"])
    assert exit_.value.code == 2
    assert "argument --seeds: expect at most 10,000 seeds" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["X", ""], ["X", "  "], ["", "out"]])
def test_export_policy_refuses_an_empty_path(tmp_path, monkeypatch, capsys, argv):
    monkeypatch.chdir(tmp_path)
    assert main(["export-policy", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("turnbudget export-policy: error: Expect ") and "empty path" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "Cannot read --card {card!r}: No such file or directory"),
        ("{", "Expect --card {card!r} to hold JSON: "),
        ('{"a": NaN}', "Expect --card {card!r} to hold JSON: NaN is not a JSON number"),
        ("[1, 2]", "Expect --card {card!r} to hold a JSON object, got list"),
        (b"\xff\xfe", "Cannot read --card {card!r}: "),
        ("[" * 100_000, "Expect --card {card!r} to hold JSON nested less deeply"),  # (a crash)
    ],
)
def test_export_policy_names_the_card_file_it_cannot_use(tmp_path, capsys, content, says):
    card = tmp_path / "card.json"
    if isinstance(content, bytes):
        card.write_bytes(content)
    elif content is not None:
        card.write_text(content)
    out = tmp_path / "out"
    assert main(["export-policy", str(tmp_path / "nowhere"), str(out), "--card", str(card)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("turnbudget export-policy: error: " + says.format(card=str(card)))
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_export_policy_refuses_an_empty_card_path(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["export-policy", str(tmp_path / "nowhere"), str(out), "--card", ""]) == 2
    assert "Expect --card to name a JSON file, got an empty path" in capsys.readouterr().err
    assert not out.exists()


EVAL = ["eval", "--env", "Maze-Easy-v0", "--k", "1", "--t", "3", "--tasks", "1", "--n", "1"]


@pytest.mark.parametrize(
    ("command", "flag", "value", "says"),
    [
        ("eval", "--t", "1,,2", "argument --t: expect comma-separated integers with no empty"),
        ("eval", "--tasks", "1,,2", "argument --tasks: expect a task count"),
        (
            "eval",
            "--tasks",
            "0-99999999999999999999999",
            "argument --tasks: expect a seed range LO-HI with 0 <= LO <= HI, at most 1,000,000",
        ),
        ("eval", "--tasks", "5-3", "argument --tasks: expect a seed range LO-HI with 0 <= LO"),
        ("eval", "--env", "Maze-Easy-v0,,Maze-Hard-v0", "Expect --env to be env ids with no empty"),
        ("eval", "--out", "", "argument --out: expect a directory path, got an empty one"),
        ("eval", "--seed", "-1", "argument --seed: expect an int >= 0, got '-1'"),
        ("probe", "--prefixes", "0,,0.5", "argument --prefixes: expect comma-separated fractions"),
        ("probe", "--prefixes", "0.5,0.5", "argument --prefixes: expect distinct fractions"),
        ("probe", "--out", "", "argument --out: expect a directory path, got an empty one"),
        ("probe", "--seed", "-1", "argument --seed: expect an int >= 0, got '-1'"),
        ("validate", "--out", " ", "argument --out: expect a directory path, got an empty one"),
        ("validate", "--seed", "-2", "argument --seed: expect an int >= 0, got '-2'"),
        # Hang-prone or overflowing sizes (OverflowError, or planned until killed).
        ("eval", "--k", "99999999999999999999", "Expect `ks` to hold ints at most 100,000"),
        ("eval", "--n", "99999999999999999999", "Expect `n` to be a positive int (at most"),
        ("eval", "--retries", "99999999999999999999", "Expect `retries` to be a non-negative"),
        ("eval", "--label", "", "Expect `label` to be a non-empty string"),
        ("eval", "--label", " ", "Expect `label` to have no leading or trailing spaces"),
        ("probe", "--repeats", "99999999999999999999", "Expect `repeats` to be an int >= 1 and"),
        ("probe", "--baseline-repeats", "10001", "Expect `baseline_repeats` to be an int >= 1"),
        ("probe", "--retries", "101", "Expect `retries` to be a non-negative int (at most 100)"),
        ("probe", "--label", " x", "Expect `label` to have no leading or trailing spaces"),
        # LLM flags with no LLM agent (eval refuses them as options the agent does not take).
        ("probe", "--base-url", "-1", "--base-url is an option of llm agents, and no --agent"),
        ("probe", "--concurrency", "-1", "--concurrency is an option of llm agents"),
        ("validate", "--baseline-repeats", "99999999999999999999", "`baseline_repeats`"),
        # (a label past 128 bytes without --out: runs/<label> was made, then refused)
        ("eval", "--label", "c" * 300, "Expect `label` to be at most 128 bytes"),
        ("probe", "--label", "c" * 300, "Expect `label` to be at most 128 bytes"),
        # (empty kinds were dropped: "" and ",," ran no recovery probe, unannounced)
        ("probe", "--kinds", "", "argument --kinds: expect comma-separated error kinds"),
        ("probe", "--kinds", "slip,,setback", "argument --kinds: expect comma-separated error"),
    ],
)
def test_run_commands_refuse_malformed_flags_before_writing(
    tmp_path, monkeypatch, capsys, command, flag, value, says
):
    monkeypatch.chdir(tmp_path)
    argv = EVAL if command == "eval" else [command, "--env", "Maze-Easy-v0", "--tasks", "1"]
    if flag in argv:  # (given twice is refused before its value is judged)
        at = argv.index(flag)
        argv = argv[:at] + argv[at + 2 :]
    try:
        code = main([*argv, "--no-plots" if command == "eval" else "--quiet", flag, value])
    except SystemExit as exit_:  # (argparse's own refusals)
        code = exit_.code
    assert code == 2
    assert says in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing written, not even runs/


@pytest.mark.parametrize("flag", ["--errors", "--reveal"])
def test_eval_refuses_a_setting_nested_past_the_json_parser(tmp_path, monkeypatch, capsys, flag):
    """It was a RecursionError traceback (JSON that parses is taken as JSON, else as a string:
    100,000 brackets are neither)."""
    monkeypatch.chdir(tmp_path)
    assert main([*EVAL, "--no-plots", "--quiet", flag, "[" * 100_000]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == f"turnbudget eval: error: Expect {flag} to be JSON nested less deeply, or a plain string\n"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("run_dir", ["", " "])
def test_report_refuses_an_empty_run_dir(tmp_path, monkeypatch, capsys, run_dir):
    """``""`` was the working directory, as ``eval --out ""`` would have been."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(["report", run_dir])
    assert exit_.value.code == 2
    assert "argument run_dir: expect a directory path, got an empty one" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("flag", ["--model-path", "--log"])
def test_serve_local_refuses_an_empty_file_path(capsys, flag):
    with pytest.raises(SystemExit) as exit_:
        main(["serve-local", flag, ""])
    assert exit_.value.code == 2
    assert f"argument {flag}: expect a file path, got an empty one" in capsys.readouterr().err


@pytest.mark.parametrize(("name", "why"), [("nowhere.gguf", "no such file"), (".", "a directory")])
def test_serve_local_names_a_model_path_that_is_no_file_with_status_2(tmp_path, capsys, name, why):
    """It was exit code 1, as for a server that failed; the path is checked before llama.cpp
    is needed."""
    model = tmp_path / name
    assert main(["serve-local", "--port", "0", "--model-path", str(model)]) == 2
    assert capsys.readouterr().err == (
        "turnbudget serve-local: error: Expect `model_path` (--model-path) to be a .gguf file, "
        f"got {str(model)!r} ({why})\n"
    )


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["Nope-v0"], "Unknown env id 'Nope-v0'; `turnbudget list` shows them all."),
        (["Maze-Easy-v0", "--seed", "-1"], "Expect `seed` to be an int >= 0 or None, got -1"),
        (["Maze-Easy-v0", "--budget", "0"], "Expect `turn_budget` to be a positive int, got 0"),
    ],
)
def test_play_says_every_refusal_as_an_error_line(capsys, argv, says):
    assert main(["play", *argv]) == 2
    assert capsys.readouterr().err == f"turnbudget play: error: {says}\n"


@pytest.mark.parametrize("card", ["/dev/zero", "fifo"])
def test_export_policy_refuses_a_card_that_is_no_file(tmp_path, monkeypatch, capsys, card):
    """/dev/zero was read until memory ran out, and a FIFO waited for ever."""
    import os

    monkeypatch.chdir(tmp_path)
    if card == "fifo":
        os.mkfifo(card)
    assert main(["export-policy", "zoo/maze-easy/base/seed0", "out", "--card", card]) == 2
    assert f"Expect --card {card!r} to be a file" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_export_policy_refuses_a_card_too_large(tmp_path, capsys):
    card = tmp_path / "card.json"
    card.write_text('{"pad": "' + "x" * (1 << 20) + '"}')
    out = tmp_path / "out"
    assert main(["export-policy", "zoo/maze-easy/base/seed0", str(out), "--card", str(card)]) == 2
    assert "to be at most 1,048,576 bytes" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "--env", "\x1b]0;pwned\x07\x1b[2J"],  # (it set the title, cleared the screen)
        ["eval", "--env", "x" * 100_000],  # (100 KB were printed twice)
        ["eval", "--env", "Maze-Easy-v0", "--n", "x" * 100_000],  # (argparse's own message)
        ["play", "\u202egnp.exe"],
    ],
)
def test_an_error_line_is_printable_and_short_whatever_was_typed(
    tmp_path, monkeypatch, capsys, argv
):
    monkeypatch.chdir(tmp_path)
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    assert code == 2
    err = capsys.readouterr().err
    assert all(c.isprintable() or c == "\n" for c in err)
    assert not any(c in err for c in "\x1b\x07\u202e")
    assert len(err) < 5_000, len(err)


_TITLE = "\x1b]0;pwned\x07"  # (an ESC sequence that sets the terminal's title)


@pytest.mark.parametrize("command", ["train", "export-policy"])
def test_an_error_line_escapes_a_path_named_in_it(tmp_path, monkeypatch, capsys, command):
    """train and export-policy printed their errors as they were, unlike the other commands:
    a directory named with an ESC sequence reached the terminal whole."""
    monkeypatch.chdir(tmp_path)
    held = tmp_path / f"x{_TITLE}"
    held.mkdir()
    if command == "train":  # (an evaluation run there: refused before torch is needed)
        (held / "run.json").write_text("{}")
        argv = ["train", "--algo", "bc", "--out", str(held)]
    else:  # (a policy there already)
        (held / "weights.npz").write_bytes(b"")
        argv = ["export-policy", "zoo/maze-easy/base/seed0", str(held)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"turnbudget {command}: error: ")
    assert "\x1b" not in err and "\x07" not in err and "\\x1b]0;pwned\\x07" in err


@pytest.mark.parametrize("command", ["eval", "report", "probe", "export-policy"])
def test_a_success_line_escapes_the_path_it_names(tmp_path, monkeypatch, capsys, command):
    """The lines naming what a command wrote printed its path as it was typed (the error lines
    escaped it): a directory named with an ESC sequence reached the terminal whole."""
    monkeypatch.chdir(tmp_path)
    out = f"x{_TITLE}"
    if command in ("eval", "report"):
        argv = [*EVAL, "--no-plots", "--quiet", "--out", out]
        if command == "report":
            assert main(argv) == 0
            argv = ["report", "--no-plots", out]
    elif command == "probe":
        argv = ["probe", "--env", "Maze-Easy-v0", "--tasks", "1", "--baseline-repeats", "1"]
        argv += ["--quiet", "--out", out]
    else:
        argv = ["export-policy", "zoo/maze-easy/base/seed0", out]
    capsys.readouterr()
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "\\x1b]0;pwned\\x07" in printed
    assert "\x1b" not in printed and "\x07" not in printed


def test_eval_takes_a_setting_of_a_number_past_4300_digits_as_text(tmp_path, monkeypatch, capsys):
    """JSON raised ValueError (not JSONDecodeError) on it: a message that named no flag."""
    monkeypatch.chdir(tmp_path)
    assert main([*EVAL, "--no-plots", "--quiet", "--errors", "9" * 5001]) == 2
    assert "Cannot build 'turnbudget/Maze-Easy-v0' with errors=" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["list", "--seeds=--"],
        ["play", "turnbudget/Maze-Easy-v0", "--seed=--"],
        [*EVAL, "--env=--"],
        ["probe", "--env", "Maze-Easy-v0", "--agent=--"],
        ["export-policy", "zoo/maze-easy/base/seed0", "out", "--card=--"],
        ["textworld", "pregen", "--workers=--"],
    ],
)
def test_an_option_given_a_double_dash_value_is_refused_in_one_line(
    tmp_path, monkeypatch, capsys, argv
):
    """argparse (before Python 3.13) takes the "--" of ``--opt=--`` for the end of the options
    and stores [] without the option's type: the commands failed on a list with a traceback
    (``list --seeds=--``: TypeError, ``eval --env=--``: AttributeError)."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    option = next(a for a in argv if a.endswith("=--")).removesuffix("=--")
    assert f"error: argument {option}: expected one argument, got '--'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_list_zoo_takes_family_and_refuses_team(capsys):
    """--zoo ignored --family (every policy listed) and --team, where plain list refuses a
    family that matches nothing."""
    assert main(["list", "--zoo", "--family", "BudgetMix"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()[1:] if line.strip()]
    specs = [s for s in listed if s.startswith("policy:")]
    assert specs and all("/budgetmix/" in s for s in specs)
    assert main(["list", "--zoo", "--family", "nope"]) == 2
    assert "no zoo policy's spec or env contains 'nope'" in capsys.readouterr().err
    assert main(["list", "--zoo", "--team"]) == 2
    assert "expect --zoo or --team, not both" in capsys.readouterr().err


def test_export_policy_into_a_file_says_so(tmp_path, capsys):
    destination = tmp_path / "afile"
    destination.write_text("mine\n")
    assert main(["export-policy", "zoo/maze-easy/base/seed0", str(destination)]) == 2
    err = capsys.readouterr().err
    assert "Expect `destination` to be a directory" in err and "is an existing file" in err
    assert destination.read_text() == "mine\n"


@pytest.mark.parametrize(
    "argv", [["eval", "--k", "1", "--t", "8"], ["probe"]], ids=["eval", "probe"]
)
def test_the_house_policy_is_refused_for_a_single_agent_game(tmp_path, capsys, argv):
    """`--agent house` plays a team game's house policy: every episode failed to run, was
    retried, and the run ended advising a rerun that could never succeed (probe: 25
    probes in a row). It is refused before the output directory is made."""
    out = tmp_path / "out"
    code = main([*argv, "--env", "Maze-Easy-v0", "--tasks", "2", "--agent", "house",
                 "--out", str(out), "--quiet"])  # fmt: skip
    assert code == 2 and not out.exists()
    err = capsys.readouterr().err
    assert "it plays a team game's house policy" in err and "evaluate_team" in err
    assert err.count("\n") == 1


def test_a_warning_on_the_command_line_is_one_line(tmp_path, capsys):
    """Python's form showed the library's file and line, then its source line
    (``result = evaluate.unlocked(``)."""
    import warnings

    from turnbudget.cli import main

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        assert main(["eval", "--env", "Maze-Easy-v0", "--agent", "oracle:0.2", "--t", "5,10",
                     "--tasks", "2", "--quiet", "--no-plots", "--out", str(tmp_path / "run"),
                     "--mode", "truncate", "--reveal", "always"]) == 0  # fmt: skip
    err = capsys.readouterr().err.splitlines()
    warning = [line for line in err if "warning:" in line]
    assert len(warning) == 1 and warning[0].startswith("turnbudget eval: warning: mode='truncate'")
    assert not any(".py:" in line or "evaluate.unlocked" in line for line in err), err


def test_a_run_with_its_stderr_closed_loses_only_its_progress_bar(tmp_path, monkeypatch, capsys):
    """With stderr closed (``2>&-``), the progress bar's first write raised, and eval, probe
    and textworld pregen exited 1 without a word, an eval with an empty log."""
    import sys

    from turnbudget.cli import main

    monkeypatch.setattr(sys, "stderr", None)
    out = tmp_path / "e"
    assert main(["eval", "--env", "turnbudget/Maze-Easy-v0", "--tasks", "2", "--k", "1", "--t",
                 "4", "--out", str(out), "--no-plots"]) == 0  # fmt: skip
    assert (out / "report.md").exists() and len(
        (out / "episodes.jsonl").read_text().splitlines()
    ) == 2
    assert main(["probe", "--env", "turnbudget/Maze-Easy-v0", "--tasks", "2",
                 "--out", str(tmp_path / "p")]) == 0  # fmt: skip


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "--env", "turnbudget/Maze-Easy-v0", "--tasks", "2", "--out"],
        ["probe", "--env", "turnbudget/Maze-Easy-v0", "--tasks", "2", "--out"],
        ["train", "--env", "turnbudget/Maze-Easy-v0", "--algo", "bc", "--out"],
        ["textworld", "pregen", "Cooking-Easy-v0", "--seeds", "0", "--cache-dir"],
    ],
    ids=lambda argv: argv[0] if argv[0] != "textworld" else "pregen",
)
def test_a_refused_output_folder_leaves_none_of_its_parents(tmp_path, monkeypatch, capsys, argv):
    """A folder name too long for the system was refused after its parents had been made,
    and they stayed."""
    from turnbudget.cli import main

    monkeypatch.chdir(tmp_path)
    assert main([*argv, f"p/q/{'x' * 300}"]) == 2
    # (the folder's refusal, or train's for a missing rl extra, before any folder is made)
    assert "error: " in capsys.readouterr().err.splitlines()[-1]
    assert list(tmp_path.iterdir()) == []


def test_probe_says_to_give_out_when_its_agents_cannot_name_the_default_folder(
    tmp_path, monkeypatch, capsys
):
    """The default folder is named after the agents; with many, the name was refused as a
    `label` the caller never gave (and --label is for one agent), with no word of --out."""
    from turnbudget.cli import main

    monkeypatch.chdir(tmp_path)
    agents = [a for e in ("0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "0.15",
                          "0.25", "0.35", "0.45") for a in ("--agent", f"oracle:{e}")]  # fmt: skip
    assert main(["probe", "--env", "turnbudget/Maze-Easy-v0", "--tasks", "2", *agents]) == 2
    err = capsys.readouterr().err
    assert "give --out DIR" in err and "default folder" in err
    assert not (tmp_path / "runs").exists()
    assert main(["probe", "--env", "turnbudget/Maze-Easy-v0", "--tasks", "2", "--quiet", *agents,
                 "--out", "many"]) == 0  # fmt: skip


def test_eval_refuses_a_second_agent_rather_than_dropping_the_first(capsys, tmp_path):
    """``eval --agent A --agent B`` evaluated B alone without a word (``probe`` takes several
    agents, so the habit carries over)."""
    out = tmp_path / "run"
    argv = ["eval", "--env", "turnbudget/Maze-Easy-v0", "--agent", "random", "--agent",
            "oracle", "--k", "1", "--t", "4", "--n", "1", "--tasks", "1", "--out", str(out)]  # fmt: skip
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2 and not out.exists()
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith("turnbudget eval: error: argument --agent: given twice ('random', then")
    assert main([*argv[:3], *argv[5:], "--quiet", "--no-plots"]) == 0  # (once: it runs)


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "--env", "turnbudget/Maze-Easy-v0", "--tasks", "1", "--tasks", "3"],
        ["eval", "--env", "turnbudget/Maze-Easy-v0", "--seed=5", "--seed", "7"],
        ["probe", "--env", "turnbudget/Maze-Easy-v0", "--tasks", "2", "--tasks", "3"],
        ["play", "Maze-Easy-v0", "--turn-budget", "3", "--turn-budget", "4"],
        ["validate", "--env", "turnbudget/Maze-Easy-v0", "--tasks", "2", "--tasks", "3"],
        ["train", "--n-envs", "2", "--n-envs", "3"],
    ],
    ids=["eval-tasks", "eval-seed-equals", "probe", "play", "validate", "train"],
)
def test_an_option_of_one_value_given_twice_is_a_usage_error(argv, capsys, tmp_path):
    """Every option but ``--agent`` took its last value and dropped the first without a
    word: ``--tasks 1 --tasks 3`` ran 3 tasks. Options that take several (``--env``) still do."""
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as info:
        main([*argv, "--out", str(out)] if argv[0] != "play" else argv)
    assert info.value.code == 2 and not out.exists()
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.endswith(": given twice; give it once") and argv[-2].split("=")[0] in err, err


def test_options_that_take_several_values_still_take_them(tmp_path):
    out = tmp_path / "run"
    assert main(["eval", "--env", "turnbudget/Maze-Easy-v0", "--env", "turnbudget/KeyQuest-Easy-v0",
                 "--k", "1", "--t", "4", "--n", "1", "--tasks", "1", "--out", str(out),
                 "--quiet", "--no-plots"]) == 0  # fmt: skip
    episodes = (out / "episodes.jsonl").read_text().splitlines()
    assert len(episodes) == 2


@pytest.mark.parametrize(
    "argv, says",
    [
        (["eval", "--env", "turnbudget/Maze-Easy-v0", "--ts", "8"], "--ts 8 (did you mean --t?)"),
        (
            ["eval", "--env", "Maze-Easy-v0", "--agnet", "oracle"],
            "--agnet oracle (did you mean --agent?)",
        ),
        (["play", "--env", "turnbudget/Maze-Easy-v0"], "--env (env_id is given without a flag)"),
        (["list", "--colour"], "--colour"),
    ],
    ids=["plural-of-the-api", "typo", "positional-as-flag", "nothing-close"],
)
def test_an_unknown_option_is_named_by_its_subcommand_with_the_one_meant(argv, says, capsys):
    """``turnbudget eval --ts 8`` (the Python API's ``ts=``) showed the top parser's usage,
    `turnbudget [-h] [--version] COMMAND ...`, and said nothing of ``--t``."""
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert err.startswith(f"usage: turnbudget {argv[0]} ")
    assert err.splitlines()[-1] == f"turnbudget {argv[0]}: error: unrecognized arguments: {says}"


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--threads", "0"], "Expect `--threads` to be an int >= 1"),
        (["--n-ctx", "0"], "Expect `--n-ctx` to be an int >= 1"),
        (["--cache-mb", "-1"], "Expect `--cache-mb` to be an int >= 0"),
        (["--startup-timeout", "nan"], "Expect `--startup-timeout` to be a positive number"),
        (["--host", "8.8.8.8"], "Expect `--host` to be a loopback address"),
    ],
)
def test_serve_local_names_the_flag_of_a_bad_setting(capsys, flags, says):
    """The server's own messages named its arguments (`n_threads`), which are no flags of
    serve-local; checked before llama.cpp is needed."""
    assert main(["serve-local", "--port", "0", *flags]) == 2
    assert capsys.readouterr().err.startswith(f"turnbudget serve-local: error: {says}")
