"""The README's relative links and images point at files that exist (mkdocs checks the site's)."""

from __future__ import annotations

import re

from _doc_blocks import REPO


def test_every_relative_link_of_the_readme_exists():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    relative = [t.split("#")[0] for t in targets if "://" not in t and not t.startswith("#")]
    assert relative, "the README links to the guides"
    missing = [t for t in relative if not (REPO / t).is_file()]
    assert not missing, f"README links to files that do not exist: {missing}"
