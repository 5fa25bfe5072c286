"""Audit use cases: record every answer, show one, verify the chain, replay a verdict."""

from __future__ import annotations

import json
from dataclasses import dataclass

from citadel.app.errors import AuditRecordUnreadable, Forbidden, NotFound, ServiceUnavailable
from citadel.app.ports import AuditLog, ChunkStore, Clock, SourceRegistry
from citadel.app.ports.support import SupportChecker
from citadel.app.resolver import NullMetrics, Target
from citadel.app.support import Checked, SupportStep, SupportVerdict
from citadel.domain.answer import AnswerResult, DegradedReason
from citadel.domain.audit import AuditRecord, answer_record
from citadel.domain.audit_chain import MalformedHead
from citadel.domain.audit_verify import ChainReport, verify_chain
from citadel.domain.limits import Limits
from citadel.domain.manifest import (
    Manifest,
    ManifestEntry,
    manifest_entries,
    manifest_hash,
    sha256_hex,
)
from citadel.domain.source import AccessScope
from citadel.domain.support import SupportLabel, SupportPolicy, with_judge
from citadel.domain.users import Actor, Role
from citadel.domain.validation import Accepted, validate_candidate


@dataclass(frozen=True, slots=True)
class ReplayReport:
    answer_id: str
    stored: str
    """The recorded verdict: ``accepted`` or ``degraded: reason``."""
    replayed: str
    """What validating the stored output against the stored manifest gives today."""
    holds: bool
    note: str = ""


