"""The small pieces of the reader's page: passage blocks, sizes, ask queries, recent questions."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest

from citadel.domain.users import Actor
from citadel.entrypoints.http.ask_query import AskQuery
from citadel.entrypoints.http.recent import RecentQuestions
from citadel.entrypoints.present.blocks import Block, lead, passage_blocks
from citadel.entrypoints.present.labels import human_bytes


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0 bytes"),
        (1, "1 byte"),
        (1023, "1023 bytes"),
        (1024, "1 KiB"),
        (1536, "1.5 KiB"),
        (8 * 1024 * 1024, "8 MiB"),
        (536_870_912, "512 MiB"),
        (3 * 1024**4, "3 TiB"),
        (5000 * 1024**4, "5000 TiB"),
    ],
)
def test_sizes_read_in_binary_units(size: int, text: str) -> None:
    assert human_bytes(size) == text


def test_prose_folds_its_line_breaks_and_code_keeps_them() -> None:
    text = (
        "To read a file into a data frame, use\nthe read.table() function (see below):\n\n"
        "> df <- read.table('houses.data')\n> df[1:3, ]\n\n"
        "for (i in 1:3) {\n    print(df[i, ])\n}\n\n"
        "It returns one row\nper line."
    )
    assert passage_blocks(text) == (
        Block(
            "To read a file into a data frame, use the read.table() function (see below):",
            code=False,
        ),
        Block("> df <- read.table('houses.data')\n> df[1:3, ]", code=True),
        Block("for (i in 1:3) {\n    print(df[i, ])\n}", code=True),
        Block("It returns one row per line.", code=False),
    )


def test_a_prompt_line_inside_prose_is_code_and_the_prose_around_it_is_not() -> None:
    blocks = passage_blocks("Type this at the prompt:\n$ citadel ask 'why?'\nand read the answer.")
    assert [b.code for b in blocks] == [False, True, False]
    assert blocks[1].text == "$ citadel ask 'why?'"


def test_the_lead_is_cut_at_a_word() -> None:
    text = "word " * 100
    cut = lead(text, 50)
    assert cut.endswith("…") and len(cut) <= 51 and "  " not in cut
    assert lead("short\ntext") == "short text"


def test_an_ask_query_round_trips_through_its_permalink() -> None:
    query = AskQuery("What & why? 100%", source="r-intro", tag="stats", year_from="1999")
    link = urlsplit(query.permalink)
    assert link.path == "/ask"
    again = AskQuery.of(dict(parse_qsl(link.query)))
    assert again == query and again.problem() is None
    request = again.request()
    assert request.search.filters.source_ids == frozenset({"r-intro"})
    assert request.search.filters.tags_any == frozenset({"stats"})
    assert request.search.filters.year_min == 1999 and request.search.filters.year_max is None
    assert "year_to" not in query.permalink, "unset filters stay out of the link"


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"q": ""}, "Ask a question of 1 to 2000 characters."),
        ({"q": "x" * 2001}, "Ask a question of 1 to 2000 characters."),
        (
            {"q": "x", "year_to": "2k"},
            "Years are whole numbers such as 1999; “2k” (year to) is not.",
        ),
        ({"q": "x", "year_from": "12345"}, "Years are whole numbers"),
        ({"q": "x", "year_from": "2001", "year_to": "1999"}, "from 2001 to 1999"),
    ],
)
def test_bad_queries_say_what_is_wrong(fields: dict[str, str], problem: str) -> None:
    found = AskQuery.of(fields).problem()
    assert found is not None and problem in found


def test_recent_questions_are_per_reader_newest_first_and_bounded() -> None:
    recent = RecentQuestions(per_user=3, users=2)
    ada, bob, eve = (Actor(user_id=n, tenant="t") for n in ("ada", "bob", "eve"))
    other_ada = Actor(user_id="ada", tenant="elsewhere")
    for n in range(5):
        recent.add(ada, AskQuery(f"q{n}"))
    recent.add(ada, AskQuery("q2"))  # asked again: moves up, not twice
    assert [q.question for q in recent.of(ada)] == ["q2", "q4", "q3"]
    assert recent.of(other_ada) == [], "the same name in another tenant is another reader"
    recent.add(bob, AskQuery("b"))
    recent.add(eve, AskQuery("e"))  # a third reader: the least recently active goes
    assert recent.of(ada) == [] and [q.question for q in recent.of(eve)] == ["e"]
    recent.forget("t", "eve")
    assert recent.of(eve) == [] and recent.of(bob) == [AskQuery("b")]


def test_prose_keeps_the_breaks_its_author_made_and_folds_the_margins() -> None:
    text = (
        "Missing values\n"
        "In some cases the components of a vector may not be completely\n"
        "known. When an element or value is not available in the\n"
        "statistical sense, the value NA is reserved for it.\n"
        "• is.na(x) gives a logical vector of the same size as x\n"
        "• NA is not a value but a marker"
    )
    assert [b.text for b in passage_blocks(text)] == [
        "Missing values",
        "In some cases the components of a vector may not be completely known. When an"
        " element or value is not available in the statistical sense, the value NA is"
        " reserved for it.",
        "• is.na(x) gives a logical vector of the same size as x",
        "• NA is not a value but a marker",
    ]
    assert all(not b.code for b in passage_blocks(text))


def test_numbered_items_start_their_own_paragraphs() -> None:
    text = "Steps to follow before any release of the package:\n1. run the tests\n2. tag it"
    assert [b.text for b in passage_blocks(text)] == [
        "Steps to follow before any release of the package:",
        "1. run the tests",
        "2. tag it",
    ]
