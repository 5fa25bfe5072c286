"""docs/architecture.md names the module that owns each stage; it must match the tree.

Every path it names exists, and every module of ``src/citadel`` (bar package
``__init__`` files and the generated gRPC stubs) is named by some row, so the map
cannot drift from the code in either direction.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "citadel"
DOC = ROOT / "docs" / "architecture.md"
# `dir/` (`a.py`, `b.py`): the names in the parentheses live in that folder.
GROUP = re.compile(r"`([\w/]+/)` \(((?:`[\w.]+/?`(?:, )?)+)\)")
TOKEN = re.compile(r"`([^`\s]+)`")


def named_paths(text: str) -> set[str]:
    paths: set[str] = set()
    for line in text.splitlines():
        for group in GROUP.finditer(line):
            base = group.group(1)
            paths.add(base)
            paths.update(base + name for name in TOKEN.findall(group.group(2)))
        rest = GROUP.sub("", line)
        paths.update(t for t in TOKEN.findall(rest) if t.endswith((".py", "/")))
    return paths


def test_every_path_the_map_names_exists() -> None:
    missing = []
    for path in sorted(named_paths(DOC.read_text(encoding="utf-8"))):
        where = ROOT if path.startswith(("scripts/", "tests/", "docs/")) else PACKAGE
        if not (where / path).exists():
            missing.append(path)
    assert missing == [], f"docs/architecture.md names paths that are gone: {missing}"


def test_every_module_of_the_tree_is_on_the_map() -> None:
    named = named_paths(DOC.read_text(encoding="utf-8"))
    modules = {
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py" and "gen" not in path.relative_to(PACKAGE).parts
    }
    unnamed = sorted(modules - named)
    assert unnamed == [], f"modules docs/architecture.md does not place: {unnamed}"


def test_the_reader_of_the_map_understands_groups() -> None:
    line = "| x | `adapters/parsers/pdf/` (`outline.py`, `parser.py`), `bootstrap.py` |"
    assert named_paths(line) == {
        "adapters/parsers/pdf/",
        "adapters/parsers/pdf/outline.py",
        "adapters/parsers/pdf/parser.py",
        "bootstrap.py",
    }
