"""The `turnbudget` command line: list and play, run as a user would (``python -m turnbudget``)."""

from __future__ import annotations

import os
import subprocess
import sys

from _support import HANG_GUARD

from turnbudget.cli import main
from turnbudget.cli.list import env_table


def run_cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "turnbudget", *args],
        input=stdin, capture_output=True, text=True, timeout=HANG_GUARD,
    )  # fmt: skip


def test_list_shows_every_native_id_with_budget_and_optimal_range():
    out = run_cli("list", "--seeds", "3")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split()[:4] == ["id", "family", "difficulty", "budget"]
    row = next(line for line in lines if line.startswith("turnbudget/Maze-Hard-v0"))
    _, family, difficulty, budget, optimal = row.split()
    assert (family, difficulty, budget) == ("Maze", "Hard", "128")
    low, high = map(int, optimal.split("-"))
    assert 35 <= low <= high <= 60


def test_env_table_measures_lengths_that_grow_with_difficulty():
    rows = {row["id"]: row for row in env_table(seeds=3, family="KeyQuest")}
    assert set(rows) >= {f"turnbudget/KeyQuest-{d}-v0" for d in ("Easy", "Medium", "Hard")}
    highs = [
        int(rows[f"turnbudget/KeyQuest-{d}-v0"]["optimal"].split("-")[1])
        for d in ("Easy", "Medium", "Hard")
    ]
    assert highs == sorted(highs)


def test_list_says_what_a_dash_means_and_when_a_family_matches_nothing(capsys):
    """With --seeds 0 every '-' was put down to a game slow to generate, a --family that
    matched nothing printed a bare header (exit 0), and --team ignored --family."""
    assert main(["list", "--seeds", "0", "--family", "Maze"]) == 0
    out = capsys.readouterr().out
    assert "'-': not measured (--seeds 0)." in out and "slow to generate" not in out
    assert main(["list", "--seeds", "0", "--team"]) == 0
    assert "slow to generate" not in capsys.readouterr().out
    assert main(["list", "--family", "Coin"]) == 0  # (TextWorld: slow, so not measured)
    assert "'-': slow to generate, not measured" in capsys.readouterr().out
    assert main(["list", "--family", "Mzae"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == (
        "turnbudget list: error: no id's family contains 'Mzae'; `turnbudget list` shows them all."
    )
    assert main(["list", "--team", "--seeds", "0", "--family", "vault"]) == 0
    listed = {line.split()[0] for line in capsys.readouterr().out.splitlines()[1:4]}
    assert listed == {"vault_v0"}
    assert main(["list", "--team", "--family", "Mzae"]) == 2
    assert "no team game's name contains 'Mzae'" in capsys.readouterr().err


def test_play_shows_turns_left_help_and_quits():
    out = run_cli(
        "play", "Maze-Easy-v0", "--seed", "1", "--budget", "5", stdin="help\nlook\nquit\n"
    )
    assert out.returncode == 0, out.stderr
    assert "[5 turns left]" in out.stdout and "[4 turns left]" in out.stdout
    assert "You can: " in out.stdout and "look" in out.stdout


def test_play_until_the_budget_runs_out():
    out = run_cli(
        "play", "turnbudget/KeyQuest-Easy-v0", "--seed", "0", "--budget", "2", stdin="look\nxyzzy\n"
    )
    assert out.returncode == 0
    assert "Out of turns. Turns used: 2 of 2." in out.stdout


def test_play_rejects_unknown_ids_and_bad_budgets():
    assert run_cli("play", "Nope-v0").returncode == 2
    bad = run_cli("play", "Maze-Easy-v0", "--budget", "0")
    assert bad.returncode == 2 and "positive int" in bad.stderr
    # Both names: the later one silently won (train refuses the pair)
    both = run_cli("play", "Maze-Easy-v0", "--turn-budget", "3", "--budget", "5")
    assert both.returncode == 2 and "Got --turn-budget and its old name --budget" in both.stderr


def test_play_ends_cleanly_on_end_of_input():
    assert main(["list", "--seeds", "0", "--family", "Maze"]) == 0
    assert run_cli("play", "Maze-Easy-v0", "--seed", "0", stdin="").returncode == 0


def test_play_takes_a_line_that_is_not_utf8_as_a_command():
    """Under a strict stdin (as LANG=en_US.UTF-8 gives) a Latin-1 line ended the game in a
    UnicodeDecodeError traceback."""
    played = subprocess.run(
        [sys.executable, "-m", "turnbudget", "play", "Maze-Easy-v0", "--seed", "0"],
        input=b"caf\xe9\xff\nlook\n", capture_output=True, timeout=HANG_GUARD,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )  # fmt: skip
    assert played.returncode == 0, played.stderr.decode(errors="replace")[-2000:]
    assert b"Traceback" not in played.stderr
    assert b"[29 turns left]" in played.stdout and b"[28 turns left]" in played.stdout


def test_the_script_module_and_the_cli_package_run_the_same_main():
    by_root = run_cli("list", "--seeds", "0", "--family", "Maze")
    by_package = subprocess.run(
        [sys.executable, "-m", "turnbudget.cli", "list", "--seeds", "0", "--family", "Maze"],
        capture_output=True, text=True, timeout=HANG_GUARD,
    )  # fmt: skip
    assert by_root.returncode == by_package.returncode == 0, by_root.stderr + by_package.stderr
    assert by_root.stdout == by_package.stdout
    assert "turnbudget/Maze-Easy-v0" in by_root.stdout
    usage = run_cli("--help")
    assert usage.returncode == 0
    for command in ("list", "play", "eval", "report", "textworld"):
        assert command in usage.stdout


def test_play_and_list_errors_blank_a_key_typed_where_a_name_was_expected(capsys):
    """Their hand-written error lines skipped `error_line`: the key was printed whole (and a
    100 kB id echoed whole)."""
    key = "sk-proj-X1y2Z3w4abcdefghijklmnop"
    assert main(["play", key]) == 2
    assert main(["list", "--family", key]) == 2
    assert main(["list", "--zoo", "--family", key]) == 2
    err = capsys.readouterr().err
    assert key not in err and err.count("'sk-***'") == 3, err
    assert main(["play", "x" * 100_000]) == 2
    assert len(capsys.readouterr().err) < 5_000


def test_list_names_a_textworld_cache_it_cannot_write_on_its_row(monkeypatch, capsys):
    """The reset that makes a game was outside the try: a cache folder it could not create
    (here under /proc, which no one may write, root included) was a 60-line traceback."""
    monkeypatch.setenv("TURNBUDGET_TEXTWORLD_CACHE", "/proc/turnbudget-no-cache")
    assert main(["list", "--all-games", "--family", "CoinColl", "--seeds", "1"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if "CoinCollector" in line]
    assert rows and all("- (Cannot create the game cache folder" in row for row in rows), rows
