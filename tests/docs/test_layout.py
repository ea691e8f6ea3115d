"""The Layout section of docs/contributing.md lists exactly the package's folders and top modules."""

from __future__ import annotations

import re

from _doc_blocks import REPO, parse

PAGE = REPO / "docs" / "contributing.md"


def _listed() -> set[str]:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index("## Layout")
    block = next(b for b in parse(PAGE) if b.lang == "text" and b.line > text[:start].count("\n"))
    lines = block.code.splitlines()
    assert lines[0] == "turnbudget/", "the Layout block starts with the package"
    # Entries are the first word of a line indented by exactly two spaces, up to the next top level.
    entries = []
    for line in lines[1:]:
        if not line.startswith("  "):
            break
        if entry := re.match(r"^  (\S+)", line):
            entries.append(entry[1])
    return set(entries)


def _actual() -> set[str]:
    package = REPO / "turnbudget"
    folders = {
        f"{init.parent.relative_to(package).as_posix()}/"
        for init in package.rglob("__init__.py")
        if init.parent != package
    }
    modules = {
        path.name
        for path in package.glob("*.py")
        if path.name not in {"__init__.py", "__main__.py"}
    }
    return folders | modules


def test_the_layout_lists_every_package_folder_and_top_module():
    listed, actual = _listed(), _actual()
    assert not actual - listed, f"add to the Layout in {PAGE.name}: {sorted(actual - listed)}"
    assert not listed - actual, (
        f"gone from the package, still in the Layout: {sorted(listed - actual)}"
    )
