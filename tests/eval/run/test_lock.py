"""One evaluation per output directory; workers end with their evaluator."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from _faults import GATED_CLI, wait_until
from _support import HANG_GUARD

from turnbudget.agents import RandomAgent
from turnbudget.eval.run.evaluate import evaluate
from turnbudget.eval.run.lock import HOLDER_FILE, LOCK_FILE, OutputDirInUse, hold_output_dir
from turnbudget.records import EPISODES_FILE

MAZE = "turnbudget/Maze-Easy-v0"
KEYQUEST = "turnbudget/KeyQuest-Easy-v0"
REPO = Path(__file__).resolve().parents[3]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])}


def _eval_args(out: Path, tasks: int, workers: int = 1, agent: str = "oracle:0.3") -> list[str]:
    return [
        "eval", "--env", f"{MAZE},{KEYQUEST}", "--agent", agent, "--k", "1,2,4",
        "--t", "10,20,40,80", "--n", "4", "--tasks", str(tasks), "--workers", str(workers),
        "--out", str(out), "--quiet", "--no-plots",
    ]  # fmt: skip


def _eval_cmd(out: Path, tasks: int, workers: int = 1) -> list[str]:
    return [sys.executable, "-m", "turnbudget.cli", *_eval_args(out, tasks, workers)]


def _gated_eval(out: Path, gate: Path, tasks: int, workers: int = 1) -> subprocess.Popen:
    """The CLI's evaluation of ``oracle:0.3`` in its own session, held open by a `GatedOracle`
    once one episode is logged (until ``gate/open`` exists)."""
    gate.mkdir()
    agent = f"gated:0.3,{gate},{out / EPISODES_FILE},1"
    return subprocess.Popen(
        [*GATED_CLI, *_eval_args(out, tasks, workers, agent)], env=ENV, start_new_session=True
    )


def _stop(proc: subprocess.Popen) -> None:
    """Kill what this test started: the process group of ``proc`` (its own session)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=HANG_GUARD)


def test_a_second_holder_is_refused_with_the_holder_named(tmp_path):
    with hold_output_dir(tmp_path / "run") as out:
        holder = json.loads((out / HOLDER_FILE).read_text())
        assert holder["pid"] == os.getpid() and holder["host"] == socket.gethostname()
        with pytest.raises(OutputDirInUse, match=rf"pid {os.getpid()} on .*, started 20"):
            evaluate(MAZE, RandomAgent(), ks=[1], ts=[5], tasks=1, out=out, n_bootstrap=0)
        assert not (out / EPISODES_FILE).exists()
    # Released: the directory is usable again, and the holder file is gone.
    assert not (tmp_path / "run" / HOLDER_FILE).exists()
    result = evaluate(MAZE, RandomAgent(), ks=[1], ts=[5], tasks=1, out=out, n_bootstrap=0)
    assert result.n_run == 1


def test_the_cli_refuses_a_held_directory_in_one_line(tmp_path):
    with hold_output_dir(tmp_path / "run") as out:
        done = subprocess.run(
            _eval_cmd(out, tasks=2), env=ENV, capture_output=True, text=True, timeout=HANG_GUARD
        )
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "Traceback" not in done.stderr
    assert f"in use by another evaluation: pid {os.getpid()}" in done.stderr


@pytest.mark.timeout(600, method="thread")  # a guard: the waits below have no deadline
def test_two_concurrent_evaluations_on_one_directory_run_every_episode_once(tmp_path):
    out, gate = tmp_path / "run", tmp_path / "gate"
    first = _gated_eval(out, gate, tasks=10)
    try:
        # Held open by its agent: it cannot finish before the second evaluation is refused.
        assert wait_until((gate / "blocked").exists, first), "the first run ended on its own"
        with pytest.raises(OutputDirInUse, match=f"pid {first.pid} on"):
            evaluate(
                [MAZE, KEYQUEST], RandomAgent(), ks=[1, 2, 4], ts=[10, 20, 40, 80], n=4,
                tasks=10, out=out,
            )  # fmt: skip
        (gate / "open").touch()
        assert first.wait() == 0
    finally:
        _stop(first)
    ids = [json.loads(line)["episode_id"] for line in (out / EPISODES_FILE).open()]
    assert len(ids) == len(set(ids)) == 2 * 10 * 4


