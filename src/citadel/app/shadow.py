"""Shadow mode: what citadel's registry says about another assistant's citations.

A team migrating an assistant feeds its answers here before trusting citadel's
links (the seed's rollout: "shadow-resolve generated citations first, compare
existing and resolved destinations"). Each citation is classified by the
registry alone — its sources, versions, tombstones, retention, ACLs and every
canonical URL and origin a source has had — for the reader the answer was shown
to, now. No URL is fetched. The rules are checked in this order; the first that
applies decides (``docs/shadow.md`` has examples):

1. ``fabricated``: a URL citadel cannot read (not http/https/file, userinfo, a
   host that is no host) or one no registered source has or had (see
   ``shadow_places``: host case, IDN spelling, a default port, a trailing slash
   and the fragment do not matter; the query does).
2. ``no_such_document``: a document id, path or ``file:`` URL no source of the tenant
   has or had; or a ``doc_id`` paired with a link that names no registered source.
3. ``forbidden``: the reader may not see the source now (tenant or ACL; an unknown
   or disabled reader sees nothing). Checked before deletion, as the resolver does.
4. ``unavailable``: the source is deleted (a tombstone).
5. For a named version: ``no_such_document`` when the source never had it (0, or
   beyond the latest); ``unavailable`` when its text is past retention.
6. ``wrong_document``: the citation pairs a link with a ``doc_id`` and the link
   leads to another registered source.
7. ``outdated``: the cited version is older than the version that was current when
   the answer was shown (the newest registered at or before its timestamp; the
   current one when the registry's history starts after it).
8. ``moved``: the link is a canonical URL or origin the source had before a move, a
   metadata change or a new version, and no source has now; the registry knows
   where it is now.
9. ``ok``: the registered document (and version, when one is named).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from citadel.app.errors import Forbidden
from citadel.app.ports import SourceLocation, SourceRegistry
from citadel.app.shadow_input import CitedRef, ShadowRecord
from citadel.app.shadow_places import Places, url_key
from citadel.domain.source import AccessScope, Source, SourceVersion, valid_source_id
from citadel.domain.users import Actor, Role, UserStatus


class Category(enum.StrEnum):
    OK = "ok"
    FABRICATED = "fabricated"
    NO_SUCH_DOCUMENT = "no_such_document"
    FORBIDDEN = "forbidden"
    UNAVAILABLE = "unavailable"
    WRONG_DOCUMENT = "wrong_document"
    OUTDATED = "outdated"
    MOVED = "moved"


MEASURES: Mapping[Category, str] = {
    Category.OK: "verified_rate",
    Category.FABRICATED: "fabricated_link_rate",
    Category.NO_SUCH_DOCUMENT: "no_such_document_rate",
    Category.FORBIDDEN: "authorization_violation_rate",
    Category.UNAVAILABLE: "unavailable_rate",
    Category.WRONG_DOCUMENT: "wrong_document_rate",
    Category.OUTDATED: "outdated_version_rate",
    Category.MOVED: "moved_rate",
}
"""Each category's share of all citations, under the seed's names where it has one."""


@dataclass(frozen=True, slots=True)
class Finding:
    record_id: str
    line: int
    index: int
    """The citation's place in its record, from 1."""
    cited: str
    category: Category
    reason: str
    source_id: str | None = None
    """The source the citation leads to; withheld when the report's reader may not see it."""
    version: int | None = None


@dataclass(frozen=True, slots=True)
class ShadowReport:
    answers: int
    findings: tuple[Finding, ...]
    counts: Mapping[Category, int] = field(default_factory=dict)

    @property
    def citations(self) -> int:
        return len(self.findings)

    def rate(self, category: Category) -> float | None:
        """``category``'s share of the citations; None when there are none."""
        if not self.findings:
            return None
        return self.counts.get(category, 0) / len(self.findings)

    def measures(self) -> dict[str, float | None]:
        return {MEASURES[c]: self.rate(c) for c in Category}


ReaderLookup = Callable[[str], "Actor | None"]
"""The actor of a user name as the store has it now; None when unknown or disabled."""


@dataclass(frozen=True, slots=True)
class _Linked:
    """Where a citation's link or id leads."""

    source_id: str
    via_former: bool = False
    """Only through a location the source no longer has."""
    also: tuple[str, ...] = ()
    """Other sources holding the same location."""


