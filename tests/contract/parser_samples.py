"""The parser adapters under the DocumentParser contract, and the inputs each is run on.

A new parser joins the contract (``test_parser_contract.py``) by adding its
:class:`ParserCase` to ``CASES`` (a test fails while a parser of the composition root's
``PARSERS`` has none) and its samples to ``SAMPLES``: a small file written here, and a
real book under ../shared/books where there is one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from citadel.app.ports import DocumentParser
from citadel.bootstrap.families import PARSERS
from citadel.config import Settings
from tests.conftest import shared_path

SETTINGS = Settings()


@dataclass(frozen=True)
class ParserCase:
    """One adapter under the contract, and what its format can say about a block."""

    id: str  # its row in the composition root's PARSERS, the parser's family
    suffix: str  # a file name ending the parser reads, for the inputs it must refuse
    paged: bool  # blocks carry a physical page and its printed label (PDF)
    located: bool  # blocks carry a location inside the document (``part#anchor``)
    # False records a known gap: an empty file gives a document with no blocks (ingest
    # refuses such a document as ``no_text``) where the port asks for a ParseError: xfail.
    refuses_empty: bool = True
    # Reads folders only: the inputs it must refuse are written into a folder of their own.
    folder: bool = False

    def make(self) -> DocumentParser:
        """The parser as the composition root builds it."""
        return PARSERS[self.id](SETTINGS)

    def write(self, scratch: Path, stem: str, data: bytes) -> Path:
        """``data`` as a file this parser reads: the file itself, or the folder holding it."""
        directory = scratch / stem if self.folder else scratch
        directory.mkdir(exist_ok=True)
        (directory / f"{stem}{self.suffix}").write_bytes(data)
        return directory if self.folder else directory / f"{stem}{self.suffix}"


PDF = ParserCase("pdf", ".pdf", paged=True, located=False)
EPUB = ParserCase("epub", ".epub", paged=False, located=True)
HTML = ParserCase("html", ".html", paged=False, located=True)
MARKDOWN = ParserCase("markdown", ".md", paged=False, located=False, refuses_empty=False)
MARKDOWN_FOLDER = ParserCase("markdown-folder", ".md", paged=False, located=True, folder=True)
PLAINTEXT = ParserCase("text", ".txt", paged=False, located=False, refuses_empty=False)
CASES = (PDF, EPUB, HTML, MARKDOWN, MARKDOWN_FOLDER, PLAINTEXT)


@dataclass(frozen=True)
class Sample:
    """One input: written into a scratch directory, or a real book under ../shared."""

    case: ParserCase
    name: str
    write: Callable[[Path], Path] | None = None
    shared: tuple[str, ...] = ()

    @property
    def book(self) -> bool:
        return bool(self.shared)

    def locate(self, scratch: Path) -> Path:
        if self.write is not None:
            return self.write(scratch)
        return shared_path(*self.shared)


def _markdown(scratch: Path) -> Path:
    path = scratch / "runbook.md"
    path.write_text(
        "# Operating the queue\n\n"
        "The queue keeps every job until a worker acknowledges it.\n\n"
        "## Restarting workers\n\n"
        "Restart the workers one at a time, so the queue never stalls.\n\n"
        "```sh\nsystemctl restart worker@1\n```\n\n"
        "### Checking the backlog\n\n"
        "- Read the backlog gauge.\n- Wait until it falls below a hundred.\n\n"
        "## Draining a node\n\n"
        "Drain a node before its kernel is upgraded.\n",
        encoding="utf-8",
    )
    return path


def _markdown_folder(scratch: Path) -> Path:
    root = scratch / "handbook"
    (root / "docs" / "guide").mkdir(parents=True)
    (root / "mkdocs.yml").write_text(
        "site_name: The handbook\n"
        "markdown_extensions:\n  - pymdownx.emoji:\n"
        "      emoji_index: !!python/name:material.extensions.emoji.twemoji\n"
        "nav:\n  - Home: index.md\n  - Guide:\n      - guide/setup.md\n"
        "      - Upgrading: guide/upgrade.md\n",
        encoding="utf-8",
    )
    files = {
        "index.md": "# The handbook\n\nStart with [the setup](guide/setup.md#checking).\n",
        "guide/setup.md": "# Setting up\n\nUnpack the archive.\n\n## Checking\n\n"
        "Run the self test before the first job.\n",
        "guide/upgrade.md": "# Upgrading\n\nStop the service, then unpack over it.\n\n"
        "```sh\nservice worker stop\n```\n",
    }
    for name, text in files.items():
        (root / "docs" / name).write_text(text, encoding="utf-8")
    return root


def _plaintext(scratch: Path) -> Path:
    path = scratch / "release-notes.txt"
    path.write_text(
        "Release notes for the spring release.\n\n"
        "The importer now reads EPUB 3 books with a navigation document.\r\n\r\n"
        "Older readers keep working; nothing needs to be migrated.\n",
        encoding="utf-8",
    )
    return path


_PAGE = (
    "<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>"
    "<meta name='author' content='Ada Writer'><script>var tracking = 1;</script></head>"
    "<body><nav class='navigation'><a href='index.html'>Home</a></nav><main>{body}</main>"
    "<footer>Copyright the authors</footer></body></html>"
)


def _html_page(scratch: Path) -> Path:
    path = scratch / "guide.html"
    body = (
        "<h1 id='top'>Field guide</h1><p>Read this guide before the first shift.</p>"
        "<div class='toc'><a href='#birds'>Birds</a> <a href='#trees'>Trees</a></div>"
        "<h2 id='birds'>Birds</h2><p>Herons wade in the shallows.</p>"
        "<h3 id='herons'>Herons</h3><pre>heron = wader\n  legs: long</pre>"
        "<h2 id='trees'>Trees</h2><p>Oaks grow slowly.</p><table><tr><td>oak</td>"
        "<td>slow</td></tr></table>"
    )
    path.write_text(_PAGE.format(title="Field guide", body=body), encoding="utf-8")
    return path


def _html_folder(scratch: Path) -> Path:
    root = scratch / "manual"
    (root / "part").mkdir(parents=True)
    pages = {
        "index.html": (
            "The manual",
            "<h1>The manual</h1><p>Welcome to the manual.</p><div class='toctree-wrapper'>"
            "<ul><li><a href='part/install.html'>Installing</a><ul>"
            "<li><a href='part/upgrade.html'>Upgrading</a></li></ul></li>"
            "<li><a href='genindex.html'>Index</a></li></ul></div>",
        ),
        "part/install.html": (
            "Installing",
            "<h1>1. Installing</h1><p>Unpack the archive.</p>"
            "<h2 id='check'>1.1. Checking</h2><p>Run the self test.</p>",
        ),
        "part/upgrade.html": (
            "Upgrading",
            "<h1>1.2. Upgrading</h1><p>Stop the service, then unpack over it.</p>"
            "<p>See <a href='../faq.html'>the questions</a>.</p>",
        ),
        "faq.html": ("Questions", "<h1>Questions</h1><p>Is it safe? It is.</p>"),
        "genindex.html": ("Index", "<h1>Index</h1><p>archive, 1</p>"),
    }
    for name, (title, body) in pages.items():
        (root / name).write_text(_PAGE.format(title=title, body=body), encoding="utf-8")
    return root


def _book(case: ParserCase, *parts: str) -> Sample:
    return Sample(case, f"{case.id}-{parts[-1]}", shared=("books", *parts))


SAMPLES = (
    _book(PDF, "pdf", "R-intro.pdf"),
    _book(PDF, "pdf", "pari-tutorial.pdf"),
    _book(EPUB, "epub", "linear-algebra.epub"),
    _book(EPUB, "epub", "epub30-spec.epub"),
    Sample(HTML, "html-page", write=_html_page),
    Sample(HTML, "html-folder", write=_html_folder),
    _book(HTML, "html", "python-3.11-tutorial"),
    _book(HTML, "html", "git-user-manual", "user-manual.html"),
    Sample(MARKDOWN, "markdown-file", write=_markdown),
    Sample(MARKDOWN_FOLDER, "markdown-folder", write=_markdown_folder),
    Sample(PLAINTEXT, "plaintext-file", write=_plaintext),
)
