"""Atomic validation of a generator's candidate against the frozen manifest.

Each rejection reason is reached by a concrete, adversarial case; property tests
show that validation never raises on arbitrary JSON and that nothing it accepts
carries control or format characters, URLs or markup.
"""

from __future__ import annotations

import html.entities
import re
import unicodedata
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from citadel.domain.limits import Limits
from citadel.domain.manifest import ContextEvidence, Manifest, freeze_manifest
from citadel.domain.markup import contains_markup
from citadel.domain.statement import states_something
from citadel.domain.text import contains_url
from citadel.domain.validation import Accepted, Rejection, RejectionReason, validate_candidate
from tests.builders import make_evidence

R = RejectionReason


def manifest_of(n: int) -> Manifest:
    return freeze_manifest(
        tuple(
            ContextEvidence(make_evidence(f"evidence-{i}", f"Passage {i}.", section=f"s{i}"))
            for i in range(1, n + 1)
        )
    )


MANIFEST = manifest_of(3)
NINE = manifest_of(9)


def one(text: Any = "A bounded retry policy limits attempts.", refs: Any = None) -> dict[str, Any]:
    return {"segments": [{"text": text, "evidence_ids": ["E1"] if refs is None else refs}]}


def seg(text: str = "Fine.", refs: list[str] | None = None) -> dict[str, Any]:
    return {"text": text, "evidence_ids": refs or ["E1"]}


