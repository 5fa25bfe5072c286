"""The library the golden citation set (data/citations/golden.jsonl) is checked against.

Two shared books, made into six states a citation can be in: the Git User Manual
with a trusted URL in three versions (the first past retention), the EPUB 3
specification with a URL and a staff-only ACL, a copy of it without a URL that then
moved, and a copy that was deleted. Readers: ``alice`` (no groups) and ``sam``
(staff). ``data/citations/README.md`` gives the same steps as shell commands.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from click.testing import Result

GIT_URL = "https://git-scm.com/docs/user-manual"
EPUB_URL = "https://www.w3.org/publishing/epub3/"
ENV = {
    "CITADEL_EMBEDDER": "none",
    "CITADEL_LINK_ALLOWED_HOSTS": "git-scm.com,www.w3.org",
    "CITADEL_RETAIN_VERSIONS": "2",
}
PRINTINGS = (
    "<h2>Appendix: the second printing</h2><p>The second printing of this manual"
    " adds this appendix, which names the printing and nothing else.</p>",
    "<h2>Appendix: the third printing</h2><p>The third printing of this manual"
    " replaces that appendix with this one, so each printing reads differently.</p>",
)


def printing(manual: Path, where: Path, appendix: str) -> Path:
    """The manual with ``appendix`` added before its end: the text of a new version."""
    html = manual.read_text(encoding="utf-8")
    at = html.rfind("</body>")
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(html[:at] + appendix + html[at:], encoding="utf-8")
    return where


def build_golden_library(
    books: Path, scratch: Path, home: Path, cli: Callable[..., Result]
) -> None:
    """Make the golden set's library at ``home`` through ``cli`` (argv → a finished run)."""

    def run(*args: str) -> None:
        outcome = cli(*args)
        assert outcome.exit_code == 0, (args, outcome.stderr)

    where = ("--home", str(home))
    manual = books / "html" / "git-user-manual" / "user-manual.html"
    run("ingest", *where, "--source-id", "git-manual", "--url", GIT_URL, str(manual))
    for number, appendix in enumerate(PRINTINGS, 2):
        copy = printing(manual, scratch / f"printing-{number}" / "user-manual.html", appendix)
        run("ingest", *where, "--source-id", "git-manual", str(copy))
    spec = books / "epub" / "epub30-spec.epub"
    run("ingest", *where, "--source-id", "epub-spec", "--url", EPUB_URL, str(spec))
    run("sources", "acl", *where, "epub-spec", "--set", "staff")
    first, moved = scratch / "shelf-a" / spec.name, scratch / "shelf-b" / spec.name
    first.parent.mkdir(parents=True)
    moved.parent.mkdir(parents=True)
    shutil.copyfile(spec, first)
    run("ingest", *where, "--source-id", "epub-nourl", str(first))
    shutil.move(first, moved)
    run("sources", "move", *where, "epub-nourl", str(moved))
    run("ingest", *where, "--source-id", "epub-draft", str(spec))
    run("sources", "delete", *where, "epub-draft")
    run("users", "add", *where, "alice")
    run("users", "add", *where, "sam", "--groups", "staff")
