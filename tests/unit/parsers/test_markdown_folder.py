"""The Markdown folder parser: reading order, sections, locations and hostile folders."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from citadel.adapters.parsers.markdown_folder import MarkdownFolderParser
from citadel.adapters.parsers.markdown_folder.mkdocs import NavEntry, read_mkdocs
from citadel.app.errors import ParseError
from citadel.domain.document import ParsedDocument


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _chapters(doc: ParsedDocument) -> list[str]:
    return list(dict.fromkeys(b.section_path[0] for b in doc.blocks))


def _parts(doc: ParsedDocument) -> list[str]:
    return list(dict.fromkeys((b.location or "").split("#")[0] for b in doc.blocks))


def test_without_a_nav_the_index_and_its_links_come_first_then_the_folder_order(
    tmp_path: Path,
) -> None:
    root = _write(
        tmp_path / "wiki",
        {
            "README.md": "# The wiki\n\nRead [setup](setup.md), then [the FAQ](faq.md).\n",
            "10-late.md": "# Late\n\nTen.\n",
            "2-early.md": "# Early\n\nTwo.\n",
            "faq.md": "# FAQ\n\nAsk.\n",
            "setup.md": "# Setup\n\nInstall.\n",
            "area/index.md": "Area text before any heading.\n",
            "area/b.md": "# B\n\nBee.\n",
            "notes.txt": "not Markdown\n",
        },
    )
    doc = MarkdownFolderParser().parse(root)
    assert _parts(doc) == [
        "README.md",
        "setup.md",
        "faq.md",
        "2-early.md",  # numbers compared as numbers: 2 before 10
        "10-late.md",
        "area/index.md",  # a folder's index first in it
        "area/b.md",
    ]
    assert _chapters(doc)[:3] == ["The wiki", "Setup", "FAQ"]
    # A file without a heading is named for its folder (an index) or itself.
    assert [b.section_path for b in doc.blocks if b.location == "area/index.md"] == [("area",)]
    assert doc.title == "The wiki"
    assert doc.page_count == 7


def test_headings_are_sections_under_the_file_and_anchors_are_slugs(tmp_path: Path) -> None:
    root = _write(
        tmp_path / "docs",
        {
            "guide.md": "# The guide\n\nIntro.\n\n## Setting up: the basics\n\nOne.\n\n"
            "### Checks {#checks}\n\nTwo.\n\n## Setting up: the basics\n\nAgain.\n",
        },
    )
    doc = MarkdownFolderParser().parse(root)
    assert [(b.section_path, b.location) for b in doc.blocks] == [
        (("The guide",), "guide.md#the-guide"),
        (("The guide", "Setting up: the basics"), "guide.md#setting-up-the-basics"),
        (("The guide", "Setting up: the basics", "Checks"), "guide.md#checks"),
        (("The guide", "Setting up: the basics"), "guide.md#setting-up-the-basics_1"),
    ]
    assert doc.title == "docs"  # no index, no site_name: the folder names the book


def test_links_to_files_of_the_book_become_their_locations_others_stay(tmp_path: Path) -> None:
    (tmp_path / "outside.md").write_text("# Outside\n\nSecret.\n", encoding="utf-8")
    root = _write(
        tmp_path / "docs",
        {
            "a/one.md": "# One\n\nSee [two](../b/two.md#part), [top](<../b/two.md>), "
            "[away](../../outside.md), [gone](missing.md), [web](https://example.org/x.md) "
            "and [here](#one).\n\n```\n[code](../b/two.md)\n```\n",
            "b/two.md": "# Two\n\n## Part\n\nText.\n",
        },
    )
    doc = MarkdownFolderParser().parse(root)
    text = doc.blocks[0].text
    assert "[two](b/two.md#part)" in text and "[top](b/two.md)" in text
    assert "[away](../../outside.md)" in text and "[gone](missing.md)" in text
    assert "[web](https://example.org/x.md)" in text and "[here](#one)" in text
    assert "```\n[code](../b/two.md)\n```" in text  # code is quoted as written
    assert "b/two.md#part" in {b.location for b in doc.blocks}
    assert "Secret" not in "".join(b.text for b in doc.blocks)


def test_the_mkdocs_nav_orders_the_files_and_names_bad_entries(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "secret.md").write_text("# Secret\n\nKeep out.\n", encoding="utf-8")
    root = _write(
        tmp_path / "site",
        {
            "mkdocs.yml": "site_name: 'The site'  # a comment\nsite_author: Ada Writer\n"
            "plugins:\n  - search\n"
            "extra_javascript: !!python/name:os.system\n"
            "nav:\n- Start: start.md\n- 'Part: one':\n  - zeta.md\n  - ../../secret.md\n"
            "  - Gone: gone.md\n  - .hidden/x.md\n  - Home: https://example.org\n- alpha.md\n",
            "docs/alpha.md": "# Alpha\n\nA.\n",
            "docs/start.md": "Start text without a heading.\n",
            "docs/zeta.md": "# Zeta\n\nZ.\n",
            "docs/extra.md": "# Extra\n\nNot in the nav: read last.\n",
            "docs/.hidden/x.md": "# Hidden\n\nH.\n",
            "README.md": "# Project readme\n\nOutside docs_dir: not the book's.\n",
        },
    )
    with caplog.at_level(logging.WARNING, logger="citadel.parsers.markdown_folder"):
        doc = MarkdownFolderParser().parse(root)
    assert _parts(doc) == ["start.md", "zeta.md", "alpha.md", "extra.md"]
    assert _chapters(doc)[0] == "Start"  # the nav's title when the file has no heading
    assert doc.title == "The site" and doc.authors == ("Ada Writer",)
    assert len(doc.warnings) == 3
    assert all("is not a Markdown file inside site; it is left out" in w for w in doc.warnings)
    assert {w.split(" names ")[1].split(",")[0] for w in doc.warnings} == {
        "../../secret.md",
        "gone.md",
        ".hidden/x.md",
    }
    assert [r.getMessage() for r in caplog.records] == [f"site: {w}" for w in doc.warnings]
    text = "".join(b.text for b in doc.blocks)
    assert "Keep out" not in text and "Hidden" not in text and "Project readme" not in text


def test_a_docs_dir_leading_out_of_the_folder_is_not_followed(tmp_path: Path) -> None:
    _write(tmp_path / "elsewhere", {"x.md": "# Elsewhere\n\nOut.\n"})
    root = _write(
        tmp_path / "proj",
        {"mkdocs.yml": "docs_dir: ../elsewhere\n", "own.md": "# Own\n\nIn.\n"},
    )
    doc = MarkdownFolderParser().parse(root)
    assert _parts(doc) == ["own.md"]
    assert doc.warnings and "docs_dir ../elsewhere is not a folder inside proj" in doc.warnings[0]


def test_symlinks_out_of_the_folder_are_not_followed(tmp_path: Path) -> None:
    outside = _write(tmp_path / "outside", {"secret.md": "# Secret\n\nKeep out.\n"})
    root = _write(
        tmp_path / "docs",
        {"index.md": "# Home\n\n[s](link.md) [d](dir/secret.md)\n", "real.md": "# Real\n\nIn.\n"},
    )
    os.symlink(outside / "secret.md", root / "link.md")
    os.symlink(outside, root / "dir")
    os.symlink(root / "real.md", root / "alias.md")  # inside: read like any file
    doc = MarkdownFolderParser().parse(root)
    assert _parts(doc) == ["index.md", "alias.md", "real.md"]
    assert "Keep out" not in "".join(b.text for b in doc.blocks)


def test_a_folder_without_markdown_is_not_accepted_and_refused_when_asked(tmp_path: Path) -> None:
    root = _write(tmp_path / "assets", {"logo.svg": "<svg/>", ".git/notes.md": "# Hidden\n\nH.\n"})
    parser = MarkdownFolderParser()
    assert not parser.accepts(root)
    with pytest.raises(ParseError) as caught:
        parser.parse(root)
    assert caught.value.reason == "no_markdown"
    assert "assets holds no Markdown files" in str(caught.value)


def test_an_html_folder_with_an_index_is_left_to_the_html_parser(tmp_path: Path) -> None:
    root = _write(tmp_path / "site", {"index.html": "<h1>Site</h1>", "notes.md": "# N\n\nN.\n"})
    assert not MarkdownFolderParser().accepts(root)


def test_size_limits_refuse_too_many_files_and_too_large_a_file(tmp_path: Path) -> None:
    many = _write(tmp_path / "many", {f"p{i}.md": f"# P{i}\n\nText.\n" for i in range(4)})
    with pytest.raises(ParseError) as caught:
        MarkdownFolderParser(max_pages=3).parse(many)
    assert caught.value.reason == "too_many_pages"
    big = _write(tmp_path / "big", {"a.md": "# A\n\n" + "word " * 100})
    with pytest.raises(ParseError) as caught:
        MarkdownFolderParser(max_page_bytes=100).parse(big)
    assert caught.value.reason == "too_large" and "a.md" in str(caught.value)


def test_a_file_that_is_not_utf8_is_named_in_the_refusal(tmp_path: Path) -> None:
    root = _write(tmp_path / "docs", {"good.md": "# Good\n\nFine.\n"})
    (root / "bad.md").write_bytes("# Caf\u00e9\n".encode("latin-1"))
    with pytest.raises(ParseError) as caught:
        MarkdownFolderParser().parse(root)
    assert caught.value.reason == "not_utf8" and str(caught.value).startswith("bad.md: ")


def test_the_mkdocs_reader_reads_its_keys_and_no_tag() -> None:
    config = read_mkdocs(
        "site_name: !ENV [SITE, 'x']\n"
        'docs_dir: "pages"\n'
        "theme:\n  name: material\n  palette: !!python/object/apply:os.system ['true']\n"
        "nav:\n"
        "  - index.md  # the home page\n"
        "  - 'Guide: setup': guide/setup.md\n"
        "  - Reference:\n"
        "    - API: 'ref/api.md'\n"
        "    - Web: https://example.org/#x\n"
        "\n"
        "extra:\n  version: 2\n"
    )
    assert config.site_name is None  # a tagged value is not guessed at
    assert config.docs_dir == "pages"
    assert config.nav == (
        NavEntry(None, "index.md"),
        NavEntry("Guide: setup", "guide/setup.md"),
        NavEntry("API", "ref/api.md"),
        NavEntry("Web", "https://example.org/#x"),
    )
    assert not config.problems


def test_a_nav_the_reader_cannot_read_falls_back_to_the_folder_order() -> None:
    flow = read_mkdocs("nav: [a.md, b.md]\n")
    assert flow.nav is None and "not a block list" in flow.problems[0]
    assert read_mkdocs("site_name: x\n").nav is None