# (case id, payload, manifest, limits, expected reason)
CASES: list[tuple[str, object, Manifest, Limits, RejectionReason]] = [
    # -- the shape of the whole candidate
    ("null", None, MANIFEST, Limits(), R.NOT_AN_OBJECT),
    ("empty list", [], MANIFEST, Limits(), R.NOT_AN_OBJECT),
    ("list of segments", [seg()], MANIFEST, Limits(), R.NOT_AN_OBJECT),
    ("string", '{"segments": []}', MANIFEST, Limits(), R.NOT_AN_OBJECT),
    ("number", 42, MANIFEST, Limits(), R.NOT_AN_OBJECT),
    (
        "extra url field",
        {"segments": [seg()], "url": "x"},
        MANIFEST,
        Limits(),
        R.UNKNOWN_FIELD,
    ),
    (
        "reasoning field",
        {"segments": [seg()], "reasoning": ""},
        MANIFEST,
        Limits(),
        R.UNKNOWN_FIELD,
    ),
    ("no segments key", {}, MANIFEST, Limits(), R.SEGMENTS_NOT_A_LIST),
    ("segments null", {"segments": None}, MANIFEST, Limits(), R.SEGMENTS_NOT_A_LIST),
    ("segments object", {"segments": seg()}, MANIFEST, Limits(), R.SEGMENTS_NOT_A_LIST),
    ("segments string", {"segments": "E1"}, MANIFEST, Limits(), R.SEGMENTS_NOT_A_LIST),
    ("empty segments", {"segments": []}, MANIFEST, Limits(), R.NO_SEGMENTS),
    ("9 segments", {"segments": [seg()] * 9}, MANIFEST, Limits(), R.TOO_MANY_SEGMENTS),
    ("segment is a string", {"segments": ["Fine."]}, MANIFEST, Limits(), R.SEGMENT_NOT_AN_OBJECT),
    ("segment is null", {"segments": [None]}, MANIFEST, Limits(), R.SEGMENT_NOT_AN_OBJECT),
    (
        "segment is a list",
        {"segments": [["Fine.", "E1"]]},
        MANIFEST,
        Limits(),
        R.SEGMENT_NOT_AN_OBJECT,
    ),
    # -- a segment's fields
    (
        "segment url field",
        {"segments": [{**seg(), "url": "https://evil.example"}]},
        MANIFEST,
        Limits(),
        R.UNKNOWN_FIELD,
    ),
    (
        "segment claims its own attribution",
        {"segments": [{**seg(), "title": "Fake Book", "pages": "1234"}]},
        MANIFEST,
        Limits(),
        R.UNKNOWN_FIELD,
    ),
    ("text int", one(7), MANIFEST, Limits(), R.TEXT_NOT_A_STRING),
    ("text null", one(None), MANIFEST, Limits(), R.TEXT_NOT_A_STRING),
    ("text list", one(["a"]), MANIFEST, Limits(), R.TEXT_NOT_A_STRING),
    (
        "text missing",
        {"segments": [{"evidence_ids": ["E1"]}]},
        MANIFEST,
        Limits(),
        R.TEXT_NOT_A_STRING,
    ),
    ("text empty", one(""), MANIFEST, Limits(), R.EMPTY_TEXT),
    ("text blank", one("  \n  "), MANIFEST, Limits(), R.EMPTY_TEXT),
    ("text 1025 bytes", one("x" * 1025), MANIFEST, Limits(), R.SEGMENT_TOO_LONG),
    ("text 1026 bytes in 513 chars", one("é" * 513), MANIFEST, Limits(), R.SEGMENT_TOO_LONG),
    ("lone surrogate", one("Fine \ud800 text."), MANIFEST, Limits(), R.INVALID_UTF8),
    ("lone low surrogate", one("\udfff"), MANIFEST, Limits(), R.INVALID_UTF8),
    # -- control characters (newline is the only one allowed)
    ("tab", one("Column\tvalue."), MANIFEST, Limits(), R.CONTROL_CHARACTER),
    ("ansi escape", one("\x1b[31mred\x1b[0m text"), MANIFEST, Limits(), R.CONTROL_CHARACTER),
    ("carriage return", one("Over\rwritten."), MANIFEST, Limits(), R.CONTROL_CHARACTER),
    ("nul", one("Nul\x00byte."), MANIFEST, Limits(), R.CONTROL_CHARACTER),
    ("delete", one("Del\x7f."), MANIFEST, Limits(), R.CONTROL_CHARACTER),
    ("c1 next line", one("Next\x85line."), MANIFEST, Limits(), R.CONTROL_CHARACTER),
    ("line separator", one("Line\u2028separator."), MANIFEST, Limits(), R.CONTROL_CHARACTER),
    ("paragraph separator", one("Para\u2029graph."), MANIFEST, Limits(), R.CONTROL_CHARACTER),
    ("private use", one("Private \ue000 use."), MANIFEST, Limits(), R.CONTROL_CHARACTER),
    # -- format characters (category Cf)
    ("bidi override", one("Safe \u202egnp.exe"), MANIFEST, Limits(), R.FORMAT_CHARACTER),
    ("bidi embedding", one("Left \u202a embed."), MANIFEST, Limits(), R.FORMAT_CHARACTER),
    ("bidi isolate", one("Iso \u2066late\u2069."), MANIFEST, Limits(), R.FORMAT_CHARACTER),
    ("zero width space in text", one("Zero\u200bwidth."), MANIFEST, Limits(), R.FORMAT_CHARACTER),
    ("zero width joiner", one("Join\u200ded."), MANIFEST, Limits(), R.FORMAT_CHARACTER),
    ("right-to-left mark", one("Mark\u200f."), MANIFEST, Limits(), R.FORMAT_CHARACTER),
    ("byte order mark", one("\ufeffLeading BOM."), MANIFEST, Limits(), R.FORMAT_CHARACTER),
    ("soft hyphen", one("Soft\u00adhyphen."), MANIFEST, Limits(), R.FORMAT_CHARACTER),
    ("word joiner", one("Word\u2060joiner."), MANIFEST, Limits(), R.FORMAT_CHARACTER),
    ("tag character", one("Tag \U000e0041 char."), MANIFEST, Limits(), R.FORMAT_CHARACTER),
    # -- URLs
    ("https url", one("See https://example.com/x for more."), MANIFEST, Limits(), R.URL_IN_TEXT),
    ("upper-case url", one("See HTTP://EXAMPLE.COM now."), MANIFEST, Limits(), R.URL_IN_TEXT),
    ("ftp url", one("Fetch ftp://files.example/a.tgz today."), MANIFEST, Limits(), R.URL_IN_TEXT),
    ("javascript", one("Click javascript:alert(1) here."), MANIFEST, Limits(), R.URL_IN_TEXT),
    ("javascript spaced", one("Run JavaScript :alert(1)."), MANIFEST, Limits(), R.URL_IN_TEXT),
    ("data url", one("Open data:text/html;base64,AAAA now."), MANIFEST, Limits(), R.URL_IN_TEXT),
    ("mailto", one("Write to mailto:a@example.com please."), MANIFEST, Limits(), R.URL_IN_TEXT),
    ("www host", one("Visit www.example.com today."), MANIFEST, Limits(), R.URL_IN_TEXT),
    ("protocol-relative", one("Load //evil.example/x.js now."), MANIFEST, Limits(), R.URL_IN_TEXT),
    # -- markup
    # A Markdown link whose target is a path or a URL (one that is just a word, as in
    # d[key](args), is call syntax: see test_technical_text_is_accepted).
    (
        "markdown link",
        one("Read [the manual](./manual) first."),
        MANIFEST,
        Limits(),
        R.MARKUP_IN_TEXT,
    ),
    ("markdown link, root", one("Read [it](/admin) now."), MANIFEST, Limits(), R.MARKUP_IN_TEXT),
    ("markdown link, file", one("Read [it](d/a.html) now."), MANIFEST, Limits(), R.MARKUP_IN_TEXT),
    ("markdown link, anchor", one("Read [it](#top) now."), MANIFEST, Limits(), R.MARKUP_IN_TEXT),
    ("markdown image", one("Look ![chart](c.png) here."), MANIFEST, Limits(), R.MARKUP_IN_TEXT),
    (
        "reference link with its definition",
        one("See [the manual][1] first.\n[1]: manual"),
        MANIFEST,
        Limits(),
        R.MARKUP_IN_TEXT,
    ),
    ("link definition", one("Text.\n[1]: evil"), MANIFEST, Limits(), R.MARKUP_IN_TEXT),
    ("autolink", one("Go <foo:bar> now."), MANIFEST, Limits(), R.MARKUP_IN_TEXT),
    ("html bold", one("This is <b>bold</b>."), MANIFEST, Limits(), R.MARKUP_IN_TEXT),
    ("html script", one("<script>alert(1)</script>"), MANIFEST, Limits(), R.MARKUP_IN_TEXT),
    (
        'a tag name HTML reads up to ">"',
        one("See <http!> now."),
        MANIFEST,
        Limits(),
        R.MARKUP_IN_TEXT,
    ),
    ("html img", one("An <img src=x onerror=y> tag."), MANIFEST, Limits(), R.MARKUP_IN_TEXT),
    ("html comment", one("Hidden <!-- note --> text."), MANIFEST, Limits(), R.MARKUP_IN_TEXT),
    ("html entity", one("Escaped &lt;b&gt; text."), MANIFEST, Limits(), R.MARKUP_IN_TEXT),
    ("numeric entity", one("Escaped &#60;b&#x3e; text."), MANIFEST, Limits(), R.MARKUP_IN_TEXT),
    ("amp entity", one("Escaped &amp;lt; text."), MANIFEST, Limits(), R.MARKUP_IN_TEXT),
    ("digit entity", one("Half is &frac12; here."), MANIFEST, Limits(), R.MARKUP_IN_TEXT),
    # -- markup as the HTML tokenizer reads it, whatever the tag's name
    (
        "a thread repr is a start tag",
        one("Worker <Thread(worker 1, started 123145)> running"),
        MANIFEST,
        Limits(),
        R.MARKUP_IN_TEXT,
    ),
    ("svg onload", one("An <svg/onload=alert(1)> here."), MANIFEST, Limits(), R.MARKUP_IN_TEXT),
    ("img onerror", one("<img src=x onerror=alert(1)>"), MANIFEST, Limits(), R.MARKUP_IN_TEXT),
    ("mixed-case script", one("<ScRiPt>alert(1)</ScRiPt>"), MANIFEST, Limits(), R.MARKUP_IN_TEXT),
    ("unterminated tag", one("Plain, then <a href=x"), MANIFEST, Limits(), R.MARKUP_IN_TEXT),
    ("unterminated comment", one("Plain, then <!-- x"), MANIFEST, Limits(), R.MARKUP_IN_TEXT),
    ("end tag open", one("Plain, then </"), MANIFEST, Limits(), R.MARKUP_IN_TEXT),
    ("empty end tag", one("Plain </> text."), MANIFEST, Limits(), R.MARKUP_IN_TEXT),
    ("doctype", one("<!DOCTYPE html> text."), MANIFEST, Limits(), R.MARKUP_IN_TEXT),
    ("processing instruction", one("<?php x ?> text."), MANIFEST, Limits(), R.MARKUP_IN_TEXT),
    ("cdata", one("<![CDATA[x]]> text."), MANIFEST, Limits(), R.MARKUP_IN_TEXT),
    ("less-than then a letter", one("Loop while i<n holds."), MANIFEST, Limits(), R.MARKUP_IN_TEXT),
    # -- citations
    ("evidence_ids a string", one(refs="E1"), MANIFEST, Limits(), R.CITATIONS_NOT_A_LIST),
    (
        "evidence_ids null",
        {"segments": [{"text": "Fine.", "evidence_ids": None}]},
        MANIFEST,
        Limits(),
        R.CITATIONS_NOT_A_LIST,
    ),
    (
        "evidence_ids missing",
        {"segments": [{"text": "Fine."}]},
        MANIFEST,
        Limits(),
        R.CITATIONS_NOT_A_LIST,
    ),
    ("evidence_ids object", one(refs={"E1": 1}), MANIFEST, Limits(), R.CITATIONS_NOT_A_LIST),
    ("no refs", one(refs=[]), MANIFEST, Limits(), R.NO_CITATIONS),
    (
        "9 refs",
        one(refs=[f"E{i}" for i in range(1, 10)]),
        NINE,
        Limits(),
        R.TOO_MANY_CITATIONS,
    ),
    ("ref int", one(refs=[1]), MANIFEST, Limits(), R.REF_NOT_A_STRING),
    ("ref null", one(refs=[None]), MANIFEST, Limits(), R.REF_NOT_A_STRING),
    ("ref list", one(refs=[["E1"]]), MANIFEST, Limits(), R.REF_NOT_A_STRING),
    ("ref lower-cased", one(refs=["e1"]), MANIFEST, Limits(), R.UNKNOWN_REF),
    ("ref padded left", one(refs=[" E1"]), MANIFEST, Limits(), R.UNKNOWN_REF),
    ("ref padded right", one(refs=["E1 "]), MANIFEST, Limits(), R.UNKNOWN_REF),
    ("ref zero-padded", one(refs=["E01"]), MANIFEST, Limits(), R.UNKNOWN_REF),
    ("ref with zero width space", one(refs=["E\u200b1"]), MANIFEST, Limits(), R.UNKNOWN_REF),
    ("ref full-width", one(refs=["Ｅ1"]), MANIFEST, Limits(), R.UNKNOWN_REF),
    ("ref out of range", one(refs=["E4"]), MANIFEST, Limits(), R.UNKNOWN_REF),
    ("ref E0", one(refs=["E0"]), MANIFEST, Limits(), R.UNKNOWN_REF),
    # The model never saw evidence ids; guessing one is still not a ref.
    ("real evidence id", one(refs=["evidence-1"]), MANIFEST, Limits(), R.UNKNOWN_REF),
    ("seed's unknown id", one(refs=["evidence-yy"]), MANIFEST, Limits(), R.UNKNOWN_REF),
    ("known then unknown", one(refs=["E1", "E9"]), MANIFEST, Limits(), R.UNKNOWN_REF),
    ("repeated ref", one(refs=["E1", "E1"]), MANIFEST, Limits(), R.DUPLICATE_REF),
    ("repeated after another", one(refs=["E1", "E2", "E1"]), MANIFEST, Limits(), R.DUPLICATE_REF),
    # -- the whole answer
    (
        "seed: 4-byte answer limit",
        one("large"),
        MANIFEST,
        Limits(max_answer_bytes=4),
        R.ANSWER_TOO_LONG,
    ),
    (
        "over 8 KiB in 9 segments",
        {"segments": [seg("y" * 1000 + f" {i}") for i in range(9)]},
        MANIFEST,
        Limits(max_segments=16),
        R.ANSWER_TOO_LONG,
    ),
    # -- segments that say nothing, or say it again
    ("an ellipsis", {"segments": [seg("...")]}, MANIFEST, Limits(), R.NO_WORDS),
    (
        "dashes and stars",
        {"segments": [seg("Fine."), seg("— * —")]},
        MANIFEST,
        Limits(),
        R.NO_WORDS,
    ),
    ("a number", {"segments": [seg("12")]}, MANIFEST, Limits(), R.STATES_NOTHING),
    ("numbers", {"segments": [seg("Fine."), seg("2 1.3")]}, MANIFEST, Limits(), R.STATES_NOTHING),
    ("a stop word", {"segments": [seg("the")]}, MANIFEST, Limits(), R.STATES_NOTHING),
    ("a letter", {"segments": [seg("x")]}, MANIFEST, Limits(), R.STATES_NOTHING),
    (
        "one sentence twice",
        {"segments": [seg("Retries are bounded."), seg("Retries are bounded.", ["E2"])]},
        MANIFEST,
        Limits(),
        R.REPEATED_SEGMENT,
    ),
    (
        "a repeat in other case and spacing",
        {"segments": [seg("Retries are bounded."), seg("retries  ARE bounded!")]},
        MANIFEST,
        Limits(),
        R.REPEATED_SEGMENT,
    ),
]


