"""The seed's adversarial citation cases, through the real answer service and resolver.

Every link is the resolver's output for this reader now; the audit log keeps
what each answer was and lets any citation be resolved again later.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
from pathlib import Path

import pytest

from citadel.adapters.clock import FixedClock
from citadel.adapters.generators.scripted import ScriptedGenerator, Step, cite_first
from citadel.adapters.memory import InMemoryAuditLog, InMemoryLibrary
from citadel.adapters.metrics.counting import CountingMetrics
from citadel.adapters.sqlite.audit import SqliteAuditLog
from citadel.adapters.sqlite.database import Database
from citadel.app.answer import AnswerService
from citadel.app.audit import AuditService
from citadel.app.errors import NotFound
from citadel.app.ports import AuditLog
from citadel.app.resolver import CitationResolver
from citadel.app.search import SearchService
from citadel.domain.answer import AnswerResult, Citation, DegradedReason, LinkState
from citadel.domain.limits import Limits
from citadel.domain.source import Source
from citadel.domain.users import Actor, Role
from citadel.domain.viewer import ViewerSigner
from tests.builders import Passage, commit
from tests.unit.test_answer_service import QUESTION, TENANT, library, request, segments

NOW = 1_800_000_000.0
READER = Actor(user_id="ann", tenant=TENANT, groups=frozenset({"staff"}))
ALLOWED = "https://docs.example.org/"


def safe_href(url: str) -> str | None:
    """A stand-in link policy: only the one allowlisted https host."""
    return url if url.startswith(ALLOWED) else None


class World:
    def __init__(
        self,
        generator: ScriptedGenerator,
        limits: Limits | None = None,
        log: AuditLog | None = None,
    ) -> None:
        self.limits = limits or Limits()
        self.lib: InMemoryLibrary = library()
        self.metrics = CountingMetrics()
        self.log = log or InMemoryAuditLog()
        self.audit = AuditService(self.log, FixedClock("2026-11-30T00:00:00+00:00"), self.limits)
        self.resolver = CitationResolver(
            self.lib,
            safe_href,
            ViewerSigner(b"s" * 32),
            metrics=self.metrics,
            now=lambda: NOW,
        )
        search = SearchService(self.lib, self.lib, self.limits)
        self.service = AnswerService(
            search,
            generator,
            self.limits,
            resolver=self.resolver,
            audit=self.audit,
            metrics=self.metrics,
        )

    def ask(self, question: str = QUESTION, actor: Actor = READER) -> AnswerResult:
        return asyncio.run(self.service.answer(request(question), actor))

    def source(self, source_id: str) -> Source:
        found = self.lib.get(TENANT, source_id)
        assert found is not None
        return found

    def again(self, result: AnswerResult, ref: str, actor: Actor = READER) -> LinkState:
        """Resolve ``ref`` of a recorded answer for ``actor`` now."""
        [link] = self.resolver.resolve([self.audit.target(result.answer_id, ref, actor)], actor)
        return link.state


def cited(result: AnswerResult) -> list[Citation]:
    assert result.answer is not None, result.degraded
    return [c for s in result.answer.segments for c in s.citations]


def test_without_a_trusted_url_the_link_is_a_signed_viewer_route() -> None:
    world = World(ScriptedGenerator([cite_first]))
    [citation] = cited(world.ask())
    assert citation.link_state is LinkState.VIEWER
    assert citation.link_href is not None
    assert citation.link_href.startswith(f"/v1/sources/{citation.source_id}/versions/1/view?")
    assert world.metrics.fabricated == 0


def test_a_trusted_canonical_url_that_passes_the_policy_is_the_link() -> None:
    world = World(ScriptedGenerator([cite_first]))
    for sid in ("src-7f3a", "src-91bc"):
        world.lib.update(dataclasses.replace(world.source(sid), canonical_url=ALLOWED + sid))
    [citation] = cited(world.ask())
    assert citation.link_state is LinkState.CANONICAL
    assert citation.link_href == ALLOWED + citation.source_id


def test_a_canonical_url_the_policy_refuses_now_falls_back_to_the_viewer() -> None:
    world = World(ScriptedGenerator([cite_first]))
    for sid in ("src-7f3a", "src-91bc"):
        world.lib.update(
            dataclasses.replace(world.source(sid), canonical_url="https://elsewhere.example/x")
        )
    [citation] = cited(world.ask())
    assert citation.link_state is LinkState.VIEWER


def test_identical_manifest_and_authorization_give_identical_links() -> None:
    world = World(ScriptedGenerator([cite_first]))
    first, second = cited(world.ask()), cited(world.ask())
    assert [(c.link_state, c.link_href) for c in first] == [
        (c.link_state, c.link_href) for c in second
    ]


def test_a_model_invented_url_never_becomes_an_href() -> None:
    hostile = {
        "segments": [
            {"text": "See the source.", "evidence_ids": ["E1"], "url": "https://evil.example"}
        ]
    }
    world = World(ScriptedGenerator([Step(payload=hostile)]))
    result = world.ask()
    assert result.answer is None and result.degraded is not None
    assert result.degraded.reason is DegradedReason.INVALID_OUTPUT
    assert "evil" not in repr(result)
    assert world.metrics.fabricated == 0


def test_an_href_that_did_not_come_from_the_resolver_is_dropped_and_counted() -> None:
    world = World(ScriptedGenerator([cite_first]))
    result = world.ask()
    assert result.answer is not None
    smuggled = dataclasses.replace(
        result,
        answer=dataclasses.replace(
            result.answer,
            segments=tuple(
                dataclasses.replace(
                    s,
                    citations=tuple(
                        dataclasses.replace(c, link_href="javascript:alert(1)") for c in s.citations
                    ),
                )
                for s in result.answer.segments
            ),
        ),
    )
    shown = world.resolver.resolve_answer(smuggled, READER)
    assert world.metrics.fabricated == 1
    assert all("javascript" not in str(c.link_href) for c in cited(shown))


def test_refs_of_two_answers_resolve_to_their_own_sources() -> None:
    world = World(ScriptedGenerator([cite_first]))
    retries = world.ask("Why should retry attempts be bounded?")
    admission = world.ask("How does admission control reject work early?")
    [a], [b] = cited(retries), cited(admission)
    assert a.source_id != b.source_id  # both cite their own E1
    for result, expected in ((retries, a), (admission, b)):
        target = world.audit.target(result.answer_id, "E1", READER)
        assert (target.source_id, target.chunk_id) == (expected.source_id, expected.chunk_id)


def test_a_ref_retrieved_but_not_selected_is_rejected() -> None:
    # Search finds three passages; only two are selected, so E3 names nothing.
    world = World(
        ScriptedGenerator([Step(payload=segments(("Third.", ["E3"])))]),
        Limits(max_evidence=2, max_repairs=0),
    )
    result = world.ask()
    assert len(result.search.results) == 3
    assert result.manifest is not None and len(result.manifest.entries) == 2
    assert result.degraded is not None
    assert "unknown_ref" in result.degraded.detail


def test_a_new_version_supersedes_and_the_old_link_still_goes_to_the_cited_version() -> None:
    world = World(ScriptedGenerator([cite_first]))
    result = world.ask()
    [citation] = cited(result)
    source = world.source(citation.source_id)
    commit(
        world.lib,
        dataclasses.replace(source, origin="/books/moved.pdf"),  # moved and revised
        [Passage("Retry budgets, second edition: attempts are capped per request.")],
        version=2,
    )
    assert world.again(result, citation.ref) is LinkState.SUPERSEDED
    [link] = world.resolver.resolve([world.audit.target(result.answer_id, "E1", READER)], READER)
    assert link.href is not None and "/versions/1/view" in link.href


def test_a_moved_source_keeps_resolving_by_its_identity() -> None:
    world = World(ScriptedGenerator([cite_first]))
    result = world.ask()
    [citation] = cited(result)
    world.lib.update(
        dataclasses.replace(world.source(citation.source_id), origin="/elsewhere/book.pdf")
    )
    assert world.again(result, citation.ref) is LinkState.VIEWER


def test_a_deleted_source_says_deleted() -> None:
    world = World(ScriptedGenerator([cite_first]))
    result = world.ask()
    [citation] = cited(result)
    world.lib.delete(TENANT, citation.source_id)
    assert world.again(result, citation.ref) is LinkState.DELETED


def test_access_revoked_after_the_answer_is_forbidden_and_reveals_nothing() -> None:
    world = World(ScriptedGenerator([cite_first]))
    for sid in ("src-7f3a", "src-91bc"):
        world.lib.update(dataclasses.replace(world.source(sid), acl_groups=frozenset({"staff"})))
    result = world.ask()
    [citation] = cited(result)
    assert citation.link_state is LinkState.VIEWER
    world.lib.update(
        dataclasses.replace(world.source(citation.source_id), acl_groups=frozenset({"board"}))
    )
    assert world.again(result, citation.ref) is LinkState.FORBIDDEN
    # Displaying the answer again for the same reader withholds everything about it.
    shown = world.resolver.resolve_answer(result, READER)
    [hidden] = cited(shown)
    assert hidden.link_state is LinkState.FORBIDDEN and hidden.link_href is None
    assert (hidden.title, hidden.chapter, hidden.section, hidden.pages) == ("", "", "", "")
    assert world.metrics.denials == 2  # both displays were denied


def test_another_tenants_reader_gets_nothing() -> None:
    world = World(ScriptedGenerator([cite_first]))
    result = world.ask()
    outsider = Actor(user_id="eve", tenant="globex", role=Role.ADMIN)
    with pytest.raises(NotFound):
        world.audit.target(result.answer_id, "E1", outsider)
    [citation] = cited(result)
    [link] = world.resolver.resolve([world.audit.target(result.answer_id, "E1", READER)], outsider)
    assert link.state is LinkState.FORBIDDEN and not link.authorized
    assert citation.link_state is LinkState.VIEWER  # the original reader's view is unchanged


# -- the audit record ---------------------------------------------------------------


def test_every_answer_is_recorded_with_what_was_shown() -> None:
    world = World(ScriptedGenerator([cite_first]))
    result = world.ask()
    record = world.audit.show(result.answer_id, READER)
    assert record.verdict == "accepted"
    assert record.manifest_sha256 == result.manifest.sha256  # type: ignore[union-attr]
    assert [c.state for c in record.citations] == ["viewer"]
    assert record.user_id == "ann" and record.tenant == TENANT
    assert "token=" not in world.log.get(result.answer_id).body  # type: ignore[union-attr]
    assert world.audit.verify().intact


def test_degraded_answers_are_recorded_too_and_replay_holds() -> None:
    world = World(ScriptedGenerator([Step(payload=segments(("x", ["E9"])))]), Limits(max_repairs=0))
    result = world.ask()
    record = world.audit.show(result.answer_id, READER)
    assert (record.verdict, record.reason) == ("degraded", "invalid_output")
    report = world.audit.replay(result.answer_id, READER)
    assert report.holds and "unknown_ref" in report.replayed


def test_replay_of_an_accepted_answer_holds() -> None:
    world = World(ScriptedGenerator([cite_first]))
    result = world.ask()
    report = world.audit.replay(result.answer_id, READER)
    assert report.holds and report.replayed == "accepted"


def test_only_the_asker_or_a_tenant_admin_may_read_a_record() -> None:
    world = World(ScriptedGenerator([cite_first]))
    result = world.ask()
    with pytest.raises(NotFound):
        world.audit.show(result.answer_id, Actor(user_id="bob", tenant=TENANT))
    admin = Actor(user_id="root", tenant=TENANT, role=Role.ADMIN)
    assert world.audit.show(result.answer_id, admin).answer_id == result.answer_id


def test_an_edited_or_removed_sqlite_record_fails_verification(tmp_path: Path) -> None:
    db = Database(tmp_path / "audit.db")
    world = World(ScriptedGenerator([cite_first]), log=SqliteAuditLog(db))
    answers = [world.ask() for _ in range(3)]
    assert world.audit.verify().intact
    path = tmp_path / "audit.db"
    with sqlite3.connect(path) as raw:
        # The triggers refuse edits through SQL; a tamperer has to remove them first.
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            raw.execute("DELETE FROM audit_log WHERE seq = 2")
        raw.execute("DROP TRIGGER audit_log_no_delete")
        raw.execute("DELETE FROM audit_log WHERE seq = 2")
    report = world.audit.verify()
    assert not report.intact
    assert any("missing" in p for p in report.problems)
    with pytest.raises(NotFound):
        world.audit.show(answers[1].answer_id, READER)
    db.close()