class AuditService:
    def __init__(
        self,
        log: AuditLog,
        clock: Clock,
        limits: Limits,
        *,
        support: SupportChecker | None = None,
        chunks: ChunkStore | None = None,
        sources: SourceRegistry | None = None,
        quoting: frozenset[str] = frozenset(),
    ) -> None:
        """``support`` and ``chunks`` let ``replay`` recompute the support labels from
        the stored passages; without them it re-validates membership only. ``sources``:
        whether the asker may still read what a record quotes (``show``). ``quoting``:
        the names of the generators that quote by construction (``AnswerGenerator.quotes``),
        whose answers the support step decided keeping ``verbatim`` segments only."""
        self._quoting = quoting
        self._log = log
        self._sources = sources
        self._clock = clock
        self._limits = limits
        self._support = support
        self._chunks = chunks

    def record(self, result: AnswerResult, actor: Actor) -> AuditRecord:
        """Append the record of ``result`` as shown to ``actor`` (its citations already
        resolved for them); returns what was stored."""
        record = answer_record(result, actor, self._clock.now_iso())
        try:
            self._log.append(record.answer_id, record.to_json())
        except MalformedHead as exc:
            # An answer that cannot be recorded is not shown: the log refuses to seal
            # a chain it cannot vouch for (a rewritten head, a missing key).
            raise ServiceUnavailable(
                f"the audit log refuses new records until it is checked ({exc});"
                " run `citadel audit verify`"
            ) from None
        return record

    def show(self, answer_id: str, actor: Actor) -> AuditRecord:
        entry = self._log.get(answer_id)
        if entry is None:
            raise NotFound(f"no audit record for answer {answer_id}")
        record = _parsed(answer_id, entry.body, actor, f"no audit record for answer {answer_id}")
        own = record.user_id == actor.user_id and record.tenant == actor.tenant
        admin = actor.role is Role.ADMIN and record.tenant == actor.tenant
        if not (own or admin):
            # The same message as a missing record: a record's existence is not for others.
            raise NotFound(f"no audit record for answer {answer_id}")
        if not admin and not self._still_readable(record, actor):
            # The record quotes its sources (the output, the manifest): access is decided
            # now, as for the answer's citations, not when the answer was given.
            raise Forbidden(
                f"the record of answer {answer_id} quotes sources you may no longer read"
            )
        return record

    def _still_readable(self, record: AuditRecord, actor: Actor) -> bool:
        if self._sources is None:
            return True
        scope = AccessScope.of(actor)
        for source_id in {row.source_id for row in manifest_entries(record.manifest)}:
            source = self._sources.get(actor.tenant, source_id)
            if source is None or not scope.allows(source):
                return False
        return True

    def target(self, answer_id: str, ref: str, actor: Actor) -> Target:
        """What ``ref`` of a recorded answer points at, for resolving it again now.

        Any reader of the answer's tenant may ask; whether they may see the
        source is the resolver's decision, made afresh.
        """
        entry = self._log.get(answer_id)
        missing = f"no answer {answer_id}"
        record = _parsed(answer_id, entry.body, actor, missing) if entry is not None else None
        if record is None or record.tenant != actor.tenant:
            raise NotFound(missing)
        # The quotation's span, if a shown segment quoted this ref: the viewer marks it.
        span = next((c.span for c in record.citations if c.ref == ref and c.span), None)
        for row in manifest_entries(record.manifest):
            if row.ref == ref:
                return Target(row.source_id, row.version, row.chunk_id, span)
        raise NotFound(f"answer {answer_id} has no citation {ref}")

    def verify(self) -> ChainReport:
        """Every record and the head under the audit key (``citadel.domain.audit``).

        A head that cannot be read, or that the key does not vouch for, is a broken
        chain; so is a missing key once the log holds anything, and a log without a
        head while the key exists (its records and head were removed). Records made
        before the log was keyed are verified as the unkeyed chain and counted in
        ``ChainReport.unkeyed``. The records and the head are read as one state
        (``AuditLog.snapshot``), so answers other servers record meanwhile are
        neither counted nor taken for records past the head.
        """
        with self._log.snapshot() as snapshot:
            return verify_chain(snapshot.entries, snapshot.head, self._log.key())

    def replay(self, answer_id: str, actor: Actor) -> ReplayReport:
        """Re-validate the stored output against the stored manifest with today's limits.

        A record that no longer parses does not hold (for an admin of its tenant;
        anyone else is told there is no such record, as by ``show``)."""
        try:
            record = self.show(answer_id, actor)
        except AuditRecordUnreadable as exc:
            return ReplayReport(answer_id, "unreadable", "unreadable", False, str(exc))
        stored = "accepted" if record.verdict == "accepted" else f"degraded: {record.reason}"
        entries = manifest_entries(record.manifest)
        if entries and manifest_hash(entries) != record.manifest_sha256:
            return ReplayReport(
                answer_id, stored, "manifest altered", False, "the manifest no longer hashes"
            )
        decided = record.answerability
        if record.reason == DegradedReason.NOT_IN_LIBRARY.value:
            # Nothing was generated: the decision is the verdict, and it is stored whole.
            found = (
                f"score {decided.score:.4f} under threshold {decided.threshold:.4f}"
                f" ({decided.scorer})"
                if decided is not None
                else "no decision recorded"
            )
            holds = decided is not None and not decided.answerable
            return ReplayReport(
                answer_id,
                stored,
                stored,
                holds,
                f"the answerability decision ({found}) kept the generator from being called:"
                " nothing to re-validate",
            )
        if not record.output:
            return ReplayReport(
                answer_id,
                stored,
                stored,
                True,
                "no decoded output was recorded (no candidate reached validation):"
                " nothing to re-validate",
            )
        manifest = Manifest(entries=entries, sha256=record.manifest_sha256, evidence=())
        verdict = validate_candidate(
            json.loads(record.output), manifest, self._limits, self._quotable(entries)
        )
        if not isinstance(verdict, Accepted):
            replayed = f"degraded: invalid_output ({verdict.reason.value})"
            holds = record.verdict == "degraded" and record.reason == "invalid_output"
            return ReplayReport(answer_id, stored, replayed, holds)
        if not record.support_checker:
            return ReplayReport(answer_id, stored, "accepted", record.verdict == "accepted")
        return self._replay_support(record, stored, verdict, entries)

    def _quotable(self, entries: tuple[ManifestEntry, ...]) -> dict[str, str]:
        """The stored passages still as they were (by ref): what a segment may quote."""
        if self._chunks is None:
            return {}
        found = self._chunks.passages([e.chunk_id for e in entries])
        return {
            e.ref: stored.chunk.text
            for e in entries
            if (stored := found.get(e.chunk_id)) is not None
            and sha256_hex(stored.chunk.text) == e.content_sha256
        }

    def _replay_support(
        self,
        record: AuditRecord,
        stored: str,
        verdict: Accepted,
        entries: tuple[ManifestEntry, ...],
    ) -> ReplayReport:
        """Recompute each segment's support from the stored passages, apply the recorded
        policy, and compare the verdict and every shown label with the record."""
        answer_id = record.answer_id
        if self._support is None or self._chunks is None:
            holds = record.verdict == "accepted" or record.reason == "unsupported"
            return ReplayReport(
                answer_id, stored, stored, holds, "no support checker here: labels not recomputed"
            )
        found = self._chunks.passages([e.chunk_id for e in entries])
        passages: dict[str, str] = {}
        for entry in entries:
            stored_passage = found.get(entry.chunk_id)
            # The text itself is hashed: a stored hash column could be rewritten with it.
            if (
                stored_passage is None
                or sha256_hex(stored_passage.chunk.text) != entry.content_sha256
            ):
                return ReplayReport(
                    answer_id,
                    stored,
                    "passage gone",
                    False,
                    f"the passage of {entry.ref} is no longer stored as it was:"
                    " support cannot be recomputed",
                )
            passages[entry.ref] = stored_passage.chunk.text
        named = _judge_named(record.support_checker)
        if any(j.verdict.model != named for j in record.judged):
            return ReplayReport(
                answer_id,
                stored,
                "verdicts of another judge",
                False,
                f"the record holds judge verdicts its checker {record.support_checker}"
                " does not name the judge of",
            )
        step = SupportStep(self._support, SupportPolicy(record.support_policy), NullMetrics())
        quotes = record.generator in self._quoting
        checked = _with_recorded_judge(step.check(verdict.segments, passages), record)
        decided = step.decide(checked, quotes=quotes)
        note = ""
        if self._support.name != record.support_checker.split("+judge/")[0]:
            note = (
                f"recorded with checker {record.support_checker}, recomputed with"
                f" {self._support.name}"
            )
        if not isinstance(decided, Checked):
            replayed = f"degraded: {decided.reason.value}"
            holds = record.verdict == "degraded" and record.reason == decided.reason.value
            return ReplayReport(answer_id, stored, replayed, holds, note)
        labels = [
            (index, ref, support.label.value)
            for index, (segment, supports) in enumerate(
                zip(decided.segments, decided.supports, strict=True)
            )
            for ref, support in zip(segment.refs, supports, strict=True)
        ]
        # A citation withheld from its reader (forbidden) was shown without its label.
        withheld = {(c.segment, c.ref) for c in record.citations if not c.authorized}
        shown = [(c.segment, c.ref, c.support) for c in record.citations]
        labels = [(i, ref, "" if (i, ref) in withheld else label) for i, ref, label in labels]
        same = labels == shown and decided.limited == record.limited
        replayed = "accepted" if same else "accepted with other support labels"
        return ReplayReport(
            answer_id, stored, replayed, record.verdict == "accepted" and same, note
        )


