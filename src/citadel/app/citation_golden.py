"""The golden citation set: claim → allowed ref → source/version/span → expected link.

Each golden case says which span of which version of which source a claim's ref is
allowed to point at, for which reader, and where the resolver must then take that
reader: a state (``canonical``, ``viewer``, ``superseded``, ``deleted``,
``forbidden``, ``unavailable``) and an href — the exact canonical URL, ``"viewer"``
(a signed in-product route to that version and chunk, "no URL available" but a
preview), or null (no link at all). The check finds the quoted span in the stored
version (so the case fails when the library does not hold the text it claims), then
resolves it through the application's own ``CitationResolver`` for the reader, now.
Whether the span supports the claim is not checked here (``citadel eval support``).

A line is ``{"id", "claim", "ref", "source_id", "version", "quote"?, "reader"?,
"expect": {"state", "href"}}``; ``quote`` may be left out only where the text is
gone (a deleted source, a version past retention).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from citadel.app.errors import Forbidden, InvalidRequest
from citadel.app.ports import ChunkStore, SourceRegistry
from citadel.app.resolver import CitationResolver, ResolvedLink, Target
from citadel.app.shadow import ReaderLookup
from citadel.domain.answer import LinkState
from citadel.domain.users import Actor, Role

VIEWER = "viewer"
"""``expect.href`` for a signed in-product route to the cited version and chunk."""
MAX_LINE_BYTES = 64 * 1024
_REF = re.compile(r"E[1-9][0-9]{0,3}")
_FIELDS = {"id", "claim", "ref", "source_id", "version", "quote", "reader", "expect"}


@dataclass(frozen=True, slots=True)
class GoldenCase:
    line: int
    case_id: str
    claim: str
    ref: str
    source_id: str
    version: int
    quote: str | None
    reader: str | None
    """A user name; None: whoever runs the check."""
    state: LinkState
    href: str | None
    """An exact URL, ``VIEWER``, or None for no link."""


@dataclass(frozen=True, slots=True)
class GoldenOutcome:
    case: GoldenCase
    state: LinkState | None
    href: str | None
    failures: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.failures


@dataclass(frozen=True, slots=True)
class GoldenReport:
    outcomes: tuple[GoldenOutcome, ...]

    @property
    def passed(self) -> int:
        return sum(o.passed for o in self.outcomes)

    def by_state(self) -> dict[str, tuple[int, int]]:
        """Expected state → (cases, passed)."""
        table: dict[str, tuple[int, int]] = {}
        for o in self.outcomes:
            cases, passed = table.get(o.case.state.value, (0, 0))
            table[o.case.state.value] = (cases + 1, passed + o.passed)
        return table


def parse_golden(line: int, raw: bytes) -> GoldenCase:
    """The case on line ``line``; ``InvalidRequest`` naming the line and the fault."""

    def bad(reason: str) -> InvalidRequest:
        return InvalidRequest(f"line {line}: {reason}")

    if len(raw) > MAX_LINE_BYTES:
        raise bad(f"longer than {MAX_LINE_BYTES} bytes")
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise bad("not a JSON object") from None
    if not isinstance(value, dict):
        raise bad("not a JSON object")
    unknown = sorted(set(value) - _FIELDS)
    if unknown:
        raise bad(f"unknown field {unknown[0]!r}")
    for name in ("id", "claim", "ref", "source_id"):
        if not isinstance(value.get(name), str) or not value[name]:
            raise bad(f"{name!r} must be a non-empty string")
    if not _REF.fullmatch(value["ref"]):
        raise bad("'ref' is a citation ref such as E1")
    version = value.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise bad("'version' must be a whole number from 1")
    for name in ("quote", "reader"):
        if value.get(name) is not None and (not isinstance(value[name], str) or not value[name]):
            raise bad(f"{name!r} must be a non-empty string when given")
    expect: Any = value.get("expect")
    if not isinstance(expect, dict) or set(expect) != {"state", "href"}:
        raise bad("'expect' must be {'state': ..., 'href': ...}")
    try:
        state = LinkState(expect["state"])
    except ValueError:
        raise bad(f"unknown link state {expect['state']!r}") from None
    href = expect["href"]
    if href is not None and not isinstance(href, str):
        raise bad("'expect.href' is a URL, 'viewer' or null")
    return GoldenCase(
        line=line,
        case_id=value["id"],
        claim=value["claim"],
        ref=value["ref"],
        source_id=value["source_id"],
        version=version,
        quote=value.get("quote"),
        reader=value.get("reader"),
        state=state,
        href=href,
    )


class GoldenCitationCheck:
    def __init__(
        self,
        registry: SourceRegistry,
        chunks: ChunkStore,
        resolver: CitationResolver,
        readers: ReaderLookup,
    ) -> None:
        self._registry = registry
        self._chunks = chunks
        self._resolver = resolver
        self._readers = readers

    def run(self, cases: Sequence[GoldenCase], actor: Actor) -> GoldenReport:
        """Check every case in ``actor``'s tenant; only an admin may (spans are read
        whatever their ACL, and cases are resolved for other readers)."""
        if actor.role is not Role.ADMIN:
            raise Forbidden("only an admin runs the golden citation set")
        return GoldenReport(tuple(self._check(case, actor) for case in cases))

    def _check(self, case: GoldenCase, actor: Actor) -> GoldenOutcome:
        failures: list[str] = []
        chunk_id, span = self._locate(case, actor, failures)
        reader = actor if case.reader is None else self._readers(case.reader)
        if reader is None:
            failures.append(f"no active reader {case.reader} in this library")
            return GoldenOutcome(case, None, None, tuple(failures))
        target = Target(case.source_id, case.version, chunk_id, span)
        link = self._resolver.resolve([target], reader)[0]
        failures.extend(_compare(case, link, chunk_id))
        return GoldenOutcome(case, link.state, _shown(link.href), tuple(failures))

    def _locate(
        self, case: GoldenCase, actor: Actor, failures: list[str]
    ) -> tuple[str, tuple[int, int] | None]:
        """The chunk and the span in it that the quote is, from the stored version."""
        source = self._registry.get(actor.tenant, case.source_id)
        if source is None:
            failures.append(f"no source {case.source_id} in this library")
            return "", None
        versions = {v.version: v for v in self._registry.versions(actor.tenant, source.source_id)}
        if case.version not in versions:
            failures.append(f"{case.source_id} has no version {case.version}")
            return "", None
        gone = source.deleted or not versions[case.version].retained
        if gone:
            if case.quote is not None:
                failures.append("the quote cannot be checked: the version's text is gone")
            return "", None
        if case.quote is None:
            failures.append("no quote, but the version's text is there to check it against")
            return "", None
        for chunk in self._chunks.chunks(actor.tenant, case.source_id, case.version):
            at = chunk.text.find(case.quote)
            if at >= 0:
                return chunk.chunk_id, (at, at + len(case.quote))
        failures.append(f"the quote is not in version {case.version} of {case.source_id}")
        return "", None


def _compare(case: GoldenCase, link: ResolvedLink, chunk_id: str) -> list[str]:
    failures: list[str] = []
    if link.state is not case.state:
        failures.append(f"state {link.state.value}, expected {case.state.value}")
    if case.href == VIEWER:
        route = f"/v1/sources/{case.source_id}/versions/{case.version}/view?chunk="
        if link.href is None or not link.href.startswith(route + chunk_id):
            failures.append(f"href {_shown(link.href)}, expected a viewer route {route}…")
    elif link.href != case.href:
        failures.append(f"href {_shown(link.href)}, expected {case.href}")
    if link.authorized != (case.state is not LinkState.FORBIDDEN):
        failures.append("authorized" if link.authorized else "not authorized")
    return failures


def _shown(href: str | None) -> str | None:
    """An href for a report: a viewer route without its token (tokens are never kept)."""
    if href is None or "&token=" not in href:
        return href
    return href.split("&token=", 1)[0] + "&token=…"
