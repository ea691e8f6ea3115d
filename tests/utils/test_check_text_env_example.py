"""The `check_text_env` example of the environments guide runs as a user's script, and fails as shown."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from _support import HANG_GUARD

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "environments.md"


def _blocks() -> list[str]:
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index("### Check your own env: `check_text_env`")
    return re.findall(r"```python\n(.*?)```", text[start:], flags=re.S)[:2]


def _run(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    script = tmp_path / "my_env.py"
    script.write_text(code, encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        check=False,
    )


def test_the_guide_env_passes_check_text_env(tmp_path):
    out = _run(_blocks()[0], tmp_path)
    assert out.returncode == 0, out.stderr
    passed = eval(out.stdout.strip().splitlines()[-1])  # the printed report.checks
    assert passed[:3] == ["gymnasium_checker", "reset_needed", "type_check"]
    assert {"oracle_solves", "oracle_bellman", "setbacks", "hostile_input"} <= set(passed)


def test_the_guide_failure_reads_as_shown(tmp_path):
    example, failure = _blocks()
    shown = " ".join(
        line.lstrip("# ").strip() for line in failure.splitlines() if line.startswith("#")
    )
    out = _run(example + failure, tmp_path)
    assert out.returncode == 1
    assert out.stderr.strip().splitlines()[-1] == shown
