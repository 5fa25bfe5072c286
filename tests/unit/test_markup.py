"""One definition of markup: what the standard library's HTML tokenizer reads as markup.

Plus the character references that decode and the Markdown links and images a
renderer would follow or load; ordinary technical text (``sort < input > output``,
``int *p = &count;``, ``a[i][j]``, ``d[key](args)``) is none of these.

``contains_html_markup`` is checked against an independent reference built on
``html.parser`` (a parser that only records what it reports, run to the end), with
the conservative reading for constructs it leaves unparsed; the validator and the
extractive generator's display check are checked against the same definition, on
tag-shaped text (random names in mixed case, attributes, self-closing and end tags,
comments, declarations, processing instructions, marked sections, unterminated
forms) embedded in random text.
"""

from __future__ import annotations

import asyncio
import html.entities
import re
import string
import time
from html.parser import HTMLParser

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from citadel.adapters.generators.extractive import ExtractiveGenerator
from citadel.domain.answer import GenerationRequest
from citadel.domain.limits import Limits
from citadel.domain.manifest import ContextEvidence, Manifest, PromptEvidence, freeze_manifest
from citadel.domain.markup import (
    contains_character_reference,
    contains_html_markup,
    contains_markdown_link,
    contains_markup,
)
from citadel.domain.renderable import Renderable, renderable_form
from citadel.domain.statement import states_something
from citadel.domain.text import contains_url, split_sentences
from citadel.domain.validation import (
    RENDERABLE_REASONS,
    Accepted,
    Rejection,
    RejectionReason,
    check_display_text,
    validate_candidate,
)
from tests.builders import make_evidence

# -- the reference ------------------------------------------------------------------


