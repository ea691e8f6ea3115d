"""The snippet runner's conventions: chains, markers, and a failing block failing loudly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _doc_blocks import chains, parse
from _support import HANG_GUARD

RUNNER = Path(__file__).with_name("_run_chain.py")

PAGE = """\
# A page

```python
x = 1
```

<!-- continue -->
```python
assert x == 1
```

<!-- continue -->
<!-- raises: ZeroDivisionError -->
```python
x / 0
```

<!-- skip: needs a GPU -->
```python
import cuda_only
```

<!-- continue -->
```python
cuda_only.run()
```

<!-- run -->
```bash
echo hi
```

```toml
[not] = "run"
```
"""


def _page(tmp_path: Path, text: str) -> Path:
    page = tmp_path / "page.md"
    page.write_text(text, encoding="utf-8")
    return page


def _run(chain) -> subprocess.CompletedProcess:
    blocks = [[str(b.page), b.line, b.code, b.markers.get("raises")] for b in chain.blocks]
    return subprocess.run(
        [sys.executable, str(RUNNER)], input=json.dumps(blocks),
        cwd=chain.head.page.parent, capture_output=True, text=True, timeout=HANG_GUARD, check=False,
    )  # fmt: skip


def test_blocks_group_into_chains_with_their_markers(tmp_path):
    found = chains(_page(tmp_path, PAGE))
    assert [(c.lang, [b.line for b in c.blocks]) for c in found] == [
        ("python", [4, 9, 15]),
        ("python", [20, 25]),  # skipped as a whole: the skip is on its first block
        ("bash", [30]),
    ]
    assert found[1].head.markers == {"skip": "needs a GPU"}
    assert found[0].blocks[-1].markers == {"continue": "", "raises": "ZeroDivisionError"}
    langs = [b.lang for b in parse(tmp_path / "page.md")]
    assert langs == ["python"] * 5 + ["bash", "toml"]


def test_a_chain_shares_one_namespace_and_a_raise_can_be_expected(tmp_path):
    out = _run(chains(_page(tmp_path, PAGE))[0])
    assert out.returncode == 0, out.stderr
    assert "raised ZeroDivisionError as the page says" in out.stderr


def test_a_failing_block_fails_and_points_at_its_page_line(tmp_path):
    page = _page(tmp_path, "Text.\n\n```python\nimport math\n\nmath.sqrt(-1)\n```\n")
    out = _run(chains(page)[0])
    assert out.returncode == 1
    assert f'File "{page}", line 6' in out.stderr  # the page's own line numbers
    assert "ValueError: math domain error" in out.stderr


def test_a_block_that_should_raise_and_does_not_fails(tmp_path):
    page = _page(tmp_path, "<!-- raises: KeyError -->\n```python\n{}.get(1)\n```\n")
    out = _run(chains(page)[0])
    assert out.returncode == 1
    assert "should raise KeyError and did not" in out.stderr


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("<!-- skipp: typo -->\n```python\npass\n```\n", "expect a marker"),
        ("<!-- suite: gpu -->\n```python\npass\n```\n", "expect a marker"),
        ("<!-- skip -->\n```python\npass\n```\n", "expect a marker"),
        ("```bash\necho unmarked\n```\n", "mark a bash block"),
        ("<!-- continue -->\n```python\npass\n```\n", "no python block before it"),
        (
            "```python\npass\n```\n<!-- continue -->\n<!-- skip: x -->\n```python\npass\n```\n",
            "put `skip`",
        ),
        ("<!-- run -->\n```toml\na = 1\n```\n", "never runs"),
        ("```python\npass\n", "never closes"),
    ],
)
def test_misused_markers_are_errors(tmp_path, text, message):
    with pytest.raises(ValueError, match=message):
        chains(_page(tmp_path, text))
