"""Ctrl-C: one line saying what was saved, exit code 130, no traceback, and the run resumes.

A real ``turnbudget`` process in its own session is sent SIGINT on its whole process group
(as a terminal's Ctrl-C is, pool workers included) while a `GatedOracle` holds it open: the
interrupt lands mid-run, after the first episode is logged, whatever the machine's load.

The process is started with Python's own Ctrl-C handler, as from a terminal: a test run
launched in the background (``cmd &`` in a script, as CI may be) inherits SIGINT ignored,
and Python then installs no handler, so the signal would do nothing at all.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

import pytest
from _faults import GATED_CLI, wait_until
from _support import HANG_GUARD

from turnbudget.cli import INTERRUPTED, main
from turnbudget.records import EPISODES_FILE

MAZE = "turnbudget/Maze-Easy-v0"
REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])}
TASKS = 4
#: `GATED_CLI` with Python's Ctrl-C handler installed, whatever SIGINT's inherited disposition.
CLI = [
    *GATED_CLI[:2],
    "import signal\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n" + GATED_CLI[2],
]


def _eval_args(out: Path, agent: str, workers: int) -> list[str]:
    return [
        "eval", "--env", MAZE, "--agent", agent, "--k", "1", "--t", "20", "--n", "1",
        "--tasks", str(TASKS), "--workers", str(workers), "--out", str(out), "--quiet",
        "--no-plots",
    ]  # fmt: skip


def _interrupt(command: list[str], gate: Path) -> subprocess.CompletedProcess:
    """Run ``command`` in its own session until its agent blocks at the gate, then Ctrl-C."""
    proc = subprocess.Popen(
        command, env=ENV, start_new_session=True, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert wait_until((gate / "blocked").exists, proc), "the run ended on its own"
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=HANG_GUARD)
    finally:
        with contextlib.suppress(ProcessLookupError):  # (what is left of this test's group)
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=HANG_GUARD)
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


@pytest.mark.timeout(600, method="thread")  # a guard: the wait has no deadline
@pytest.mark.parametrize("workers", [1, 2], ids=["local", "pool"])
def test_ctrl_c_during_eval_is_one_line_and_the_run_resumes(workers, tmp_path):
    out, gate = tmp_path / "run", tmp_path / "gate"
    gate.mkdir()
    gated = f"gated:0.3,{gate},{out / EPISODES_FILE},1"  # blocks once one episode is logged
    stopped = _interrupt([*CLI, *_eval_args(out, gated, workers)], gate)
    saved = len(_lines(out / EPISODES_FILE))
    assert 1 <= saved < TASKS
    episodes = "episode" if saved == 1 else "episodes"
    assert stopped.returncode == INTERRUPTED == 130
    assert stopped.stderr == (
        f"turnbudget eval: interrupted: {saved} {episodes} saved in {out}; "
        "rerun the same command to resume\n"
    )
    # The same command (the gated agent is the oracle's run: same name and repr) resumes.
    (gate / "open").touch()
    resumed = subprocess.run(
        [*CLI, *_eval_args(out, gated, workers)], env=ENV, capture_output=True,
        text=True, timeout=HANG_GUARD,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert f"{TASKS} episodes ({TASKS - saved} run now)" in resumed.stdout
    ids = [line.split(b'"episode_id":')[1].split(b",")[0] for line in _lines(out / EPISODES_FILE)]
    assert len(ids) == len(set(ids)) == TASKS


@pytest.mark.timeout(600, method="thread")
def test_ctrl_c_during_probe_is_one_line(tmp_path):
    gate = tmp_path / "gate"
    gate.mkdir()
    gated = f"gated:0.0,{gate},{tmp_path / 'no-log'},0"  # blocks on its first probe
    command = [*CLI, "probe", "--env", MAZE, "--agent", gated, "--tasks", "2",
               "--out", str(tmp_path / "probe"), "--quiet"]  # fmt: skip
    stopped = _interrupt(command, gate)
    assert stopped.returncode == 130
    assert stopped.stderr.startswith("turnbudget probe: interrupted: no probe result saved")
    assert stopped.stderr.count("\n") == 1 and "Traceback" not in stopped.stderr


def test_ctrl_c_during_eval_is_one_line(monkeypatch, capsys, tmp_path):
    from turnbudget import eval as eval_package

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    interrupted.unlocked = interrupted  # (the command line holds the directory itself)
    monkeypatch.setattr(eval_package, "evaluate", interrupted)
    out = tmp_path / "run"
    argv = ["eval", "--env", MAZE, "--k", "1", "--t", "3", "--tasks", "1", "--out", str(out)]
    assert main([*argv, "--quiet", "--no-plots"]) == 130
    assert capsys.readouterr().err == (
        f"turnbudget eval: interrupted: 0 episodes saved in {out}; "
        "rerun the same command to resume\n"
    )


def test_ctrl_c_during_validate_is_one_line(monkeypatch, capsys):
    from turnbudget.eval.probes import validate

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(validate, "validate", interrupted)
    assert main(["validate", "--env", MAZE, "--tasks", "1", "--quiet"]) == 130
    err = capsys.readouterr().err
    assert err.startswith("turnbudget validate: interrupted: no probe result saved")
    assert err.count("\n") == 1


def test_ctrl_c_during_validate_s_checks_says_its_probes_are_saved(tmp_path, monkeypatch, capsys):
    """Interrupted while it judged the checks, its probes' results already written, validate
    said "no probe result saved"."""
    from turnbudget.eval.probes import validate

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(validate, "control_checks", interrupted)
    out = tmp_path / "v"
    assert main(["validate", "--env", MAZE, "--tasks", "4", "--quiet", "--out", str(out)]) == 130
    err = capsys.readouterr().err
    assert err == (
        f"turnbudget validate: interrupted: the probe results are saved in {out}; the checks "
        "were not made\n"
    )
    assert (out / "probe_summary.json").is_file()


def test_ctrl_c_during_a_rerun_into_an_earlier_probes_folder_saves_nothing(
    tmp_path, monkeypatch, capsys
):
    """The earlier run's probe_summary.json there was read as this run's results "saved"
    (the folder still held the other run's results and report)."""
    from turnbudget.eval.probes import validate

    out = tmp_path / "v"
    main(["validate", "--env", MAZE, "--tasks", "2", "--quiet", "--out", str(out)])  # (1: few)
    earlier = (out / "probe_summary.json").read_bytes()

    class Interrupted:  # (validate calls its probe's unlocked form)
        @staticmethod
        def __wrapped__(*args, **kwargs):
            raise KeyboardInterrupt

    monkeypatch.setattr(validate, "probe", Interrupted)
    argv = ["validate", "--env", MAZE, "--tasks", "3", "--quiet", "--out", str(out), "--overwrite"]
    assert main(argv) == 130
    err = capsys.readouterr().err
    assert err.startswith("turnbudget validate: interrupted: no probe result saved"), err
    assert (out / "probe_summary.json").read_bytes() == earlier


def test_ctrl_c_while_a_probes_agent_loads_saves_nothing(tmp_path, capsys):
    """Interrupted while its agent loaded (a model, a server), the summary an earlier run
    left in --out was taken as this run's results "saved"."""
    out = tmp_path / "p"
    assert main(["probe", "--env", MAZE, "--agent", "oracle", "--tasks", "2", "--quiet",
                 "--out", str(out)]) == 0  # fmt: skip
    (tmp_path / "slow.py").write_text("raise KeyboardInterrupt  # (Ctrl-C while it loads)\n")
    argv = ["probe", "--env", MAZE, "--agent", f"{tmp_path / 'slow.py'}:Agent", "--no-sealed",
            "--tasks", "3", "--quiet", "--out", str(out), "--overwrite"]  # fmt: skip
    capsys.readouterr()
    assert main(argv) == 130
    assert capsys.readouterr().err.startswith(
        "turnbudget probe: interrupted: no probe result saved"
    )


@pytest.mark.parametrize("command", ["probe", "validate"])
def test_an_out_with_a_nul_is_one_line_before_any_probe(command, capsys):
    """Stamping the summary there before the run raised "embedded null byte" out of main."""
    argv = [command, "--env", MAZE, "--tasks", "1", "--quiet", "--out", "p\x00x"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "NUL" in err


def test_ctrl_c_in_any_other_command_is_one_line(monkeypatch, capsys):
    from turnbudget.cli import list as list_command

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(list_command, "run", interrupted)
    assert main(["list"]) == 130
    assert capsys.readouterr().err == "turnbudget list: interrupted: stopped\n"


def test_the_interrupt_message_counts_only_whole_episode_lines(tmp_path):
    from turnbudget.cli.eval import _saved_episodes

    assert _saved_episodes(tmp_path / "none").startswith("0 episodes saved")
    (tmp_path / EPISODES_FILE).write_bytes(b'{"a": 1}\n{"b": 2}\n{"torn')
    assert _saved_episodes(tmp_path) == (
        f"2 episodes saved in {tmp_path}; rerun the same command to resume"
    )


def test_ctrl_c_before_the_command_runs_is_one_line(monkeypatch, capsys):
    """While the parser is built, and (``python -m turnbudget``) while the library is
    imported: one line and 130, not a traceback of whatever was loading."""
    import runpy
    import sys

    import turnbudget.cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(turnbudget.cli, "build_parser", interrupted)
    try:
        code = main(["list"])
    except KeyboardInterrupt:  # (escaping, it would stop the whole test session)
        pytest.fail("Ctrl-C while the parser was built escaped main")
    assert code == INTERRUPTED
    assert capsys.readouterr().err == "turnbudget: interrupted\n"

    class InterruptedImport:  # a finder that stops the import of turnbudget.cli
        def find_spec(self, name, path=None, target=None):
            if name == "turnbudget.cli":
                raise KeyboardInterrupt

    monkeypatch.delitem(sys.modules, "turnbudget.cli")
    monkeypatch.setattr(sys, "meta_path", [InterruptedImport(), *sys.meta_path])
    with pytest.raises(SystemExit) as exit_:
        try:
            runpy.run_module("turnbudget", run_name="__main__")
        except KeyboardInterrupt:
            pytest.fail("Ctrl-C while the library was imported escaped python -m turnbudget")
    assert exit_.value.code == INTERRUPTED
    assert capsys.readouterr().err == "turnbudget: interrupted\n"


# Put where a child finds it first: holds the child's first import of gymnasium (the library's
# own imports, before any of the command's code runs) until Ctrl-C, having said so on stdout.
_IMPORT_GATE = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # (as from a terminal)

class Gate:
    def find_spec(self, name, path=None, target=None):
        if name == "gymnasium":
            sys.meta_path.remove(self)
            os.write(1, b"importing gymnasium\\n")
            signal.pause()  # (until SIGINT, whose handler raises here, or at once if it came)

sys.meta_path.insert(0, Gate())
"""


def _console_script() -> str:
    import shutil
    import sys

    script = shutil.which("turnbudget", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("no turnbudget script beside this interpreter")
    return script


@pytest.mark.timeout(600, method="thread")
@pytest.mark.parametrize("entry", ["-m turnbudget", "-m turnbudget.cli", "script"])
def test_ctrl_c_while_the_command_imports_the_library_is_one_line(entry, tmp_path):
    """The command's first ~0.2 s import the library (``import turnbudget``: gymnasium, the
    registry), before `main` or a ``__main__`` module can catch anything: Ctrl-C there printed
    a traceback of whatever was loading and ended the process by SIGINT."""
    import sys

    (tmp_path / "sitecustomize.py").write_text(_IMPORT_GATE)
    start = [_console_script()] if entry == "script" else entry.split()
    env = {**ENV, "PYTHONPATH": os.pathsep.join([str(tmp_path), ENV["PYTHONPATH"]])}
    proc = subprocess.Popen(
        [sys.executable, *start, "list"], env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout.readline() == "importing gymnasium\n", proc.communicate()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=HANG_GUARD)
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait(timeout=HANG_GUARD)
    assert (proc.returncode, err, out) == (INTERRUPTED, "turnbudget: interrupted\n", "")


def test_a_program_importing_the_library_keeps_its_ctrl_c(monkeypatch):
    """Only the command turns Ctrl-C during the import into its one line: elsewhere
    (``python -m othertool``, a script, a notebook) the KeyboardInterrupt is the program's."""
    import sys

    import turnbudget

    for argv, orig, command in [
        (["/venv/bin/turnbudget", "list"], ["/venv/bin/python", "/venv/bin/turnbudget", "list"],
         True),
        (["-m", "list"], ["python", "-m", "turnbudget", "list"], True),
        (["-m"], ["python", "-Im", "turnbudget.cli"], True),
        (["-m", "x"], ["python", "-mturnbudget", "x"], True),
        (["-m", "turnbudget"], ["python", "-m", "othertool", "turnbudget"], False),
        (["train.py"], ["python", "train.py"], False),
        (["-c"], ["python", "-c", "import turnbudget"], False),
        ([""], ["python"], False),
        (["-m", "a", "b", "c"], ["python", "-m"], False),  # (argv set by an embedding program)
    ]:  # fmt: skip
        monkeypatch.setattr(sys, "argv", argv)
        monkeypatch.setattr(sys, "orig_argv", orig)
        assert turnbudget._started_as_the_command() is command, orig
