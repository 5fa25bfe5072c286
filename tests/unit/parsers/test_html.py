"""HtmlParser on small synthetic pages and sites, and on the real HTML books."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from citadel.adapters.parsers.html import HtmlParser
from citadel.app.errors import ParseError
from citadel.domain.document import ParsedDocument
from tests.conftest import shared_path


def html(body: str, title: str = "A Page", head: str = "") -> str:
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>{head}</head>"
        f"<body>{body}</body></html>"
    )


def texts(doc: ParsedDocument) -> str:
    return "\n".join(b.text for b in doc.blocks)


def test_single_file_sections_metadata_and_anchors(tmp_path: Path) -> None:
    page = tmp_path / "book.html"
    page.write_text(
        html(
            '<h1 id="top">The Book</h1><p>Intro text.</p>'
            '<section id="ch1"><h2>Chapter 1<a class="headerlink" href="#ch1">¶</a></h2>'
            "<p>First <em>chapter</em>\n   text.<br>Next line.</p>"
            '<h3><a name="s11"></a>1.1 Detail</h3><pre>code  kept\n  as is</pre></section>'
            "<h2>Chapter 2</h2><table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr>"
            "</table>",
            title="The Book Title",
            head="<meta name='author' content='Jane Doe'><meta name='keywords' content='a, b;c'>"
            "<meta name='dc.date' content='2021-03-04'>",
        ),
        encoding="utf-8",
    )
    calls: list[tuple[int, int]] = []
    doc = HtmlParser().parse(page, progress=lambda d, t: calls.append((d, t)))
    assert (doc.title, doc.authors, doc.tags, doc.year) == (
        "The Book Title",
        ("Jane Doe",),
        ("a", "b", "c"),
        2021,
    )
    assert calls == [(1, 1)]
    assert [(b.section_path, b.location, b.text) for b in doc.blocks] == [
        (("The Book",), "book.html#top", "Intro text."),
        (("The Book", "Chapter 1"), "book.html#ch1", "First chapter text.\nNext line."),
        (("The Book", "Chapter 1", "1.1 Detail"), "book.html#s11", "code  kept\n  as is"),
        (("The Book", "Chapter 2"), "book.html", "k | v\n\na | 1"),
    ]
    assert all(b.page is None for b in doc.blocks)


def test_scripts_styles_and_chrome_never_reach_a_block(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text(
        html(
            "<header><a href='/'>Site home</a></header>"
            '<nav><a href="x.html">Nav link</a></nav>'
            '<div class="related">Previous topic</div>'
            '<div class="sphinxsidebar">Sidebar words</div>'
            '<div class="navheader">Prev Up Next</div>'
            "<h1>Real</h1><script>alert(1)</script><p>Body text.<script>alert(2)</script></p>"
            '<div role="navigation">Role nav</div><noscript>Enable JS</noscript>'
            '<div class="note"><h3>Note</h3><p>A note.</p></div>'
            '<div class="footer">© footer</div><footer>Page footer</footer>',
            head="<style>body { color: red }</style><script>var x = 1;</script>",
        ),
        encoding="utf-8",
    )
    doc = HtmlParser().parse(page)
    text = texts(doc)
    assert "Body text." in text
    assert "A note." in text
    for absent in (
        "alert",
        "color: red",
        "var x",
        "Site home",
        "Nav link",
        "Previous topic",
        "Sidebar words",
        "Prev Up Next",
        "Role nav",
        "Enable JS",
        "footer",
    ):
        assert absent not in text
    # An admonition's heading is not a section.
    assert {b.section_path for b in doc.blocks} == {("Real",)}


@pytest.mark.parametrize(
    "declaration",
    [
        '<meta charset="iso-8859-1">',
        '<meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1">',
        "",  # undeclared and not UTF-8: read as windows-1252
    ],
)
def test_non_utf8_html_decodes_per_its_declaration(tmp_path: Path, declaration: str) -> None:
    page = tmp_path / "latin.html"
    page.write_bytes(
        f"<html><head>{declaration}<title>Caf\xe9</title></head>"
        "<body><h1>Men\xfc</h1><p>Cr\xe8me br\xfbl\xe9e, \xa9 na\xefve.</p></body></html>".encode(
            "latin-1"
        )
    )
    doc = HtmlParser().parse(page)
    assert doc.title == "Café"
    assert doc.blocks[0].section_path == ("Menü",)
    assert doc.blocks[0].text == "Crème brûlée, © naïve."


def test_a_declared_encoding_wins_over_utf8_guessing(tmp_path: Path) -> None:
    page = tmp_path / "koi8.html"
    body = "<html><head><meta charset='koi8-r'></head><body><p>Привет</p></body></html>"
    page.write_bytes(body.encode("koi8-r"))
    assert HtmlParser().parse(page).blocks[0].text == "Привет"


def test_empty_and_binary_files_are_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.html"
    empty.write_bytes(b"")
    blank = tmp_path / "blank.html"
    blank.write_text(html("<script>only()</script>"))
    binary = tmp_path / "image.html"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64))
    for path, reason in ((empty, "empty"), (blank, "empty"), (binary, "binary")):
        with pytest.raises(ParseError) as caught:
            HtmlParser().parse(path)
        assert caught.value.reason == reason


def test_a_page_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    page = tmp_path / "big.html"
    page.write_text(html("<p>" + "word " * 1000 + "</p>"))
    with pytest.raises(ParseError) as caught:
        HtmlParser(max_page_bytes=1000).parse(page)
    assert caught.value.reason == "too_large"


def site(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (tmp_path / "secret.html").write_text(html("<h1>Secret</h1><p>Outside words.</p>"))
    pages = {
        "index.html": html(
            "<h1>The Manual</h1><p>Welcome text.</p>"
            '<div class="toc"><ul><li><a href="ch1.html">1. First</a><ul>'
            '<li><a href="ch1.html#a">anchor</a></li></ul></li>'
            '<li><a href="sub/ch2.html">2. Second</a></li>'
            '<li><a href="genindex.html">Index</a></li>'
            '<li><a href="../secret.html">Escape</a></li>'
            '<li><a href="/etc/passwd.html">Absolute</a></li>'
            '<li><a href="http://example.com/x.html">Remote</a></li>'
            '<li><a href="outside-link.html">Symlink</a></li></ul></div>',
            title="The Manual",
            head="<meta name='author' content='Doc Team'>",
        ),
        "ch1.html": html(
            "<h2>1. First</h2><p>First chapter.</p>"
            '<div class="toc"><a href="ch1-s1.html">1.1</a></div>'
            '<p>See <a href="extra.html">extra</a>.</p>'
        ),
        "ch1-s1.html": html(
            '<h2>1.1 Part</h2><p>Section text.</p><h2 id="syn">Synopsis</h2><p>Usage.</p>'
            '<h3>Options</h3><p>Flags.</p><a href="sub/../ch1.html">back</a>'
        ),
        "sub/ch2.html": html("<h1>2. Second</h1><p>Second chapter.</p>"),
        "genindex.html": html("<h1>Index</h1><p>alpha 3, beta 7</p>"),
        "extra.html": html("<h1>Extra</h1><p>Linked from the body only.</p>"),
        "orphan.html": html("<h1>Orphan</h1><p>Nobody links here.</p>"),
    }
    for name, content in pages.items():
        (root / name).write_text(content, encoding="utf-8")
    os.symlink(tmp_path / "secret.html", root / "outside-link.html")
    return root


def test_a_directory_is_one_document_in_toc_order(tmp_path: Path) -> None:
    calls: list[tuple[int, int]] = []
    doc = HtmlParser().parse(site(tmp_path), progress=lambda d, t: calls.append((d, t)))
    assert doc.title == "The Manual"
    assert doc.authors == ("Doc Team",)
    got = [(b.section_path, b.location, b.text) for b in doc.blocks]
    assert got == [
        (("The Manual",), "index.html", "Welcome text."),
        (("1. First",), "ch1.html", "First chapter.\n\nSee extra."),
        (("1. First", "1.1 Part"), "ch1-s1.html", "Section text."),
        (("1. First", "1.1 Part", "Synopsis"), "ch1-s1.html#syn", "Usage."),
        (("1. First", "1.1 Part", "Synopsis", "Options"), "ch1-s1.html", "Flags.\n\nback"),
        (("2. Second",), "sub/ch2.html", "Second chapter."),
        (("Extra",), "extra.html", "Linked from the body only."),
    ]
    text = texts(doc)
    assert "Outside words" not in text  # ../, absolute, remote and symlinked links not followed
    assert "Nobody links here" not in text  # unreachable pages are left out
    assert "alpha 3" not in text  # the index page is not indexed
    assert doc.page_count == 6
    assert doc.skipped_pages == (5,)  # genindex.html, the fifth page read
    assert calls[-1] == (6, 6)
    assert [d for d, _ in calls[:-1]] == [1, 2, 3, 4, 5, 6]


def test_accepts_html_files_and_directories_with_an_index(tmp_path: Path) -> None:
    parser = HtmlParser()
    root = site(tmp_path)
    (tmp_path / "page.htm").write_text(html("<p>x</p>"))
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "empty-dir").mkdir()
    assert parser.accepts(root)
    assert parser.accepts(root / "ch1.html")
    assert parser.accepts(tmp_path / "page.htm")
    assert not parser.accepts(tmp_path / "notes.txt")
    assert not parser.accepts(tmp_path / "empty-dir")


def test_too_many_pages_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ParseError) as caught:
        HtmlParser(max_pages=3).parse(site(tmp_path))
    assert caught.value.reason == "too_many_pages"


# --- the real books ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def git_manual() -> ParsedDocument:
    return HtmlParser().parse(shared_path("books", "html", "git-user-manual", "user-manual.html"))


@pytest.fixture(scope="module")
def python_tutorial() -> ParsedDocument:
    return HtmlParser().parse(shared_path("books", "html", "python-3.11-tutorial"))


@pytest.fixture(scope="module")
def postgresql_manual() -> ParsedDocument:
    return HtmlParser().parse(shared_path("books", "html", "postgresql-15-manual"))


@pytest.mark.shared
def test_git_user_manual_has_chapters(git_manual: ParsedDocument) -> None:
    doc = git_manual
    assert doc.title == "Git User Manual"
    paths = {b.section_path for b in doc.blocks}
    assert len(paths) > 80
    assert ("Chapter 1. Repositories and Branches", "How to get a Git repository") in paths
    assert ("Chapter 7. Git concepts", "The Object Database", "Commit Object") in paths
    assert not any("Note" in p for p in paths)  # admonition titles are not sections
    first = next(b for b in doc.blocks if b.section_path[0].endswith("Repositories and Branches"))
    assert first.location is not None and first.location.startswith("user-manual.html#")
    assert "Table of Contents" not in texts(doc)


@pytest.mark.shared
def test_python_tutorial_follows_its_toc(python_tutorial: ParsedDocument) -> None:
    doc = python_tutorial
    assert doc.page_count == 17
    order = list(dict.fromkeys((b.location or "").split("#")[0] for b in doc.blocks))
    assert order[:4] == ["index.html", "appetite.html", "interpreter.html", "introduction.html"]
    paths = {b.section_path for b in doc.blocks}
    assert (
        "3. An Informal Introduction to Python",
        "3.1. Using Python as a Calculator",
        "3.1.1. Numbers",
    ) in paths
    text = texts(doc)
    for chrome in ("Previous topic", "This Page", "Report a Bug", "Quick search", "¶"):
        assert chrome not in text


@pytest.mark.shared
def test_postgresql_manual_parses_whole(postgresql_manual: ParsedDocument) -> None:
    doc = postgresql_manual
    assert doc.title.startswith("PostgreSQL 15")
    assert doc.page_count == 1169  # every page is reachable from the table of contents
    paths = {b.section_path for b in doc.blocks}
    assert len(paths) > 1000
    create_table = [
        b for b in doc.blocks if b.section_path[-2:] == ("SQL Commands", "CREATE TABLE")
    ]
    assert create_table and "define a new table" in create_table[0].text
    assert create_table[0].section_path[0] == "Part VI. Reference"
    assert any(
        p[:3] == ("Part II. The SQL Language", "Chapter 5. Data Definition", "5.4. Constraints")
        for p in paths
    )
    locations = {(b.location or "").split("#")[0] for b in doc.blocks}
    assert "bookindex.html" not in locations and "legalnotice.html" not in locations
    text = texts(doc)
    assert "Copyright ©" not in text
    assert "Submit correction" not in text


def test_an_empty_page_in_a_set_is_skipped_not_fatal(tmp_path: Path) -> None:
    root = site(tmp_path)
    (root / "sub" / "ch2.html").write_bytes(b"")
    doc = HtmlParser().parse(root)
    assert "Second chapter." not in texts(doc)
    assert "First chapter." in texts(doc)


def test_deeply_nested_markup_does_not_crash(tmp_path: Path) -> None:
    page = tmp_path / "deep.html"
    page.write_text(
        "<html><body><p>Top words.</p>" + "<div>" * 5000 + "<p>deep</p>" + "</div>" * 5000
    )
    assert "Top words." in texts(HtmlParser().parse(page))