def _parsed(answer_id: str, body: str, actor: Actor, missing: str) -> AuditRecord:
    """The stored record, checked whole at read time (the fields, the manifest's rows,
    the recorded output's JSON), or ``AuditRecordUnreadable`` for an admin of its
    tenant when it no longer parses (a forged label, a field removed or retyped, a body
    nested past the parser). Anyone else gets ``missing``, the very message of a
    missing record: a record's existence is not for others."""
    try:
        record = AuditRecord.from_json(body)
        manifest_entries(record.manifest)  # what replay and citation resolution read
        if record.output:
            if not isinstance(record.output, str):
                raise TypeError("the recorded output is not JSON text")
            json.loads(record.output)
        return record
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        try:
            tenant = json.loads(body)["actor"]["tenant"]
        except (ValueError, KeyError, TypeError, RecursionError):
            tenant = None
        if actor.role is Role.ADMIN and tenant == actor.tenant:
            raise AuditRecordUnreadable(
                f"the audit record of answer {answer_id} does not parse"
                f" ({type(exc).__name__}: {exc}): it was altered after it was written;"
                " `citadel audit verify` checks the chain"
            ) from None
        raise NotFound(missing) from None


def _judge_named(checker: str) -> str:
    """The judge's model a recorded checker name ends with (``LOCAL+judge/V/MODEL``,
    the model possibly holding slashes itself), or "" when it names no judge."""
    _, marker, judge = checker.partition("+judge/")
    return judge.partition("/")[2] if marker else ""


def _with_recorded_judge(verdict: SupportVerdict, record: AuditRecord) -> SupportVerdict:
    """The recomputed labels after the verdicts the span-support judge gave when the
    answer was shown: a model's answer is not recomputed, its recorded verdict is
    applied as it was then (``with_judge``: it can only lower)."""
    recorded = {(j.segment, j.ref): j.verdict for j in record.judged}
    if not recorded:
        return verdict
    supports = tuple(
        tuple(
            with_judge(support, recorded[(index, ref)])
            if (index, ref) in recorded and support.label is not SupportLabel.VERBATIM
            else support
            for ref, support in zip(segment.refs, found, strict=True)
        )
        for index, (segment, found) in enumerate(
            zip(verdict.segments, verdict.supports, strict=True)
        )
    )
    return SupportVerdict(verdict.segments, supports)