@pytest.mark.timeout(600, method="thread")  # a guard: the wait for the gate has no deadline
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads children from /proc")
def test_workers_exit_when_the_evaluator_is_killed(tmp_path):
    gate = tmp_path / "gate"
    proc = _gated_eval(tmp_path / "run", gate, tasks=10, workers=2)

    def workers() -> set[int]:
        pids: set[int] = set()
        for children in Path(f"/proc/{proc.pid}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                pids.update(int(p) for p in children.read_text().split())
        return pids

    try:
        # One worker is held mid-chunk by its agent: the evaluator cannot finish.
        assert wait_until((gate / "blocked").exists, proc), "the run ended on its own"
        started = workers()
        assert len(started) >= 2 and int((gate / "blocked").read_text()) in started
        os.kill(proc.pid, signal.SIGKILL)  # the evaluator only, not its workers
        proc.wait(timeout=HANG_GUARD)
        alive = lambda: {p for p in started if Path(f"/proc/{p}").exists() and _running(p)}  # noqa: E731
        # No deadline (a loaded machine once took over 10 s): a worker held by its agent never
        # ends unless its parent's death ends it, so a regression hangs here until the mark.
        assert wait_until(lambda: not alive()), f"orphaned workers: {alive()}"
    finally:
        _stop(proc)


def _running(pid: int) -> bool:
    """False for a zombie (exited, waiting to be reaped by init)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def test_an_existing_file_as_out_is_a_one_line_error(tmp_path):
    target = tmp_path / "results.txt"
    target.write_text("keep me")
    with pytest.raises(ValueError, match="is an existing file"):
        evaluate(MAZE, RandomAgent(), ks=[1], ts=[5], tasks=1, out=target)
    done = subprocess.run(
        _eval_cmd(target, tasks=1), env=ENV, capture_output=True, text=True, timeout=HANG_GUARD
    )
    assert done.returncode == 2 and "is an existing file" in done.stderr
    assert "Traceback" not in done.stderr and target.read_text() == "keep me"


@pytest.mark.parametrize(
    "name,expect",
    [
        ("a\0b", "got one with a NUL byte"),
        ("x" * 300, "Cannot create the output directory"),
        ("/".join(["y" * 200] * 25), "Cannot create the output directory"),
    ],
    ids=["nul", "long-name", "long-path"],
)
def test_an_out_the_os_cannot_name_is_a_value_error_naming_it(name, expect, tmp_path):
    """A NUL byte gave pathlib's bare "embedded null byte", and a name too long for the OS
    an OSError from looking whether it exists, where `out` is a ValueError naming it."""
    out = f"{tmp_path}/{name}"
    with pytest.raises(ValueError, match=expect) as info:
        evaluate(MAZE, RandomAgent(), ks=[1], ts=[5], tasks=1, out=out)
    assert repr(out)[:60] in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_a_holder_file_that_cannot_be_written_names_it_and_leaves_nothing(tmp_path, monkeypatch):
    """A full disk as the holder file was moved into place left its temporary file (and so
    the output directory made for the run) behind; both go now, and the error names the
    holder file, not the temporary."""
    import errno

    real_replace = os.replace

    def failing(src, dst):
        if str(dst).endswith(HOLDER_FILE):
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(src), None, str(dst))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing)
    out = tmp_path / "new" / "run"
    with pytest.raises(OSError) as info, hold_output_dir(out):
        pass
    assert info.value.errno == errno.EIO and info.value.filename == str(out / HOLDER_FILE)
    assert list(tmp_path.iterdir()) == []


# A command line with credentials in its --base-url: the password, a key in the query.
PASSWORD, QUERY_KEY = "Pw-7Hq2-NOT-TO-BE-SEEN", "qk-5Ts9-NOT-TO-BE-SEEN"
SECRET_URL = f"http://bob:{PASSWORD}@127.0.0.1:9/v1?api-key={QUERY_KEY}"


def _llm_eval_cmd(out: Path) -> list[str]:
    return [
        sys.executable, "-m", "turnbudget.cli", "eval", "--env", MAZE, "--agent", "llm:m",
        "--base-url", SECRET_URL, "--k", "1", "--t", "5", "--tasks", "1", "--out", str(out),
        "--quiet", "--no-plots",
    ]  # fmt: skip


def _assert_no_credentials(text: str, where: str) -> None:
    assert PASSWORD not in text and QUERY_KEY not in text, f"a credential in {where}: {text}"


def test_url_credentials_on_the_command_line_reach_neither_the_lock_file_nor_the_error(
    tmp_path, monkeypatch
):
    """The holder file (left behind by a kill -9) and the "in use" message of a second
    run with the same command blank the --base-url's password and query key."""
    out = tmp_path / "run"
    monkeypatch.setattr(sys, "argv", _llm_eval_cmd(out)[2:])  # as `turnbudget eval ...` sees it
    with hold_output_dir(out):
        holder = (out / HOLDER_FILE).read_text()
        _assert_no_credentials(holder, "the lock's holder file")
        assert "http://***@127.0.0.1:9/v1?api-key=***" in json.loads(holder)["command"]
        with pytest.raises(OutputDirInUse) as refused:
            hold_output_dir(out).__enter__()
        _assert_no_credentials(str(refused.value), "the in-use error")
        done = subprocess.run(
            _llm_eval_cmd(out), env=ENV, capture_output=True, text=True, timeout=HANG_GUARD
        )
    assert done.returncode == 2 and "in use by another evaluation" in done.stderr
    _assert_no_credentials(done.stderr, "the in-use error of the CLI")


def test_a_holder_file_with_credentials_from_an_older_version_is_shown_blanked(tmp_path):
    out = tmp_path / "run"
    with hold_output_dir(out):
        stale = {"pid": 1, "host": "h", "started": "2020", "command": " ".join(_llm_eval_cmd(out))}
        (out / HOLDER_FILE).write_text(json.dumps(stale))
        with pytest.raises(OutputDirInUse, match=r"pid 1 on h.*http://\*\*\*@127") as refused:
            evaluate(MAZE, RandomAgent(), ks=[1], ts=[5], tasks=1, out=out, n_bootstrap=0)
    _assert_no_credentials(str(refused.value), "the in-use error")


_HELD_CHILD = """
import os, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))  # (a read of /dev/zero: MemoryError)
from pathlib import Path
from turnbudget.eval.run.lock import HOLDER_FILE, LOCK_FILE, OutputDirInUse, hold_output_dir
out, kind = Path(sys.argv[1]), sys.argv[2]
with hold_output_dir(out):
    (out / HOLDER_FILE).unlink()
    if kind == "huge":  # (sparse: 8 GiB that take no disk)
        with open(out / HOLDER_FILE, "wb") as f:
            f.truncate(8 << 30)
    elif kind == "fifo":
        os.mkfifo(out / HOLDER_FILE)
    else:
        (out / HOLDER_FILE).symlink_to("/dev/zero")
    try:
        with hold_output_dir(out):
            pass
    except OutputDirInUse as exc:
        print("OutputDirInUse:", exc)
"""


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "huge"])
def test_a_holder_file_that_is_not_a_small_regular_file_is_not_read(tmp_path, kind):
    """A second holder reads the lock's holder file to name the first: read whole, a FIFO there
    blocked the refusal for ever, a link to /dev/zero or a file of GiBs filled the memory.
    (A child process: a regression hangs it, which `HANG_GUARD` reports.)"""
    from _support import run_child

    done = run_child(_HELD_CHILD, str(tmp_path / "run"), kind)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "in use by another evaluation: a process that has not said who it is yet" in (
        done.stdout
    )


def test_a_lock_file_that_is_a_link_is_refused_by_name_and_its_target_untouched(tmp_path):
    """filelock opens with O_NOFOLLOW (nothing written through the link), but the message
    was the OS's "Too many levels of symbolic links", naming neither the link nor a fix."""
    target = tmp_path / "precious.txt"
    target.write_text("kept")
    out = tmp_path / "run"
    out.mkdir()
    (out / LOCK_FILE).symlink_to(target)
    link = r"its \.turnbudget\.lock is a symbolic link.*remove it"
    with pytest.raises(ValueError, match=link), hold_output_dir(out):
        pass
    assert target.read_text() == "kept"
    held = tmp_path / "held"  # a held directory is still refused as such
    with pytest.raises(OutputDirInUse), hold_output_dir(held), hold_output_dir(held):
        pass
