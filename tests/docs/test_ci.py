"""`.ci/run` runs the README's test command, and a failure in it stops the run."""

from __future__ import annotations

import re
import subprocess

from _doc_blocks import REPO


def _readme_test_command() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"```bash\n(.*pytest -n auto)\n```", text)
    assert len(commands) == 1, "the README's Quick start shows one test command"
    return commands[0]


def test_ci_runs_the_readme_test_command_and_stops_when_it_fails(tmp_path):
    command = _readme_test_command()
    lines = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    # Under `set -e` a failing step inside an && list does not stop a script: only the
    # status of a subshell around the list does.
    assert f"({command})" in lines, "expect .ci/run to run the README's command in a subshell"
    # The same shape, its first step failing: the script stops there.
    script = tmp_path / "run"
    script.write_text(
        f"set -euo pipefail\n({command.replace('python3 -m venv', 'false', 1)})\necho went on\n"
    )
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=False)
    assert done.returncode != 0 and "went on" not in done.stdout
