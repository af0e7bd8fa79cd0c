"""Only the fenced folders may touch a library's private parts.

A private part is a module or name whose last component starts with one
underscore (``oslo_policy._checks``, ``adapter._transaction``). An attribute
``x._name`` counts unless the project itself defines ``_name`` somewhere: then
it is taken for ours. Run by ``make lint``; exit 1 lists each use outside
the fences, by file and line.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("placement_api", "scheduler", "agent", "placement_client", "flavors")
# Where a bypass of a library may live (docs/architecture.md, "The API: layers and modules").
FENCED = (
    "placement_api/web/fastpath/",
    "placement_api/auth/fastpath/",
    "placement_api/serving/",
    "placement_api/db/",
)
# Public API despite the underscore: namedtuple's methods, os._exit.
PUBLIC = frozenset({"_asdict", "_replace", "_fields", "_make", "_field_defaults", "_exit"})


@dataclass(frozen=True, order=True)
class Use:
    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in PUBLIC


def _ours(module: str) -> bool:
    return module.split(".")[0] in PACKAGES or module.startswith(".")


def defined_names(trees: Iterable[ast.AST]) -> set[str]:
    """Every private name the project defines: functions, classes, attributes, fields."""
    names: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.alias) and node.asname:
                names.add(node.asname)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names.add(node.value)  # __slots__ entries, getattr by name
    return {name for name in names if _private(name)}


def _library_names(tree: ast.AST) -> set[str]:
    """The names this file binds to a library's modules and classes."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not _ours(node.module):
            names.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if not _ours(alias.name):
                    names.add(alias.asname or alias.name.split(".")[0])
    return names


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def private_uses(path: str, tree: ast.AST, ours: set[str]) -> Iterator[Use]:
    library = _library_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and any(_root_name(b) in library for b in node.bases):
            for item in node.body:
                # A decorated one is new (a pydantic validator), not an override.
                if not isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                if _private(item.name) and not item.decorator_list:
                    yield Use(path, item.lineno, f"overrides {node.name}.{item.name}")
        if isinstance(node, ast.ImportFrom) and node.module and not _ours(node.module):
            if any(_private(part) for part in node.module.split(".")):
                yield Use(path, node.lineno, f"imports {node.module}")
            for alias in node.names:
                if _private(alias.name):
                    yield Use(path, node.lineno, f"imports {node.module}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if not _ours(alias.name) and any(_private(part) for part in parts):
                    yield Use(path, node.lineno, f"imports {alias.name}")
        elif isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in ours:
            yield Use(path, node.lineno, f"uses .{node.attr}")


def violations(root: Path) -> list[Use]:
    files = sorted(
        path
        for package in PACKAGES
        if (root / package).is_dir()
        for path in (root / package).rglob("*.py")
    )
    trees = {path.relative_to(root).as_posix(): ast.parse(path.read_text()) for path in files}
    ours = defined_names(trees.values())
    return sorted(
        use
        for path, tree in trees.items()
        if not path.startswith(FENCED)
        for use in private_uses(path, tree, ours)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", type=Path, default=Path("."))
    found = violations(parser.parse_args(argv).root)
    for use in found:
        print(use)
    if found:
        print(f"{len(found)} uses of a library's private parts outside {', '.join(FENCED)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
