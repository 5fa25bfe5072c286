"""Shadow mode's classification rules, one registry fact at a time (in-memory registry)."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime

import pytest

from citadel.adapters.memory import InMemoryLibrary
from citadel.app.errors import Forbidden
from citadel.app.shadow import Category, ShadowReport, ShadowService
from citadel.app.shadow_input import (
    MAX_LINE_BYTES,
    BadRecord,
    CitedRef,
    ShadowRecord,
    cited_text,
    parse_record,
)
from citadel.app.shadow_places import UrlKey, url_key
from citadel.domain.source import Source
from citadel.domain.users import Actor, Role, UserStatus
from tests.builders import Passage, commit

ADMIN = Actor(user_id="local", tenant="acme", role=Role.ADMIN)
READERS = {
    "alice": Actor(user_id="alice", tenant="acme"),
    "sam": Actor(user_id="sam", tenant="acme", groups=frozenset({"staff"})),
    "gone": Actor(user_id="gone", tenant="acme", status=UserStatus.DISABLED),
    "olga": Actor(user_id="olga", tenant="other", role=Role.ADMIN),
}
LATE = datetime(2026, 6, 1, tzinfo=UTC)
"""After every version below was registered."""


def src(source_id: str, url: str | None, origin: str, acl: frozenset[str] = frozenset()) -> Source:
    return Source(
        source_id=source_id,
        tenant="acme",
        title=source_id.upper(),
        acl_groups=acl,
        canonical_url=url,
        origin=origin,
    )


@pytest.fixture(scope="module")
def library() -> InMemoryLibrary:
    lib = InMemoryLibrary()
    a = src("src-a", "https://books.example/reliable", "/books/a.pdf")
    commit(lib, a, [Passage("First.")], created_at="2026-01-01T00:00:00+00:00")
    commit(lib, a, [Passage("Second.")], version=2, created_at="2026-03-01T00:00:00+00:00")
    commit(lib, src("src-b", "https://books.example/b", "/books/b.pdf", frozenset({"staff"})), [])
    commit(lib, src("src-c", "https://books.example/c", "/books/c.pdf"), [Passage("C.")])
    lib.delete("acme", "src-c")
    staff_gone = src("src-f", "https://books.example/f", "/books/f.pdf", frozenset({"staff"}))
    commit(lib, staff_gone, [Passage("F.")])
    lib.delete("acme", "src-f")
    d, _, _ = commit(lib, src("src-d", "https://books.example/d", "/old/d.pdf"), [Passage("D.")])
    lib.update(dataclasses.replace(d, origin="/new/d.pdf"))
    commit(
        lib, src("src-d", "https://books.example/d-new", "/new/d.pdf"), [Passage("D2.")], version=2
    )
    e = src("src-e", None, "/books/e.pdf")
    for n in (1, 2, 3):
        commit(lib, e, [Passage(f"E{n}.")], version=n, created_at=f"2026-0{n}-01T00:00:00+00:00")
    lib.prune("acme", "src-e", keep=1)
    commit(lib, src("src-i", "https://xn--bcher-kva.example/buch", "/books/i.pdf"), [])
    commit(lib, src("src-s", "https://strasse.example/guide", "/books/s.pdf"), [])
    return lib


def classify(
    library: InMemoryLibrary,
    *cited: str | CitedRef,
    when: datetime = LATE,
    user: str | None = None,
    actor: Actor = ADMIN,
) -> ShadowReport:
    refs = tuple(cited_text(c) if isinstance(c, str) else c for c in cited)
    record = ShadowRecord(1, "r1", "q", "a", refs, when, user)
    return ShadowService(library, READERS.get).run([record], actor)


def category(library: InMemoryLibrary, cited: str | CitedRef, **kw: object) -> Category:
    [finding] = classify(library, cited, **kw).findings  # type: ignore[arg-type]
    return finding.category


@pytest.mark.parametrize(
    "url",
    [
        "https://books.example/reliable",
        "https://BOOKS.Example/reliable",  # host case
        "https://books.example/reliable/",  # trailing slash
        "https://books.example/reliable#page=3",  # a fragment is a place in the page
        "https://books.example:443/reliable",  # the default port
        "http://books.example/reliable",  # the scheme is not compared
    ],
)
def test_spellings_of_the_registered_url_are_it(library: InMemoryLibrary, url: str) -> None:
    assert category(library, url) is Category.OK


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("https://books.example/reliable?page=3", "this path with this query"),
        ("https://books.example/Reliable", "has this path"),  # paths are case-sensitive
        ("https://books.example:8443/reliable", "no registered source is on books.example:8443"),
        ("https://policies.example/sg/contractor-expense-2026", "no registered source is on"),
        ("https://user@books.example/reliable", "userinfo"),
        ("javascript:alert(1)", "not a web link"),
        ("https://127.0.0.1/reliable", "no registered source is on 127.0.0.1"),
        ("https://[::1]/reliable", "not a host name"),
        ("https://books.example/reli able", "whitespace"),
        ("https:///reliable", "no host"),
    ],
)
def test_links_no_source_has_are_fabricated(library: InMemoryLibrary, url: str, why: str) -> None:
    [finding] = classify(library, CitedRef(url, url=url)).findings
    assert finding.category is Category.FABRICATED
    assert why in finding.reason
    assert finding.source_id is None


def test_an_idn_host_matches_in_unicode_or_punycode(library: InMemoryLibrary) -> None:
    assert category(library, "https://bücher.example/buch") is Category.OK
    assert category(library, "https://BÜCHER.example/buch/") is Category.OK
    assert category(library, "https://xn--bcher-kva.example/buch") is Category.OK
    assert category(library, "https://bucher.example/buch") is Category.FABRICATED


def test_a_host_a_browser_opens_elsewhere_is_not_the_registered_one(
    library: InMemoryLibrary,
) -> None:
    # Python's IDNA 2003 codec maps ß to "ss" and drops zero-width joiners; browsers
    # (UTS 46, non-transitional) keep them: xn--strae-oqa.example is another domain.
    assert category(library, "https://strasse.example/guide") is Category.OK
    for host in ("straße.example", "stras\u200dse.example", "stras\u200cse.example"):
        assert category(library, f"https://{host}/guide") is Category.FABRICATED, host


def test_document_ids_and_versions(library: InMemoryLibrary) -> None:
    assert category(library, "src-a") is Category.OK
    assert category(library, "src-a@2") is Category.OK
    [late] = classify(library, "src-a@1").findings
    assert late.category is Category.OUTDATED and "version 2 was current" in late.reason
    # Before version 2 was registered, version 1 was the one to cite: ok, superseded since.
    [early] = classify(library, "src-a@1", when=datetime(2026, 2, 1, tzinfo=UTC)).findings
    assert early.category is Category.OK and "superseded since by version 2" in early.reason
    [beyond] = classify(library, "src-a@9").findings
    assert beyond.category is Category.NO_SUCH_DOCUMENT and "latest 2" in beyond.reason
    assert category(library, "src-a@0") is Category.NO_SUCH_DOCUMENT
    assert category(library, "src-zz") is Category.NO_SUCH_DOCUMENT
    assert category(library, "not/an id") is Category.NO_SUCH_DOCUMENT
    # A timestamp before the registry's history: compared with the current version.
    [old] = classify(library, "src-a@1", when=datetime(2020, 1, 1, tzinfo=UTC)).findings
    assert old.category is Category.OUTDATED and "history starts after" in old.reason


def test_a_version_in_a_url_citation_is_checked_too(library: InMemoryLibrary) -> None:
    url = "https://books.example/reliable"
    assert category(library, CitedRef(url, url=url, version=1)) is Category.OUTDATED
    assert category(library, CitedRef(url, url=url, version=3)) is Category.NO_SUCH_DOCUMENT


def test_tombstoned_and_pruned_are_unavailable(library: InMemoryLibrary) -> None:
    [by_id] = classify(library, "src-c").findings
    assert by_id.category is Category.UNAVAILABLE and "deleted" in by_id.reason
    assert category(library, "https://books.example/c") is Category.UNAVAILABLE
    assert category(library, "src-c@1") is Category.UNAVAILABLE
    [pruned] = classify(library, "src-e@1").findings
    assert pruned.category is Category.UNAVAILABLE and "retention" in pruned.reason
    assert category(library, "src-e@3") is Category.OK


def test_forbidden_for_the_reader_it_was_shown_to(library: InMemoryLibrary) -> None:
    assert category(library, "src-b", user="sam") is Category.OK
    [denied] = classify(library, "src-b", user="alice").findings
    assert denied.category is Category.FORBIDDEN and denied.source_id == "src-b"
    assert category(library, "https://books.example/b", user="alice") is Category.FORBIDDEN
    # A deleted source the reader may not see: forbidden, not "deleted" (nothing learnt).
    assert category(library, "src-f", user="alice") is Category.FORBIDDEN
    assert category(library, "src-f", user="sam") is Category.UNAVAILABLE
    # Unknown, disabled and other-tenant readers see nothing.
    for user in ("nobody", "gone", "olga"):
        assert category(library, "src-a", user=user) is Category.FORBIDDEN


def test_a_reader_running_the_report_learns_no_forbidden_source() -> None:
    lib = InMemoryLibrary()
    commit(lib, src("src-b", None, "/b.pdf", frozenset({"staff"})), [])
    [finding] = classify(lib, "src-b", actor=READERS["alice"]).findings
    assert finding.category is Category.FORBIDDEN and finding.source_id is None
    with pytest.raises(Forbidden):
        classify(lib, "src-b", user="sam", actor=READERS["alice"])


def test_a_location_two_sources_share_leads_to_the_one_the_reader_may_read() -> None:
    # Picking the first by id ignored the reader: alice's link to the handbook was
    # "forbidden" (the board's source sorts first), and its reason named the board's id.
    lib = InMemoryLibrary()
    url = "https://shared.example/handbook"
    commit(lib, src("aaa-board", url, "/a.pdf", frozenset({"board"})), [])
    commit(lib, src("zz-open", url, "/z.pdf"), [])
    [bare] = classify(lib, url, actor=READERS["alice"]).findings
    assert (bare.category, bare.source_id) == (Category.OK, "zz-open")
    assert "aaa-board" not in bare.reason
    [meant] = classify(
        lib, CitedRef(url, url=url, doc_id="zz-open"), actor=READERS["alice"]
    ).findings
    assert meant.category is Category.OK and "aaa-board" not in meant.reason
    # An admin reading as itself is told of both.
    [admin] = classify(lib, url).findings
    assert admin.source_id == "aaa-board" and "zz-open" in admin.reason


def test_moved_origins_and_urls(library: InMemoryLibrary) -> None:
    [path] = classify(library, "/old/d.pdf").findings
    assert path.category is Category.MOVED and path.reason == "moved: now /new/d.pdf"
    assert category(library, "file:///old/d.pdf") is Category.MOVED
    assert category(library, "/new/d.pdf") is Category.OK
    [url] = classify(library, "https://books.example/d").findings
    assert url.category is Category.MOVED and "https://books.example/d-new" in url.reason
    assert category(library, "/nowhere/d.pdf") is Category.NO_SUCH_DOCUMENT


def test_wrong_document_needs_the_answers_own_document_id(library: InMemoryLibrary) -> None:
    url = "https://books.example/reliable"
    [wrong] = classify(library, CitedRef("x", url=url, doc_id="src-d")).findings
    assert wrong.category is Category.WRONG_DOCUMENT
    assert wrong.reason == "the link leads to src-a, the answer meant src-d"
    assert category(library, CitedRef("x", url=url, doc_id="src-a")) is Category.OK
    fabricated = CitedRef("x", url="https://books.example/sg/2026", doc_id="src-a")
    assert category(library, fabricated) is Category.FABRICATED
    [unknown] = classify(library, CitedRef("x", url=url, doc_id="src-zz")).findings
    assert unknown.category is Category.NO_SUCH_DOCUMENT and "src-zz" in unknown.reason
    moved_wrong = CitedRef("x", path="/old/d.pdf", doc_id="src-a")
    assert category(library, moved_wrong) is Category.WRONG_DOCUMENT


def test_counts_and_rates() -> None:
    lib = InMemoryLibrary()
    commit(lib, src("src-a", "https://books.example/a", "/a.pdf"), [])
    report = classify(lib, "src-a", "src-a", "https://books.example/zz", "src-q")
    assert report.answers == 1 and report.citations == 4
    assert report.counts[Category.OK] == 2 and report.counts[Category.FABRICATED] == 1
    assert report.measures()["verified_rate"] == 0.5
    assert report.measures()["fabricated_link_rate"] == 0.25
    assert report.measures()["wrong_document_rate"] == 0.0
    assert ShadowService(lib, READERS.get).run([], ADMIN).rate(Category.OK) is None


def test_url_keys() -> None:
    assert url_key("HTTPS://Books.Example:443/a/b/?q=1#frag") == UrlKey(
        "books.example", "/a/b", "q=1"
    )
    assert url_key("https://books.example") == UrlKey("books.example", "/", "")
    assert url_key("https://books.example:8080/") == UrlKey("books.example:8080", "/", "")
    assert url_key("file:///x/y%20z.pdf") == UrlKey(path_key="/x/y z.pdf")
    assert isinstance(url_key("https://books.example:99999/"), str)


RECORD = {
    "id": "q1",
    "question": "Who authorises travel exceptions?",
    "answer": "The Regional Finance Director.",
    "citations": ["https://policies.example/sg", {"url": "https://a.example/x", "doc_id": "p"}],
    "timestamp": "2026-05-01T09:30:00Z",
}


def line(value: object) -> bytes:
    return json.dumps(value).encode()


def test_a_record_parses() -> None:
    record = parse_record(3, line(RECORD))
    assert record.line == 3 and record.record_id == "q1" and record.user is None
    assert record.timestamp == datetime(2026, 5, 1, 9, 30, tzinfo=UTC)
    assert record.citations[1] == CitedRef(
        "https://a.example/x for p", url="https://a.example/x", doc_id="p"
    )
    assert cited_text("pol@3") == CitedRef("pol@3", doc_id="pol", version=3)
    assert cited_text("/srv/p.pdf").path == "/srv/p.pdf"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b"\xff\xfe", "not UTF-8"),
        (line({k: v for k, v in RECORD.items() if k != "timestamp"}), "missing field 'timestamp'"),
        (line({**RECORD, "timestamp": "2026-05-01T09:30:00"}), "needs a timezone"),
        (line({**RECORD, "timestamp": "yesterday"}), "not ISO 8601"),
        (line({**RECORD, "citations": "https://a.example"}), "must be a list"),
        (line({**RECORD, "citations": [7]}), "citation 1 must be a string or an object"),
        (line({**RECORD, "citations": [{"version": 2}]}), "names no url, path or doc_id"),
        (line({**RECORD, "citations": [{"doc_id": "p", "version": True}]}), "'version'"),
        (line({**RECORD, "citations": [{"doc_id": "p", "href": "x"}]}), "unknown field 'href'"),
        (line({**RECORD, "extra": 1}), "unknown field 'extra'"),
        (line({**RECORD, "user": ""}), "'user'"),
        (b" " * (MAX_LINE_BYTES + 1), "longer than"),
    ],
)
def test_bad_records_are_refused_with_their_line(raw: bytes, reason: str) -> None:
    with pytest.raises(BadRecord) as caught:
        parse_record(7, raw)
    assert caught.value.line == 7 and reason in str(caught.value)
    assert str(caught.value).startswith("line 7: ")