class ShadowService:
    def __init__(self, registry: SourceRegistry, readers: ReaderLookup) -> None:
        self._registry = registry
        self._readers = readers

    def run(self, records: Sequence[ShadowRecord], actor: Actor) -> ShadowReport:
        """Classify every citation of ``records`` within ``actor``'s tenant.

        A record shown to another user is judged for that user; only an admin may ask
        that (``Forbidden``, before anything is read), since the report says what the
        other user could see. Forbidden findings name no source unless ``actor`` is an
        admin."""
        others = sorted({r.user for r in records if r.user and r.user != actor.user_id})
        if others and actor.role is not Role.ADMIN:
            raise Forbidden(f"only an admin checks answers shown to other users ({others[0]})")
        run = _Run(self._registry, actor, self._readers)
        findings = tuple(
            run.classify(record, index, cited)
            for record in records
            for index, cited in enumerate(record.citations, 1)
        )
        counts = dict.fromkeys(Category, 0)
        for finding in findings:
            counts[finding.category] += 1
        return ShadowReport(answers=len(records), findings=findings, counts=counts)


class _Run:
    """One report's reads: the registry's places once, each source and its versions once."""

    def __init__(self, registry: SourceRegistry, actor: Actor, readers: ReaderLookup) -> None:
        self._registry = registry
        self._actor = actor
        self._readers = readers
        self._places = Places(registry.locations(actor.tenant))
        self._sources: dict[str, Source | None] = {}
        self._versions: dict[str, Sequence[SourceVersion]] = {}
        self._scopes: dict[str, AccessScope | None] = {}

    def classify(self, record: ShadowRecord, index: int, cited: CitedRef) -> Finding:
        finding = Finding(record.record_id, record.line, index, cited.text, Category.OK, "")
        linked = self._linked(cited, self._readable_by(record.user))
        if isinstance(linked, Finding):
            return replace(linked, record_id=record.record_id, line=record.line, index=index)
        expected = cited.doc_id if (cited.url or cited.path) else None
        if expected is not None and self._source(expected) is None:
            return replace(
                finding,
                category=Category.NO_SUCH_DOCUMENT,
                reason=f"the answer's document {expected!r} is not registered",
            )
        source = self._source(linked.source_id)
        if source is None:  # a location of a source the registry no longer has
            return replace(finding, category=Category.NO_SUCH_DOCUMENT, reason="not registered")
        reader = self._reader(record.user)
        if reader is None or not reader.allows(replace(source, deleted=False)):
            who = record.user or self._actor.user_id
            shown = source.source_id if self._actor.role is Role.ADMIN else None
            return replace(
                finding,
                category=Category.FORBIDDEN,
                reason=f"{who} may not see this source now",
                source_id=shown,
            )
        finding = replace(finding, source_id=source.source_id, version=cited.version)
        if source.deleted:
            return replace(finding, category=Category.UNAVAILABLE, reason="the source was deleted")
        versions = self._source_versions(source.source_id)
        if cited.version is not None:
            known = {v.version: v for v in versions}
            if cited.version not in known:
                return replace(
                    finding,
                    category=Category.NO_SUCH_DOCUMENT,
                    reason=f"{source.source_id} has no version {cited.version}"
                    f" (latest {source.current_version})",
                )
            if not known[cited.version].retained:
                return replace(
                    finding,
                    category=Category.UNAVAILABLE,
                    reason=f"version {cited.version} is past retention: its text is gone",
                )
        if expected is not None and expected != source.source_id:
            return replace(
                finding,
                category=Category.WRONG_DOCUMENT,
                reason=f"the link leads to {source.source_id}, the answer meant {expected}",
            )
        if cited.version is not None:
            allowed, note = _allowed_version(versions, source, record.timestamp)
            if cited.version < allowed:
                return replace(
                    finding,
                    category=Category.OUTDATED,
                    reason=f"version {cited.version} cited; version {allowed} was current {note}",
                )
        if linked.via_former:
            now = self._now_at(source, cited)
            return replace(finding, category=Category.MOVED, reason=f"moved: now {now}")
        reason = "the registered document"
        if cited.version is not None and cited.version < source.current_version:
            reason += f" (superseded since by version {source.current_version})"
        if linked.also:
            reason += f"; the same location is also registered for {', '.join(linked.also)}"
        return replace(finding, reason=reason)

    def _readable_by(self, user: str | None) -> Callable[[str], bool]:
        """Whether a source id is one ``user`` may read now, and the report's runner too
        (whose report names it)."""
        reader, runner = self._reader(user), self._reader(None)

        def readable(source_id: str) -> bool:
            source = self._source(source_id)
            return (
                source is not None
                and reader is not None
                and reader.allows(replace(source, deleted=False))
                and runner is not None
                and runner.allows(replace(source, deleted=False))
            )

        return readable

    def _linked(self, cited: CitedRef, readable: Callable[[str], bool]) -> _Linked | Finding:
        """The source the citation's link (or, without one, its id) leads to; where a
        location is several sources', one the reader may read."""
        expected = cited.doc_id if (cited.url or cited.path) else None

        def refused(category: Category, reason: str) -> Finding:
            return Finding("", 0, 0, cited.text, category, reason)

        if cited.url is not None:
            key = url_key(cited.url)
            if isinstance(key, str):
                return refused(Category.FABRICATED, key)
            if key.path_key is not None:
                held = self._places.origin(key.path_key)
                if held is None:
                    return refused(Category.NO_SUCH_DOCUMENT, "no source was ingested from there")
                return _pick(held, expected, readable)
            held = self._places.url(key)
            if held is None:
                return refused(Category.FABRICATED, self._places.why_unknown(key))
            return _pick(held, expected, readable)
        if cited.path is not None:
            held = self._places.origin(cited.path)
            if held is None:
                return refused(Category.NO_SUCH_DOCUMENT, "no source was ingested from there")
            return _pick(held, expected, readable)
        doc_id = cited.doc_id or ""
        if self._source(doc_id) is None:
            return refused(Category.NO_SUCH_DOCUMENT, "no source of this id")
        return _Linked(doc_id)

    def _source(self, source_id: str) -> Source | None:
        if source_id not in self._sources:
            found = None
            if valid_source_id(source_id):
                found = self._registry.get(self._actor.tenant, source_id)
            self._sources[source_id] = found
        return self._sources[source_id]

    def _source_versions(self, source_id: str) -> Sequence[SourceVersion]:
        if source_id not in self._versions:
            self._versions[source_id] = self._registry.versions(self._actor.tenant, source_id)
        return self._versions[source_id]

    def _reader(self, user: str | None) -> AccessScope | None:
        name = user or self._actor.user_id
        if name not in self._scopes:
            actor = self._actor if name == self._actor.user_id else self._readers(name)
            usable = actor is not None and actor.status is UserStatus.ACTIVE
            self._scopes[name] = AccessScope.of(actor) if actor is not None and usable else None
        return self._scopes[name]

    def _now_at(self, source: Source, cited: CitedRef) -> str:
        if cited.url is not None and not cited.url.lower().startswith("file:"):
            return source.canonical_url or "no URL (in-product viewer only)"
        return source.origin or "no recorded place"


def _pick(
    held: Sequence[SourceLocation], expected: str | None, readable: Callable[[str], bool]
) -> _Linked:
    """The source a location names: a current holder over a former one; among several,
    the one the answer meant if it is there, else the first by id the reader may read,
    else the first by id. The others are named only when the reader may read them."""
    current = sorted({p.source_id for p in held if p.current})
    former = sorted({p.source_id for p in held if not p.current} - set(current))
    pool, via_former = (current, False) if current else (former, True)
    shown = [s for s in pool if readable(s)]
    chosen = expected if expected in pool else (shown or pool)[0]
    return _Linked(chosen, via_former, tuple(s for s in shown if s != chosen))


def _allowed_version(
    versions: Sequence[SourceVersion], source: Source, when: datetime
) -> tuple[int, str]:
    """The version current at ``when`` per the registry, and how that was decided."""
    dated = [(v.version, _parsed(v.created_at)) for v in versions]
    before = [number for number, at in dated if at is not None and at <= when]
    if before:
        return max(before), "when the answer was shown"
    return source.current_version, "now (the registry's history starts after the answer)"


def _parsed(text: str) -> datetime | None:
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo is not None else None
