"""SQL for the access scope and search filters, shared by every search path."""

from __future__ import annotations

from citadel.adapters.sqlite.rows import section_key
from citadel.domain.model import SearchFilters
from citadel.domain.source import AccessScope


def scope_and_filters(scope: AccessScope, filters: SearchFilters) -> tuple[str, list[object]]:
    """A WHERE fragment over ``s`` (sources) and ``c`` (chunks), and its parameters.

    Everything here is a parameter; no value is ever spliced into the SQL text.
    """
    sql = " AND s.deleted = 0 AND s.tenant = ?"
    args: list[object] = [scope.tenant]
    if not scope.unrestricted:
        sql += (
            " AND (s.acl_groups = '[]' OR EXISTS (SELECT 1 FROM json_each(s.acl_groups) g"
            f" WHERE g.value IN ({_marks(len(scope.groups))})))"
        )
        args.extend(sorted(scope.groups))
    if filters.source_ids:
        sql += f" AND c.source_id IN ({_marks(len(filters.source_ids))})"
        args.extend(sorted(filters.source_ids))
    if filters.authors:
        sql += (
            " AND EXISTS (SELECT 1 FROM json_each(s.authors) a"
            f" WHERE a.value IN ({_marks(len(filters.authors))}))"
        )
        args.extend(sorted(filters.authors))
    if filters.tags_any:
        sql += (
            " AND EXISTS (SELECT 1 FROM json_each(s.tags) t"
            f" WHERE t.value IN ({_marks(len(filters.tags_any))}))"
        )
        args.extend(sorted(filters.tags_any))
    if filters.tags_all:
        sql += (
            " AND (SELECT count(DISTINCT t.value) FROM json_each(s.tags) t"
            f" WHERE t.value IN ({_marks(len(filters.tags_all))})) = ?"
        )
        args.extend(sorted(filters.tags_all))
        args.append(len(filters.tags_all))
    if filters.year_min is not None:
        sql += " AND s.year >= ?"
        args.append(filters.year_min)
    if filters.year_max is not None:
        sql += " AND s.year <= ?"
        args.append(filters.year_max)
    if filters.section_prefix:
        prefix = section_key(filters.section_prefix)
        sql += " AND substr(c.section_key, 1, ?) = ?"
        args.extend([len(prefix), prefix])
    return sql, args


def _marks(count: int) -> str:
    # An empty IN () is a syntax error in SQLite; NULL matches nothing.
    return ",".join("?" * count) or "NULL"
