"""The home page (the ask page with no question), over a real server and real books:
what the library holds for this reader, questions drawn from its headings that each
ask when followed, nothing of another tenant's or group's books, and an empty
library said plainly with the command that fills it."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

import pytest

from citadel.domain.users import Role
from tests.http.shelves import OPS_TITLE, OTHER_TITLE, Shelves, shelves, signed_in


@pytest.fixture(scope="module")
def shelf(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shelves]:
    yield from shelves(tmp_path_factory.mktemp("home"))


def home_section(page: str) -> str:
    match = re.search(r'<section class="home".*?</section>', page, re.S)
    assert match, "the ask page without a question shows no home section"
    return match.group(0)


def suggestions(section: str) -> list[tuple[str, str]]:
    found = re.findall(r'<ul class="suggested">(.*?)</ul>', section, re.S)
    assert found, section
    return [
        (html.unescape(href), html.unescape(text))
        for href, text in re.findall(r'<a href="([^"]+)">([^<]+)</a>', found[0])
    ]


def test_home_says_what_the_library_holds(shelf: Shelves) -> None:
    with signed_in(shelf, "ada") as client:
        section = home_section(client.get("/ask").text)
    text = html.unescape(re.sub(r"<[^>]+>", "", section))
    services = shelf.library.services
    open_ids = ("md", "pdf", "git", "tutorial")
    counts = {}
    for name in open_ids:
        source = services.registry.get("default", shelf.ids[name])
        assert source is not None
        version = services.registry.versions("default", source.source_id)[-1]
        counts[name] = version.section_count
        assert source.title in text
        # Each book with its own sections count, linked to its page.
        assert f'href="/library/{source.source_id}"' in section
        assert f"{version.section_count} sections" in text
    assert f"4 books, {sum(counts.values())} sections" in text
    latest = max(
        services.registry.versions("default", shelf.ids[n])[-1].created_at for n in open_ids
    )
    assert f'datetime="{latest}"' in section


def test_suggested_questions_come_from_headings_and_ask_when_followed(shelf: Shelves) -> None:
    with signed_in(shelf, "ada") as client:
        first = suggestions(home_section(client.get("/ask").text))
        again = suggestions(home_section(client.get("/ask").text))
        assert 3 <= len(first) <= 6
        assert first == again  # deterministic
        questions = [q for _, q in first]
        assert all(q.endswith("?") for q in questions)
        # Drawn from headings, with junk and numbering gone.
        joined = " ".join(questions)
        for junk in ("Contents", "Index", "Preface", "Introduction"):
            assert junk not in joined
        assert not any(re.search(r"\b\d+(\.\d+)+\b", q) for q in questions)
        # The Git manual's "How to get a Git repository" reads as a question.
        assert "How do I get a Git repository?" in questions
        href, question = first[0]
        reply = client.get(href)
    assert reply.status_code == 200
    assert html.escape(question, quote=False) in reply.text
    assert '<section class="answer' in reply.text  # it asked: an answer (or its passages)


def test_home_shows_only_what_the_reader_may_read(shelf: Shelves) -> None:
    with signed_in(shelf, "ada") as client:
        page = client.get("/ask").text
    assert OPS_TITLE not in page
    assert OTHER_TITLE not in page
    assert "Paging Escalation" not in page  # nor a question drawn from them
    with signed_in(shelf, "grace") as client:
        assert OPS_TITLE in home_section(client.get("/ask").text)
    with signed_in(shelf, "eve") as client:
        section = home_section(client.get("/ask").text)
    assert OTHER_TITLE in section
    assert "An Introduction to R" not in section and "Git User Manual" not in section


def test_an_empty_library_says_so_with_the_command_to_ingest(shelf: Shelves) -> None:
    # A reader of a tenant that holds no book at all.
    _, shelf.library.tokens["nell"] = shelf.library.services.users.add("nell", Role.READER, "empty")
    with signed_in(shelf, "nell") as client:
        section = home_section(client.get("/ask").text)
    text = html.unescape(re.sub(r"<[^>]+>", "", section))
    assert "The library is empty" in text
    assert "citadel ingest" in text
    assert "Try asking" not in text
