"""A Griffe extension that reads turnbudget's docstrings as the project writes them.

Loaded by mkdocstrings (``mkdocs.yml``). It changes nothing in the package; it
only adapts what static analysis sees:

- **Lazy exports.** Packages such as ``turnbudget.eval`` list names in
  ``__all__`` that their module ``__getattr__`` (PEP 562) imports on first use,
  so static analysis cannot see them. Each such name is imported the way a user
  would (``getattr(module, name)``) and added as an alias to where it is
  defined, so ``::: turnbudget.eval`` documents ``evaluate`` and no page has to
  name the private module that holds it (which may move).
- **``Example:`` sections.** The docstrings head their doctests ``Example:``,
  which Google style (Napoleon) reads as ``Examples:``; Griffe only knows the
  plural and would render the doctests as prose.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from typing import Any

import griffe

_EXAMPLE = re.compile(r"^(\s*)Example:[ \t]*$", flags=re.M)


class TurnbudgetDocstrings(griffe.Extension):
    """Alias lazily exported names; read ``Example:`` sections as ``Examples:``."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _EXAMPLE.sub(r"\1Examples:", obj.docstring.value)

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        for module in _modules(pkg):
            if "__getattr__" in module.members and module.exports:
                _alias_lazy_exports(module)


def _alias_lazy_exports(module: griffe.Module) -> None:
    for name in map(str, module.exports):
        if name in module.members and not _is_submodule(module.members[name]):
            continue  # statically visible (a submodule of the same name is not the export)
        value = getattr(importlib.import_module(module.path), name)
        target = f"{value.__module__}.{value.__qualname__}"
        module.set_member(name, griffe.Alias(name, target, parent=module))


def _modules(module: griffe.Module) -> Iterator[griffe.Module]:
    yield module
    for member in module.members.values():
        if not member.is_alias and member.is_module:
            yield from _modules(member)


def _is_submodule(member: griffe.Object | griffe.Alias) -> bool:
    return not member.is_alias and member.is_module
