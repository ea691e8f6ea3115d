"""Paths the pages name exist: the README's relative links, and every repository file
a page mentions (``benchmarks/speed/throughput.py``), so a moved script cannot leave a page behind.
mkdocs checks the site's own links and anchors."""

from __future__ import annotations

import re

from _doc_blocks import REPO, pages

_NAMED = re.compile(r"\b(?:benchmarks|tests|turnbudget|docs)/[\w./-]+\.(?:py|md|png|json|toml)\b")


def test_every_relative_link_of_the_readme_exists():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    relative = [t.split("#")[0] for t in targets if "://" not in t and not t.startswith("#")]
    assert relative, "the README links to the guides"
    missing = [t for t in relative if not (REPO / t).is_file()]
    assert not missing, f"README links to files that do not exist: {missing}"


def test_every_repository_file_a_page_names_exists():
    missing = {
        f"{page.relative_to(REPO)}: {path}"
        for page in pages()
        for path in _NAMED.findall(page.read_text(encoding="utf-8"))
        if not (REPO / path).exists()
    }
    assert not missing, f"pages name files that do not exist: {sorted(missing)}"
