"""``neutral_markdown``: library text as Markdown every renderer shows as exactly that text."""

from __future__ import annotations

import lxml.html
import pytest

from citadel.entrypoints.present.neutral import neutral_markdown, shown_characters
from tests.hostile_texts import HOSTILE, HTML_MANUAL
from tests.rendered import render_markdown, what_markdown_renders


def shown_text(markdown: str) -> str:
    """What a reader sees once ``markdown`` is rendered (whitespace runs as one space)."""
    html = render_markdown(markdown)
    return " ".join(lxml.html.fragment_fromstring(html, create_parent="div").text_content().split())


@pytest.mark.parametrize("hostile", HOSTILE, ids=lambda h: h.name)
def test_every_hostile_text_renders_as_text(hostile: object) -> None:
    text = hostile.text
    assert what_markdown_renders(neutral_markdown(text)) == []
    assert what_markdown_renders(neutral_markdown(f"A line.\n\n{text}\n# Heading")) == []


@pytest.mark.parametrize(
    "text",
    [
        HTML_MANUAL,
        "Use `x` or ``y`` and ```z``` here.",
        "`starts and ends with a backtick`",
        " spaced ",
        "line one\n# two\n```\nthree",
        "a * b * c and _under_ and [a](b.c)",
    ],
)
def test_the_reader_sees_the_books_own_characters(text: str) -> None:
    rendered = neutral_markdown(text)
    assert what_markdown_renders(rendered) == []
    assert shown_text(rendered) == " ".join(text.split())


def test_plain_prose_is_left_as_it_is() -> None:
    prose = "A retry budget caps the attempts a client may make, e.g. 3 in 3.11 seconds."
    assert neutral_markdown(prose) == prose


def test_controls_become_the_replacement_character() -> None:
    assert shown_characters("a\x1b]8;;x\x1b\\b\u202ec\x9dd\u2028e\nf\tg") == (
        "a\ufffd]8;;x\ufffd\\b\ufffdc\ufffdd\ufffde\nf\tg"
    )
