"""What `pip install citadel` needs: every import declared, the version, the shipped files.

scripts/check-pip-install (CI) installs the package into fresh venvs and runs it;
these are the fast checks of the same promises.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

from typer.testing import CliRunner

import citadel
from citadel.adapters.embedding import minilm
from citadel.entrypoints.cli import app

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "citadel"


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    names = set()
    for requirement in project["dependencies"]:
        match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
        assert match, requirement
        names.add(canonical(match.group(0)))
    return names


def third_party_imports() -> dict[str, set[str]]:
    """Top-level module -> the files importing it (absolute imports, stdlib and citadel aside)."""
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text("utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.partition(".")[0]
                if top != "citadel" and top not in sys.stdlib_module_names:
                    found.setdefault(top, set()).add(str(path.relative_to(PACKAGE)))
    return found


def test_version_prints_the_installed_distributions_version() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.output == f"citadel {importlib.metadata.version('citadel')}\n"
    assert citadel.__version__ == importlib.metadata.version("citadel")


def test_every_third_party_import_is_a_declared_dependency() -> None:
    imports = third_party_imports()
    assert {"numpy", "onnxruntime", "fastapi"} <= imports.keys()  # the walk sees them
    distributions = importlib.metadata.packages_distributions()
    wanted = declared()
    missing = {}
    for module, files in sorted(imports.items()):
        owners = {canonical(d) for d in distributions.get(module, [])}
        if not owners:
            missing[module] = f"not installed (imported by {sorted(files)})"
        elif not owners & wanted:
            missing[module] = f"from {sorted(owners)}, undeclared (imported by {sorted(files)})"
    assert not missing, f"declare in pyproject.toml [project].dependencies: {missing}"


def test_the_packages_the_embedder_reads_files_from_are_declared_or_citadel() -> None:
    wanted = declared()
    for package in (minilm.MODEL_PACKAGE, minilm.TOKENIZER_PACKAGE):
        top = package.partition(".")[0]
        owners = {canonical(d) for d in importlib.metadata.packages_distributions().get(top, [])}
        assert top == "citadel" or owners & wanted, f"{package}: from {owners}, undeclared"


def test_the_shipped_tokenizer_is_the_pinned_file_with_its_notice() -> None:
    folder = PACKAGE / "adapters" / "embedding" / "model"
    digest = hashlib.sha256((folder / "tokenizer.json").read_bytes()).hexdigest()
    assert digest == minilm.TOKENIZER_SHA256
    assert "Apache License 2.0" in (folder / "NOTICE").read_text("utf-8")


def test_license_and_typing_marker_are_there() -> None:
    assert "Apache License" in (ROOT / "LICENSE").read_text("utf-8")
    assert "Version 2.0, January 2004" in (ROOT / "LICENSE").read_text("utf-8")
    assert (PACKAGE / "py.typed").is_file()