class _Recorder(HTMLParser):
    """Records every report of the stdlib tokenizer; never stops early."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.reports: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.reports.append(("starttag", tag))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.reports.append(("startendtag", tag))

    def handle_endtag(self, tag: str) -> None:
        self.reports.append(("endtag", tag))

    def handle_comment(self, data: str) -> None:
        self.reports.append(("comment", data))

    def handle_decl(self, decl: str) -> None:
        self.reports.append(("decl", decl))

    def handle_pi(self, data: str) -> None:
        self.reports.append(("pi", data))

    def unknown_decl(self, data: str) -> None:
        self.reports.append(("unknown_decl", data))


def stdlib_reports(text: str) -> list[tuple[str, str]] | None:
    """What html.parser reports for the whole text; None when it raises."""
    recorder = _Recorder()
    try:
        recorder.feed(text)
        recorder.close()
    except AssertionError:  # _markupbase on e.g. "<![x[" or "<!x [": not plain text
        return None
    return recorder.reports


# The HTML tokenizer's tag open state: "<" then an ASCII letter, "/", "!" or "?" leaves
# text; "<" then anything else (or nothing) is text. The conservative reading of what the
# stdlib tokenizer leaves unparsed ("<a" at the end, "</>", a tag it gives back as text).
TAG_OPEN = re.compile(r"<[A-Za-z/!?]")


def reference_markup(text: str) -> bool:
    reports = stdlib_reports(text)
    return reports is None or bool(reports) or TAG_OPEN.search(text) is not None


# The rule citadel applied before (its tag and entity parts), to show nothing it
# refused is accepted now but what was dropped on purpose: a "tag" with space after its
# "<" (no browser reads one), "&name;" when the name is not an HTML5 reference, an
# inline link whose target is no URL or path, a reference link without a definition.
OLD_TAG = re.compile(
    r"<\s*/?\s*[a-z][^\s/<>]*(?:\s*/?>|\s+[a-z-]+\s*=)"
    r"|<[!?][^<>]*>|&(?:#\d+|#x[0-9a-f]+|[a-z]{2,8});",
    re.I,
)
OLD_MARKDOWN = re.compile(r"!?\[[^\]\n]*\]\s*[(\[]|^\s*\[[^\]\n]+\]:\s*\S|<[a-z]+:[^>\s]*>", re.M)
# ... the parts of it kept, written independently of the module.
KEPT_TAG = re.compile(r"</?[a-z]|<[!?][^<>]*>|&(?:#\d+|#x[0-9a-f]+);", re.I)
OLD_NAMED_REFERENCE = re.compile(r"&([a-z]{2,8};)", re.I)
KEPT_MARKDOWN = re.compile(
    r"!\[[^\]\n]*\]\s*\(|^\s*\[[^\]\n]+\]:\s*\S|<[a-z]+:[^>\s]*>"
    r"|\[[^\]\n]*\]\s*\(\s*(?:[a-z][a-z0-9+.-]*:\S|[/\\#]|\.\.?/|www\.|[^\s()]*\.[^\s()]*/|[^\s()]*/[^\s()]*\.)",
    re.M | re.I,
)


def kept_old_refusal(text: str) -> bool:
    named = (m.group(1) for m in OLD_NAMED_REFERENCE.finditer(text))
    return (
        KEPT_TAG.search(text) is not None
        or KEPT_MARKDOWN.search(text) is not None
        or any(name in html.entities.html5 for name in named)
    )


# -- strategies ----------------------------------------------------------------------

tag_names = st.from_regex(r"[A-Za-z][A-Za-z0-9]{0,7}", fullmatch=True) | st.sampled_from(
    ["script", "ScRiPt", "SCRIPT", "img", "svg", "iframe", "a", "b", "h1", "x-y", "foo:bar"]
)
attribute_names = st.from_regex(r"[A-Za-z_:][A-Za-z0-9_:.-]{0,6}", fullmatch=True)
attribute_values = st.text(
    alphabet=string.ascii_letters + string.digits + "()=;-_ ", max_size=8
) | st.sampled_from(["alert(1)", "x", "1", ""])


@st.composite
def attributes(draw: st.DrawFn) -> str:
    name = draw(attribute_names)
    value = draw(attribute_values)
    form = draw(st.sampled_from(["bare", "unquoted", "single", "double"]))
    if form == "bare":
        return name
    if form == "unquoted":
        return f"{name}={value.replace(' ', '') or 'x'}"
    quote = "'" if form == "single" else '"'
    return f"{name}={quote}{value}{quote}"


separators = st.sampled_from([" ", "  ", "\n", "/"])


@st.composite
def start_tags(draw: st.DrawFn) -> str:
    name = draw(tag_names)
    attrs = draw(st.lists(attributes(), max_size=3))
    body = "".join(draw(separators) + a for a in attrs)
    close = draw(st.sampled_from([">", "/>", " />", " >"]))
    return f"<{name}{body}{close}"


@st.composite
def end_tags(draw: st.DrawFn) -> str:
    name = draw(tag_names)
    tail = draw(st.sampled_from(["", " ", " x=1", "\n"]))
    return f"</{name}{tail}>"


comments = st.text(alphabet=string.ascii_letters + " -", max_size=10).map(
    lambda body: f"<!--{body}-->"
)
declarations = st.sampled_from(
    [
        "<!DOCTYPE html>",
        "<!doctype html>",
        '<!DOCTYPE html PUBLIC "-//W3C//DTD HTML 4.01//EN">',
        "<!ENTITY x 'y'>",
        "<!x>",
        "<!>",
        "<![CDATA[x < y]]>",
        "<![if !IE]>",
        "<![x[",
    ]
)
processing_instructions = st.sampled_from(
    ['<?xml version="1.0"?>', "<?php echo 1 ?>", "<?x>", "<?>"]
)
browser_forms = st.sampled_from(
    [
        "<Thread(worker 1, started 123)>",
        "<Thread(worker 1, started 139872)>",
        "<svg/onload=alert(1)>",
        "<img src=x onerror=alert(1)>",
        "<ScRiPt>alert(1)</sCrIpT>",
        "<a href=x>",
        "</>",
        "</ b>",
        "</1>",
        "<http!>",
        "<foo:bar>",
    ]
)
complete_markup = (
    start_tags() | end_tags() | comments | declarations | processing_instructions | browser_forms
)
# Unterminated forms only make sense at the end of the text.
unterminated_markup = st.sampled_from(
    ["<a", "<a href=x", "<b ", "</", "</b", "<!", "<!--", "<!-- x", "<?", "<?x", "<Thread(w"]
) | complete_markup.map(lambda m: m[:-1] if m.endswith(">") and len(m) > 2 else m)

# Text pieces around the markup: words, and "<" / ">" in the places technical prose puts
# them, none of which opens a tag.
plain_pieces = st.sampled_from(
    [
        *("Retry", "attempts", "are", "bounded", "x", "y", "é", "123", ".", ",", ";", "(", ")"),
        *(" ", " ", "\n", " < ", " > ", "<-", "<=", "<3", "< ", ">", "->", "=", "+", "<<", "<"),
        *("a < b and c > d", "x <- c(1, 2)", "i<10", "if (n < 0)", "<1>", "< 2 >", "<é>"),
        *("0 <= i", "<-1", "<=>", "<<-", "<\n", "<#", "<$", "<.", "<_x>", "<·>", "<>"),
    ]
)
# Pieces can meet ("<" + "x"); what then opens a tag is not plain text. ("< x >", the
# "tag" with space after its "<" the old rule refused, is.)
plain_texts = (
    st.lists(plain_pieces, min_size=1, max_size=16)
    .map("".join)
    .filter(lambda t: TAG_OPEN.search(t) is None)
    # A line of "=" or "-" under a line of text underlines a heading (setext), also
    # after a quote or list marker (">=": the rule refuses it, erring to refusal).
    .filter(
        lambda t: (
            re.search(
                r"\S[^\n]*\n(?: {0,3}(?:>|[-+*]|\d{1,9}[.)])[ \t]*)* {0,3}(?:=+|-+)[ \t]*$",
                t,
                re.M,
            )
            is None
        )
    )
)


@st.composite
def texts_with_markup(draw: st.DrawFn) -> str:
    before = draw(plain_texts)
    markup = draw(complete_markup)
    after = draw(plain_texts | st.just(""))
    if draw(st.booleans()):
        return before + markup + after
    return before + draw(unterminated_markup)


mixed_texts = st.lists(
    plain_pieces
    | complete_markup
    | st.sampled_from(["<", ">", "/", "!", "?", "-", "--", "&", "&lt", "[", "]", "'", '"']),
    min_size=1,
    max_size=12,
).map("".join)

# -- the definition ------------------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(text=texts_with_markup())
def test_tag_shaped_text_is_markup(text: str) -> None:
    assert reference_markup(text)
    assert contains_html_markup(text), text
    assert contains_markup(text)


@settings(max_examples=400, deadline=None)
@given(text=plain_texts)
@example("Worker 1 says x <- c(1, 2) and a < b and c > d.")
def test_text_without_a_tag_opener_is_not_markup(text: str) -> None:
    assert stdlib_reports(text) == []
    assert not reference_markup(text)
    assert not contains_html_markup(text), text


@settings(max_examples=600, deadline=None)
@given(text=mixed_texts | st.text(max_size=40) | texts_with_markup())
def test_the_definition_is_the_stdlib_tokenizer_read_conservatively(text: str) -> None:
    assert contains_html_markup(text) == reference_markup(text), text


@settings(max_examples=400, deadline=None)
@given(text=mixed_texts | st.text(max_size=40))
def test_whatever_the_stdlib_tokenizer_reports_starts_at_a_tag_opener(text: str) -> None:
    # Why the conservative reading is exactly the HTML tag open state: the stdlib only
    # ever reports markup at "<" + letter, "/", "!" or "?".
    reports = stdlib_reports(text)
    if reports is None or reports:
        assert TAG_OPEN.search(text)


@settings(max_examples=400, deadline=None)
@given(text=mixed_texts | st.text(max_size=40))
def test_nothing_the_old_rule_refused_is_accepted_now_but_what_was_dropped(text: str) -> None:
    if kept_old_refusal(text):
        assert contains_markup(text), text
    if contains_markup(text) and not contains_html_markup(text):
        # Nothing new is refused beyond the tokenizer's reading, bar links and images
        # the old rule missed (a bracket inside the link text, a "\" for a "/").
        assert (
            OLD_TAG.search(text)
            or OLD_MARKDOWN.search(text)
            or "](" in text.replace(" ", "")
            or "]:" in text
        ), text


@pytest.mark.parametrize(
    "text",
    [
        "Worker <Thread(worker 1, started 123145)> running",
        "Worker <Thread(worker 1, started \u2026)> running",
        "<svg/onload=alert(1)>",
        "<img src=x onerror=alert(1)>",
        "<ScRiPt>alert(1)</ScRiPt>",
        "Plain then <b",
        "Plain then <a href=x",
        "Plain then </",
        "Plain then <!",
        "Plain then <?",
        "Plain then <!-- unterminated",
        "a </> b",
        "</ b>",
        "x<y",
        "for (i = 0; i<n; i++)",
        "<![x[ y",
        "<![CDATA[x]]>",
        "<!DOCTYPE html>",
        "<?xml version='1.0'?>",
        '<a"b>',
        "<a b='c>",
        "Line one.\nLine two <b>bold</b>.",
        "List<String> names",
        "#include <stdio.h>",
    ],
)
def test_browser_element_forms_are_markup(text: str) -> None:
    assert contains_html_markup(text)
    assert contains_markup(text)


@pytest.mark.parametrize(
    "text",
    [
        "a < b and c > d",
        "x <- c(1, 2)",
        "x<-c(1,2)",
        "i<10",
        "0 <= i < n",
        "a <",
        "<",
        "<<>>",
        "<é>",
        "1 <2 and 3> 2",
        "The arrow <-> points both ways",
    ],
)
def test_comparisons_and_assignments_are_not_markup(text: str) -> None:
    assert not contains_html_markup(text)
    assert not contains_markup(text)


def test_a_tag_spelled_with_space_after_the_bracket_is_text() -> None:
    # No HTML tokenizer (no browser, no Markdown renderer) reads these as tags, and the
    # UI shows text escaped; citadel refused them before and no longer does.
    for text in ("< script>", "An < img src=x onerror=y> tag.", "< /b>", "< a href=x >"):
        assert not contains_html_markup(text)
        assert not contains_markup(text)


def test_a_start_tag_the_tokenizer_gives_back_as_text_is_markup() -> None:
    # html.parser hands "<a\x00>" to handle_data: it still opens a tag for a browser.
    assert stdlib_reports("x <a\x00> y") == []
    assert contains_html_markup("x <a\x00> y")
    assert contains_html_markup("x\ny <a\x00")


def test_a_bracket_decoded_from_a_character_reference_is_not_a_tag_opener() -> None:
    # "&ltb" shows as "<b" but starts no tag: the tokenizer reads only raw text.
    assert not contains_html_markup("a <&ltb")
    assert not contains_html_markup("line\nnext <&#60b")


def test_the_check_is_linear_in_the_length_of_the_text() -> None:
    def cost(text: str) -> float:
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            assert not contains_html_markup(text)
            best = min(best, time.perf_counter() - start)
        return best

    unit = "x <- c(1, 2); if (a < 3) b <= 4\n"
    small, large = unit * 32, unit * 256  # ~1 KiB and ~8 KiB, a "<" every 10 characters
    assert cost(large) < 16 * cost(small) + 0.01
    assert cost(large) < 0.1


# -- character references and Markdown links ------------------------------------------

# Code and prose from C, Python, R and shell books that no renderer reads as markup.
TECHNICAL_TEXT = [
    "sort < input > output",
    "cmd < file.txt > out.txt",
    "int *p = &count;",
    "a[i][j] = 0",
    "d[key](args)",
    "f(x)[0]",
    "m[i](x, y) and handlers[name](*args, **kwargs)",
    "x = d[k](a.b)",
    "def first[T](items: list[T]) -> T:",
    "class Box[T](Base):",
    "p = &a[0]; q = &value; r = &x_1;",
    "See [the manual][1] first.",
    "Subscripts [,1] [,2] and [1] (a note).",
    "a[i] (b) and c[j]()",
    "grep pattern < in.txt > out.txt 2> err.txt",
    "while (*p && *p != '\\n') p++;",
]


@pytest.mark.parametrize("text", TECHNICAL_TEXT)
def test_technical_text_is_not_markup(text: str) -> None:
    assert not contains_html_markup(text)
    assert not contains_character_reference(text)
    assert not contains_markdown_link(text)
    assert not contains_markup(text)


@pytest.mark.parametrize(
    "text",
    [
        "&lt;b&gt;",
        "&amp;",
        "&AMP;",
        "&quot;",
        "&nbsp;",
        "&frac12;",
        "&NotEqualTilde;",
        "&CounterClockwiseContourIntegral;",
        "&#60;",
        "&#0060;",
        "&#x3c;",
        "&#X3C;",
        "a &#1114111; b",
        "int *p = &count; q = &lt;",
    ],
)
def test_character_references_that_decode_are_refused(text: str) -> None:
    assert contains_character_reference(text)
    assert contains_markup(text)


@pytest.mark.parametrize("text", ["&count;", "&p;", "&x1;", "&Amp;", "&ltx;", "&#;", "&#x;", "&;"])
def test_an_ampersand_name_that_is_no_html5_reference_is_text(text: str) -> None:
    assert (text[1:] in html.entities.html5) is False
    assert not contains_character_reference(text)
    assert not contains_markup(text)


def test_every_html5_named_reference_with_its_semicolon_is_refused() -> None:
    for name in html.entities.html5:
        if name.endswith(";"):
            assert contains_character_reference(f"x &{name} y"), name


@settings(max_examples=300, deadline=None)
@given(name=st.from_regex(r"[A-Za-z][A-Za-z0-9]{0,12}", fullmatch=True))
def test_a_named_reference_is_refused_exactly_when_html5_has_it(name: str) -> None:
    assert contains_character_reference(f"p = &{name};") == (f"{name};" in html.entities.html5)


@pytest.mark.parametrize(
    "text",
    [
        "Read [the manual](https://example.com/manual) first.",
        "Read [the manual](HTTP:evil) first.",
        "Read [the manual](/manual) first.",
        "Read [the manual](//evil.example) first.",
        "Read [the manual](./manual) first.",
        "Read [the manual](../manual) first.",
        "Read [the manual](#install) first.",
        "Read [the manual](www.example.com) first.",
        "Read [the manual](docs/manual.html) first.",
        "Read [the manual](a.b/c) first.",
        "Read [the manual]( /manual) first.",
        "Read [the manual] (/manual) first.",
        "Read [the manual](\n/manual) first.",
        "Read [the manual](/manual 'title') first.",
        "Read [the manual](</manual>) first.",
        "Read [the manual](\\\\evil.example) first.",
        "Read [the manual](\\/\\/evil.example) first.",
        "Read [the manual](&#47;manual) first.",
        "Read [a [nested] text](/manual) first.",
        "Read [two\nlines](/manual) first.",
        "Look ![chart](c.png) here.",
        "Look ![chart](chart) here.",
        "Look ![chart]( x ) here.",
        "See [the manual][1] first.\n[1]: /manual",
        "See [the manual] first.\n\n[the manual]: manual",
        "Text.\n[1]: evil",
        "Text.\n   [1]:\n   evil",
        "Text.\n> [1]: /x",
        "Text.\n- [1]: /x",
        "Text.\n1. [1]: /x",
        "Text.\n[a\\]b]: /x",
        "Go <https://example.com> now.",
        "Go <foo:bar> now.",
    ],
)
def test_links_and_images_a_markdown_renderer_would_follow_are_refused(text: str) -> None:
    assert contains_markup(text)


def test_a_destination_too_long_to_read_counts_as_a_url() -> None:
    assert not contains_markdown_link("d[k](" + "x" * 1000 + ")")
    assert contains_markdown_link("d[k](" + "x" * 1100 + ")")


def test_the_markdown_check_is_linear_in_the_length_of_the_text() -> None:
    def cost(text: str) -> float:
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            contains_markdown_link(text)
            best = min(best, time.perf_counter() - start)
        return best

    for unit in ("d[k](x(", "](", "[\\x", "[a]:", "[a", "](<", "[a\n", "[\n", "-"):
        small, large = unit * 200, unit * 1600
        assert cost(large) < 16 * cost(small) + 0.01, unit
        assert cost(large) < 0.2, unit


# -- the validator -------------------------------------------------------------------


def manifest_of(n: int) -> Manifest:
    return freeze_manifest(
        tuple(
            ContextEvidence(make_evidence(f"evidence-{i}", f"Passage {i}.", section=f"s{i}"))
            for i in range(1, n + 1)
        )
    )


MANIFEST = manifest_of(3)


def verdict_for(text: str) -> Accepted | Rejection:
    return validate_candidate(
        {"segments": [{"text": text, "evidence_ids": ["E1"]}]}, MANIFEST, Limits()
    )


@settings(max_examples=400, deadline=None)
@given(text=texts_with_markup())
def test_the_validator_refuses_tag_shaped_text(text: str) -> None:
    verdict = verdict_for("Retry " + text)
    assert isinstance(verdict, Rejection), text
    if not contains_url(text):
        assert verdict.reason is RejectionReason.MARKUP_IN_TEXT


@settings(max_examples=400, deadline=None)
@given(text=plain_texts)
def test_the_validator_accepts_plain_text_without_markup(text: str) -> None:
    assume(re.search(r"\w", text))  # text without a word is refused as saying nothing
    assume(states_something(text))  # and so is text without a content word ("are", "12")
    verdict = verdict_for(text)
    assert isinstance(verdict, Accepted), (text, verdict)
    assert verdict.segments[0].text == text.strip()


@settings(max_examples=600, deadline=None)
@given(text=mixed_texts | texts_with_markup())
def test_the_validator_refuses_markup_exactly_as_defined(text: str) -> None:
    assume(text.strip() and renderable_form(text) is not Renderable.LINK)
    verdict = verdict_for(text)
    refused_for_markup = (
        isinstance(verdict, Rejection) and verdict.reason is RejectionReason.MARKUP_IN_TEXT
    )
    assert refused_for_markup == (renderable_form(text) is Renderable.MARKUP), (text, verdict)
    if contains_markup(text):
        assert refused_for_markup
    if reference_markup(text):
        assert refused_for_markup


# -- the extractive generator's display check ----------------------------------------

QUESTION = "How are worker threads started and running?"
PLAIN_SENTENCE = "Each worker thread is started once and keeps running until stopped."


def evidence(*passages: str) -> tuple[PromptEvidence, ...]:
    return tuple(
        PromptEvidence(
            ref=f"E{i}",
            passage=passage,
            title="Threads",
            author="",
            chapter="",
            section="",
            pages="",
        )
        for i, passage in enumerate(passages, start=1)
    )


def generate(*passages: str) -> list[dict[str, object]]:
    generator = ExtractiveGenerator()
    request = GenerationRequest(
        question=QUESTION, evidence=evidence(*passages), max_output_tokens=512
    )
    candidate = asyncio.run(generator.generate(request))
    assert isinstance(candidate.payload, dict)
    segments = candidate.payload["segments"]
    assert isinstance(segments, list)
    return segments


def manifest_for(*passages: str) -> Manifest:
    """The manifest a generator quoting ``passages`` (E1, E2, ...) answers from."""
    return freeze_manifest(
        [
            ContextEvidence(make_evidence(f"evidence-{i}", passage, section=f"s{i}"))
            for i, passage in enumerate(passages, start=1)
        ]
    )


def test_the_extractive_generator_quotes_the_thread_line_verbatim() -> None:
    # The passage's own words are the library's text: the generator may quote them and
    # the validator accepts them as a quotation (the interfaces neutralise them).
    line = "Worker <Thread(worker 1, started 123145)> running and started the worker thread."
    assert contains_markup(line)
    passage = line + "\n\n" + PLAIN_SENTENCE
    segments = generate(passage)
    assert line in [s["text"] for s in segments]
    assert isinstance(
        validate_candidate({"segments": segments}, manifest_for(passage), Limits()), Accepted
    )
    # The same words not quoted from a cited passage are the model's, and refused.
    refused = validate_candidate({"segments": segments}, MANIFEST, Limits())
    assert isinstance(refused, Rejection) and refused.reason is RejectionReason.MARKUP_IN_TEXT


def test_the_extractive_generator_quotes_r_assignments() -> None:
    sentence = "The worker thread is started by running x <- c(1, 2) in the R console."
    assert [s["text"] for s in generate(sentence)] == [sentence]


@settings(max_examples=200, deadline=None)
@given(middle=texts_with_markup() | plain_texts)
def test_the_extractive_display_check_leaves_markup_to_the_quotation(middle: str) -> None:
    # One sentence of six words or more that matches the question, with the text drawn
    # in its middle: quoted whether or not it holds markup (it is the passage's own),
    # and accepted as a quotation of its passage.
    sentence = " ".join(f"Each worker thread is started {middle} and keeps running.".split())
    segments = generate(sentence, PLAIN_SENTENCE)
    quoted = [s["text"] for s in segments]
    problem = check_display_text(sentence, Limits())
    if len(split_sentences(sentence)) == 1 and (
        problem is None or problem.reason in RENDERABLE_REASONS
    ):
        assert sentence in quoted
    verdict = validate_candidate(
        {"segments": segments}, manifest_for(sentence, PLAIN_SENTENCE), Limits()
    )
    assert isinstance(verdict, Accepted), (segments, verdict)


@settings(max_examples=150, deadline=None)
@given(passages=st.lists(mixed_texts | texts_with_markup() | plain_texts, min_size=1, max_size=3))
def test_the_extractive_generator_never_writes_a_segment_the_validator_refuses(
    passages: list[str],
) -> None:
    body = [f"Worker thread started {p} running while started." for p in passages]
    segments = generate(*body)
    if segments:
        verdict = validate_candidate({"segments": segments}, manifest_for(*body), Limits())
        assert isinstance(verdict, Accepted), (segments, verdict)
