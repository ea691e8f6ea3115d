"""``turnbudget textworld pregen`` refuses what it cannot do before starting any work: more
workers than a machine takes (it forked every one up front), and a cache root it cannot use
(a traceback once the first game was due). Its games themselves:
tests/envs/textworld/test_textworld_cache.py."""

from __future__ import annotations

import json
import os

import pytest

from turnbudget.cli import main, textworld
from turnbudget.eval.run.backends import MAX_LOCAL_WORKERS

pytest.importorskip("textworld")

PREGEN = ["textworld", "pregen", "turnbudget/CoinCollector-Easy-v0", "--no-progress"]


@pytest.fixture
def pool(monkeypatch) -> list[int]:
    """The workers of each pool `pregen` starts; the pool runs in this process, and each game
    is "generated" with no TextWorld run."""
    asked: list[int] = []

    class RecordingPool:
        def __init__(self, max_workers: int):
            asked.append(max_workers)

        def __enter__(self) -> RecordingPool:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def map(self, fn, jobs):
            return map(fn, jobs)

    monkeypatch.setattr(textworld, "ProcessPoolExecutor", RecordingPool)
    monkeypatch.setattr(textworld, "_pregen_one", lambda job: (job[0], job[1], 3))
    return asked


@pytest.mark.parametrize(("seeds", "asked"), [("0-2", [3]), ("0", [])])
def test_pregen_starts_no_more_workers_than_games(tmp_path, capsys, pool, seeds, asked):
    argv = [*PREGEN, "--seeds", seeds, "--cache-dir", str(tmp_path), "--workers", "40"]
    assert main(argv) == 0
    assert pool == asked  # (one game: played in this process)
    assert "longest walkthrough 3" in capsys.readouterr().out


def test_pregen_refuses_more_workers_than_the_pool_backend_takes(tmp_path, capsys, pool):
    workers = str(MAX_LOCAL_WORKERS + 1)
    argv = [*PREGEN, "--seeds", "0-999", "--cache-dir", str(tmp_path), "--workers", workers]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert (
        err == f"turnbudget textworld: error: Expect --workers to be at most 256, got {workers}\n"
    )
    assert pool == []
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("where", ["under a file", "the null device", "a dangling link"])
def test_pregen_refuses_a_cache_dir_it_cannot_use_in_one_line(tmp_path, capsys, where):
    (tmp_path / "file").write_text("")
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")  # (exists() is False: mkdir fails)
    cache = {
        "under a file": str(tmp_path / "file" / "sub"),
        "the null device": os.devnull,
        "a dangling link": str(tmp_path / "link"),
    }[where]
    assert main([*PREGEN, "--seeds", "0", "--cache-dir", cache]) == 2
    err = capsys.readouterr().err
    assert err.startswith("turnbudget textworld: error: ") and repr(cache) in err, err
    assert len(err.splitlines()) == 1, err


def test_pregen_refuses_an_empty_cache_dir_and_counts_each_id_once(tmp_path, capsys, pool):
    """``--cache-dir ''`` fell back to the default cache (``cache_dir=""`` is refused), and an
    id named twice was generated and reported twice."""
    with pytest.raises(SystemExit) as exit_:
        main([*PREGEN, "--seeds", "0", "--cache-dir", ""])
    assert exit_.value.code == 2
    assert "--cache-dir: expect a directory path, got an empty one" in capsys.readouterr().err
    argv = [*PREGEN[:3], *PREGEN[2:], "--seeds", "0-1", "--json", "--cache-dir", str(tmp_path)]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["games"] == 2, lines


def test_pregen_takes_an_id_without_its_prefix_as_every_subcommand_does(tmp_path, capsys, pool):
    """ "Cooking-Easy-v0" was an unknown id here, and only here."""
    argv = [*PREGEN[:2], "CoinCollector-Easy-v0", "--no-progress", "--seeds", "0", "--json"]
    assert main([*argv, "--cache-dir", str(tmp_path)]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert json.loads(line)["env_id"] == "turnbudget/CoinCollector-Easy-v0"
    assert main([*PREGEN[:2], "vault_v0", "--cache-dir", str(tmp_path)]) == 2  # (a team game)
    assert "vault_v0" in capsys.readouterr().err


@pytest.mark.parametrize("text", ["[]", '{"metadata": {"walkthrough": 5}}', "{"])
def test_pregen_of_an_entry_whose_json_is_no_games_names_it_in_one_line(tmp_path, capsys, text):
    """A cache entry whose .json was changed by hand (its marker made again) was a bare
    AttributeError traceback ('list' object has no attribute 'get'), or an error naming no
    file."""
    import hashlib

    from _support import copy_shipped_textworld_games

    cache = copy_shipped_textworld_games(tmp_path / "cache")
    entries = sorted(cache.glob("coin_collector-*"))  # (each variant's: the easy one among them)
    for entry in entries:
        (entry / "0.json").write_text(text)
        digest = {name: hashlib.sha256((entry / f"0.{name}").read_bytes()).hexdigest()
                  for name in ("z8", "json")}  # fmt: skip
        (entry / "0.ok").write_text(json.dumps(digest))
    code = main([*PREGEN, "--seeds", "0", "--cache-dir", str(cache)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert any(f"{entry / '0.json'}: " in err for entry in entries), err