@pytest.mark.parametrize(
    ("payload", "manifest", "limits", "reason"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_rejection_reasons(
    payload: object, manifest: Manifest, limits: Limits, reason: RejectionReason
) -> None:
    verdict = validate_candidate(payload, manifest, limits)
    assert isinstance(verdict, Rejection), verdict
    assert verdict.reason is reason, verdict
    assert verdict.detail


def test_every_rejection_reason_has_a_concrete_case() -> None:
    assert {case[4] for case in CASES} == set(RejectionReason)


def test_rejection_names_the_failing_segment() -> None:
    payload = {"segments": [seg("First is fine."), seg("Second is fine."), seg("Bad", ["E7"])]}
    verdict = validate_candidate(payload, MANIFEST, Limits())
    assert isinstance(verdict, Rejection)
    assert (verdict.reason, verdict.segment) == (R.UNKNOWN_REF, 2)


@pytest.mark.parametrize(
    "payload",
    [
        # The seed's mixed-validity output: one good segment does not save the answer.
        {"segments": [seg("ok"), seg("bad", ["unknown"])]},
        {"segments": [seg("ok"), {"text": "bad", "evidence_ids": ["E1", "E1"]}]},
        {"segments": [seg("ok"), seg("see https://evil.example")]},
        {"segments": [seg("ok"), seg("ok\u202e")]},
        {"segments": [seg("ok"), seg("ok"), "not a segment"]},
    ],
)
def test_mixed_validity_output_is_rejected_whole(payload: object) -> None:
    assert isinstance(validate_candidate(payload, MANIFEST, Limits()), Rejection)


def test_details_escape_what_the_model_wrote() -> None:
    verdict = validate_candidate(one(refs=["E\u202e1\x1b[31m" + "z" * 100]), MANIFEST, Limits())
    assert isinstance(verdict, Rejection)
    assert verdict.reason is R.UNKNOWN_REF
    assert "\u202e" not in verdict.detail
    assert "\x1b" not in verdict.detail
    assert len(verdict.detail) < 120


def test_a_valid_answer_is_accepted_with_text_trimmed_and_refs_kept_in_order() -> None:
    payload = {
        "segments": [
            {"text": "  A bounded retry policy limits attempts.\n", "evidence_ids": ["E2", "E1"]},
            {"text": "Line one.\nLine two, e.g. Fig. 3 (p. 42).", "evidence_ids": ["E3"]},
        ]
    }
    verdict = validate_candidate(payload, MANIFEST, Limits())
    assert isinstance(verdict, Accepted), verdict
    assert [(s.text, s.refs) for s in verdict.segments] == [
        ("A bounded retry policy limits attempts.", ("E2", "E1")),
        ("Line one.\nLine two, e.g. Fig. 3 (p. 42).", ("E3",)),
    ]


@pytest.mark.parametrize(
    "text",
    ["Assign with x <- c(1, 2) in R.", "If a < b and c > d, stop.", "Loop while i<10 holds."],
)
def test_less_than_that_opens_no_tag_is_accepted(text: str) -> None:
    verdict = validate_candidate(one(text), MANIFEST, Limits())
    assert isinstance(verdict, Accepted), verdict


# Sentences of C, Python and shell books that no browser reads as an element (the UI
# shows text escaped) and no Markdown renderer turns into a link.
TECHNICAL_TEXT = [
    "Run sort < input > output to sort the file.",
    "Run cmd < file.txt > out.txt in the shell.",
    "Declare int *p = &count; to point at it.",
    "Set a[i][j] = 0 for every cell.",
    "Call d[key](args) to dispatch.",
    "Index the result as f(x)[0] here.",
    "Write def first[T](items: list[T]) -> T: in Python 3.12.",
    # The "spaced tag" rule is gone: no browser reads "< img" as a tag.
    "An < img src=x onerror=y> tag.",
    "A < script> is text.",
    "See [the manual][1] first.",
]


@pytest.mark.parametrize("text", TECHNICAL_TEXT)
def test_technical_text_is_accepted(text: str) -> None:
    verdict = validate_candidate(one(text), MANIFEST, Limits())
    assert isinstance(verdict, Accepted), verdict
    assert verdict.segments[0].text == text


_LEGACY = tuple(name for name in html.entities.html5 if not name.endswith(";"))


def not_an_entity(name: str) -> bool:
    """Not an HTML5 reference with its ";", nor one a browser decodes without it (a
    legacy name such as "gt" at its start: "&gt0;" shows as ">0;")."""
    return f"{name};" not in html.entities.html5 and not name.startswith(_LEGACY)


identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
code_pieces = (
    identifiers
    | identifiers.filter(not_an_entity).map(lambda name: f"&{name};")
    | st.sampled_from(["[", "]", "(", ")", "*", " ", ", ", " = ", " < ", " > ", "0", "1"])
)
code_like_texts = (
    st.lists(code_pieces, min_size=1, max_size=20)
    .map("".join)
    .filter(lambda text: any(c.isalnum() for c in text))
    # A lone letter or number states nothing: the statement rule, tested on its own.
    .filter(states_something)
)


@settings(max_examples=400, deadline=None)
@given(text=code_like_texts)
@example("int *p = &count; a[i][j] = d[key](args) < f(x)[0] > out")
def test_code_like_text_is_accepted(text: str) -> None:
    # Identifiers, brackets, parentheses, "*", "&name;" for a name that is no HTML5
    # reference and "<" / ">" with space after: array, call, pointer and shell syntax.
    verdict = validate_candidate(one(text), MANIFEST, Limits())
    assert isinstance(verdict, Accepted), (text, verdict)
    assert not contains_markup(text)


def test_the_same_ref_may_be_cited_by_several_segments() -> None:
    payload = {"segments": [seg("One."), seg("Two.")]}
    assert isinstance(validate_candidate(payload, MANIFEST, Limits()), Accepted)


def test_limits_are_inclusive() -> None:
    # 8 segments of exactly 1 KiB each, 8 distinct refs in one of them: exactly 8 KiB.
    segments = [seg("é" * 511 + f"{i:02d}") for i in range(7)]
    segments.append({"text": "x" * 1024, "evidence_ids": [f"E{i}" for i in range(1, 9)]})
    verdict = validate_candidate({"segments": segments}, NINE, Limits())
    assert isinstance(verdict, Accepted), verdict
    assert sum(len(s.text.encode()) for s in verdict.segments) == 8 * 1024


def test_segment_limit_is_measured_after_trimming() -> None:
    verdict = validate_candidate(one("   " + "x" * 1024 + "\n\n"), MANIFEST, Limits())
    assert isinstance(verdict, Accepted), verdict


# -- properties ---------------------------------------------------------------------

REFS = ["E1", "E2", "E3"]
BAD_REFS = ["E0", "E4", "e1", " E1", "E1 ", "E\u200b1", "evidence-1", "", "E１"]

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=25,
)

# Pieces an adversarial model would use: printable pieces of schemes, hosts, tags and
# links (which may combine into something forbidden, or not) ...
LINKISH = [
    *("http", "s", "://", ":", "/", "//", "www", ".", "example", "com"),
    *("javascript", "data", "mailto", "<", ">", "b", "script", "!", "--"),
    *("[", "]", "(", ")", "&", "#", "lt", ";", " ", "\n", "Retry", "é", "1", "x"),
]
# ... and characters that are never allowed (newline aside): controls, formats,
# separators, private use, surrogates.
HOSTILE = [
    *("\t", "\r", "\x1b", "\x00", "\x7f", "\x85"),
    *("\u200b", "\u200f", "\u202e", "\u2066", "\ufeff", "\u00ad", "\U000e0041"),
    *("\u2028", "\u2029", "\ue000", "\ud800"),
]
characters = st.characters(codec=None) | st.sampled_from(["\ud800", "\udc00", "\udfff"])
printable_texts = st.lists(st.sampled_from(LINKISH), min_size=1, max_size=12).map("".join)
texts = (
    printable_texts
    | st.lists(st.sampled_from(LINKISH) | st.sampled_from(HOSTILE), max_size=12).map("".join)
    | st.text(alphabet=characters, max_size=40)
)
refs = st.lists(st.sampled_from(REFS) | st.sampled_from(BAD_REFS) | json_scalars, max_size=4)
segments = st.fixed_dictionaries({"text": texts, "evidence_ids": refs}) | st.fixed_dictionaries(
    {"text": texts | json_values, "evidence_ids": refs | json_values},
    optional={"url": json_values, "title": st.text(max_size=10)},
)
candidates = (
    st.fixed_dictionaries({"segments": st.lists(segments, max_size=9)})
    | st.fixed_dictionaries({"segments": json_values})
    | json_values
)
plausible = st.fixed_dictionaries(
    {
        "segments": st.lists(
            st.fixed_dictionaries(
                {
                    "text": texts,
                    "evidence_ids": st.lists(
                        st.sampled_from(REFS), min_size=1, max_size=3, unique=True
                    ),
                }
            ),
            min_size=1,
            max_size=3,
        )
    }
)

FORBIDDEN = {"Cc", "Cf", "Cs", "Co", "Zl", "Zp"}
# An independent, deliberately simple oracle for things that must never be accepted.
OBVIOUS_LINK = re.compile(
    r"(?i)://[a-z0-9]|\bwww\.[a-z0-9]|\bjavascript\s*:|</?[a-z!][^<>]*>|!\[[^\]\n]*\]\("
    r"|\[[^\]\n]*\]\((?:[a-z][a-z0-9+.-]*:\S|[/\\#]|\.\.?/|www\.)"  # a link to a URL or path
    r"|<[a-z/!?]"  # the HTML tokenizer leaves text at "<" + a letter, "/", "!" or "?"
    r"|&(?:lt|gt|amp|quot|#\d+|#x[0-9a-f]+);"  # a character reference that decodes
)


def assert_displayable(text: str) -> None:
    for char in text:
        assert char == "\n" or unicodedata.category(char) not in FORBIDDEN, (
            f"accepted U+{ord(char):04X}"
        )
    assert text == text.strip()
    assert text
    assert not contains_url(text)
    assert not contains_markup(text)
    assert not OBVIOUS_LINK.search(text)


@settings(max_examples=300, deadline=None)
@given(payload=candidates)
def test_validation_never_raises_on_arbitrary_json(payload: object) -> None:
    verdict = validate_candidate(payload, MANIFEST, Limits())
    assert isinstance(verdict, Accepted | Rejection)
    if isinstance(verdict, Rejection):
        assert isinstance(verdict.reason, RejectionReason)
    else:
        for segment in verdict.segments:
            assert_displayable(segment.text)


@settings(max_examples=300, deadline=None)
@given(payload=plausible)
def test_accepted_text_is_always_safe_to_display(payload: dict[str, Any]) -> None:
    verdict = validate_candidate(payload, MANIFEST, Limits())
    if isinstance(verdict, Rejection):
        return
    assert len(verdict.segments) == len(payload["segments"])
    for segment, raw in zip(verdict.segments, payload["segments"], strict=True):
        assert_displayable(segment.text)
        assert segment.text == raw["text"].strip()
        assert set(segment.refs) <= MANIFEST.refs()
        assert len(set(segment.refs)) == len(segment.refs)


@settings(max_examples=200, deadline=None)
@given(
    safe=st.text(alphabet=st.characters(codec="ascii", categories=["L", "Nd"]), min_size=1),
    bad=st.sampled_from(HOSTILE),
    where=st.integers(min_value=0),
)
def test_one_forbidden_character_anywhere_rejects_the_answer(
    safe: str, bad: str, where: int
) -> None:
    where %= len(safe) + 1
    text = f"{safe[:where]}{bad}{safe[where:]}"
    verdict = validate_candidate(one(text), MANIFEST, Limits())
    assert isinstance(verdict, Rejection)
    assert verdict.reason in {R.CONTROL_CHARACTER, R.FORMAT_CHARACTER, R.INVALID_UTF8}


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ({"segments": [], "<script>alert(1)</script>": 1}, RejectionReason.UNKNOWN_FIELD),
        (
            {"segments": [{"text": "t", "evidence_ids": ["E1"], "javascript:alert(1)": 2}]},
            RejectionReason.UNKNOWN_FIELD,
        ),
        (
            {"segments": [{"text": "t", "evidence_ids": ["https://evil.example/E1"]}]},
            RejectionReason.UNKNOWN_REF,
        ),
    ],
)
def test_a_rejection_never_echoes_model_text_of_arbitrary_shape(
    payload: dict[str, Any], reason: RejectionReason
) -> None:
    verdict = validate_candidate(payload, MANIFEST, Limits())
    assert isinstance(verdict, Rejection)
    assert verdict.reason is reason
    for hostile in ("script", "alert", "javascript", "evil", "https"):
        assert hostile not in verdict.detail
    assert "characters, not shown" in verdict.detail


def test_a_plain_unknown_ref_is_named_for_debugging() -> None:
    verdict = validate_candidate(
        {"segments": [{"text": "t", "evidence_ids": ["E9"]}]}, MANIFEST, Limits()
    )
    assert isinstance(verdict, Rejection)
    assert "'E9'" in verdict.detail
