"""The support check as a reader sees it in the web UI: a label beside each footnote
mark, and a quotation's viewer link marking the quoted words, not the whole chunk."""

from __future__ import annotations

import html
import re
from pathlib import Path

from citadel.app.ingest import IngestOptions
from citadel.domain.support import Support, SupportLabel, SupportPolicy
from citadel.domain.viewer import ViewerSigner
from citadel.entrypoints.http import create_app
from citadel.entrypoints.http.pages import STATIC, environment
from citadel.entrypoints.http.presenters import SUPPORT_WORDS, answer_view, viewer_spans
from tests.builders import Passage, make_chunks, operator
from tests.http.conftest import SECRET, browser, make_library, sign_in
from tests.http.test_web import ask, viewer_href
from tests.unit.test_support_contradicted import World, quote_and_contradict

PROSE = re.compile(r'<div class="prose">(.*?)</div>', re.S)


def _words(text: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split())


TIMEOUTS = """# Deadlines

## Timeouts

Every call carries a deadline of its own, set by the caller. A request that outlives
its deadline is cancelled at once and its worker slot is freed for the next one.
Deadlines propagate to downstream calls so that no dependency waits forever.
"""


def test_each_mark_carries_its_label_and_the_viewer_marks_the_quotation(
    tmp_path: Path,
) -> None:
    library = make_library(tmp_path)
    book = tmp_path / "deadlines.md"
    book.write_text(TIMEOUTS, encoding="utf-8")
    library.services.ingest.ingest(
        library.services.documents.open(book),
        IngestOptions(tenant="default"),
        actor=operator("default"),
    )
    app = create_app(library.services, session_secret=SECRET)
    with browser(app) as c:
        sign_in(c, library, "ada")
        page = ask(c, "What happens to a request that outlives its deadline?")
        prose = PROSE.search(page)
        assert prose is not None
        assert 'class="support support-verbatim"' in prose.group(1)
        first = re.search(r"<p>(.*?)<sup>", prose.group(1), re.S)
        assert first is not None
        quoted = _words(first.group(1))
        viewer = c.get(viewer_href(c, page))
        assert viewer.status_code == 200
        marked = re.search(r'<mark id="cited">(.*?)</mark>', viewer.text, re.S)
        assert marked is not None
        # The quoted sentence is what is marked: not less, and not the rest of its chunk.
        assert _words(marked.group(1)) == quoted
        assert "outlives" in quoted and len(quoted) < len(" ".join(TIMEOUTS.split()))
    library.services.close()


def test_a_span_narrows_the_mark_and_one_that_does_not_fit_marks_the_chunk() -> None:
    texts = ["First sentence here. Second one there.", "Next chunk."]
    chunks = make_chunks("src-1", 1, [Passage(t) for t in texts])
    cited = chunks[0]
    start = cited.text.index("Second")
    spans = viewer_spans(chunks, cited.chunk_id, span=(start, len(cited.text)))
    assert spans is not None
    assert [s.text for s in spans if s.cited] == ["Second one there."]
    whole = viewer_spans(chunks, cited.chunk_id, span=(0, len(cited.text) + 5))
    assert whole is not None and [s.text for s in whole if s.cited] == [cited.text]


def test_the_span_is_signed_with_the_link() -> None:
    signer = ViewerSigner(b"k" * 32)
    token = signer.mint("ann", "src-1", 1, "c1", 1000.0, span=(4, 9))
    grant = signer.verify(token, user_id="ann", source_id="src-1", version=1, now=1000.0)
    assert grant.span == (4, 9)
    plain = signer.mint("ann", "src-1", 1, "c1", 1000.0)
    assert (
        signer.verify(plain, user_id="ann", source_id="src-1", version=1, now=1000.0).span is None
    )
    assert Support(1.0, SupportLabel.VERBATIM, (4, 9)).span == grant.span


def test_a_contradicted_citation_has_its_own_label_title_and_colour() -> None:
    result = World(SupportPolicy.LABEL, [quote_and_contradict]).ask()
    page = environment().get_template("_answer.html").render(view=answer_view(result), permalink="")
    marks = re.findall(r'<span class="support support-(\w+)" title="([^"]*)">(\w+)</span>', page)
    assert ("contradicted", "the passage says otherwise", "contradicted") in marks
    assert ("verbatim", "quoted from the passage", "verbatim") in marks
    css = (STATIC / "style.css").read_text(encoding="utf-8")
    rules = dict(re.findall(r"\.support-(\w+) \{([^}]*)\}", css))
    assert "contradicted" in rules and rules["contradicted"] != rules["unsupported"]
    assert set(SUPPORT_WORDS) == {label.value for label in SupportLabel}
