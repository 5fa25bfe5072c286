"""Two import rules import-linter's own contract types cannot say, as contract types of ours.

``lint-imports`` (in ``make check``) loads them through ``contract_types`` in
pyproject.toml; it puts the working directory on ``sys.path``, so run it from
the checkout's root, as the Makefile does.

- ``standard_library_only``: an allow-list. The source modules may import the
  standard library (``sys.stdlib_module_names``) and themselves, nothing else.
  A forbidden contract is a deny-list: it passes an import nobody thought to list.
- ``no_import_cycles``: no module reaches itself through imports, counting every
  import grimp sees (function-local and ``TYPE_CHECKING`` ones included). The
  built-in ``acyclic_siblings`` compares the children of each package, so it
  misses a circle through a package's own ``__init__``; this one does not.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck
from importlinter.domain.helpers import module_expressions_to_modules


def _line(graph: ImportGraph, importer: str, imported: str) -> str:
    details = graph.get_import_details(importer=importer, imported=imported)
    where = ", ".join(f"l.{d['line_number']}" for d in details)
    return f"{importer} -> {imported}" + (f" ({where})" if where else "")


def _within(module: str, packages: set[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


class StandardLibraryOnlyContract(Contract):
    """The source modules (packages, with their descendants) import only the standard
    library and modules inside the source modules."""

    type_name = "standard_library_only"

    source_modules = fields.SetField(subfield=fields.ModuleExpressionField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        # Without external packages in the graph, a third-party import is invisible.
        external = str(self.session_options.get("include_external_packages", "")).lower()
        if external != "true":
            raise ValueError(f"{self.name}: needs include_external_packages = true")
        sources = {
            m.name
            for m in module_expressions_to_modules(graph, self.source_modules)  # type: ignore[arg-type]
        }
        modules = set(sources)
        for source in sources:
            modules |= graph.find_descendants(source)
        refused = sorted(
            (importer, imported)
            for importer in modules
            for imported in graph.find_modules_directly_imported_by(importer)
            if not _within(imported, sources)
            and imported.split(".")[0] not in sys.stdlib_module_names
        )
        lines = [_line(graph, importer, imported) for importer, imported in refused]
        return ContractCheck(kept=not refused, metadata={"lines": lines})

    def render_broken_contract(self, check: ContractCheck) -> None:
        output.print_error("Imports from outside the standard library:")
        for line in check.metadata["lines"]:
            output.print_error(f"  {line}", bold=False)


def _cycles(edges: dict[str, set[str]]) -> Iterator[list[str]]:
    """Each strongly connected set of more than one module (or a module importing itself),
    by Tarjan's algorithm, iteratively (import chains can be deep)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges[node]:
                    yield sorted(component)


class NoImportCyclesContract(Contract):
    """No import circle among the modules of the root packages."""

    type_name = "no_import_cycles"

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        roots = set(self.session_options["root_packages"])
        internal = {m for m in graph.modules if _within(m, roots)}
        edges = {
            m: {i for i in graph.find_modules_directly_imported_by(m) if i in internal}
            for m in internal
        }
        circles = [
            [_line(graph, a, b) for a in members for b in sorted(edges[a]) if b in members]
            for members in _cycles(edges)
        ]
        return ContractCheck(kept=not circles, metadata={"circles": circles})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for number, lines in enumerate(check.metadata["circles"], start=1):
            output.print_error(f"Import circle {number}, through these imports:")
            for line in lines:
                output.print_error(f"  {line}", bold=False)
            output.new_line()
