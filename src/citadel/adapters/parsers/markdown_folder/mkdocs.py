"""The few keys of an ``mkdocs.yml`` a book needs, read without a YAML library.

Only top-level ``site_name``, ``site_author``, ``docs_dir`` and ``nav`` are read;
every other key (theme, plugins, ``!!python/name:`` tags and all) is passed over
unread, so no tag is ever resolved and nothing in the file runs. ``nav`` must be
a block list (``- page.md``, ``- Title: page.md``, ``- Section:`` over a nested
list); a nav in any other form is reported and the folder's own order is used.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_TOP_KEY = re.compile(r"^([A-Za-z_][\w-]*)\s*:(.*)$")
_NOT_PLAIN = ("!", "[", "{", "&", "*", "|", ">")
_QUOTED = re.compile(r"""^(?:'((?:[^']|'')*)'|"((?:[^"\\]|\\.)*)")""")


@dataclass(frozen=True, slots=True)
class NavEntry:
    """One page of the nav: its title there (None for a bare ``- page.md``) and its target."""

    title: str | None
    target: str


@dataclass(frozen=True, slots=True)
class MkDocsConfig:
    site_name: str | None = None
    site_author: str | None = None
    docs_dir: str | None = None
    nav: tuple[NavEntry, ...] | None = None
    """None when there is no nav (or none that could be read): the folder's order."""
    problems: tuple[str, ...] = field(default=())


def read_mkdocs(text: str) -> MkDocsConfig:
    """The keys above from the text of an ``mkdocs.yml``; a key it cannot read is left unset."""
    scalars: dict[str, str] = {}
    nav_lines: list[str] | None = None
    problems: list[str] = []
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        match = _TOP_KEY.match(lines[index])
        index += 1
        if match is None:
            continue
        key, rest = match.group(1), _strip_comment(match.group(2)).strip()
        if key == "nav":
            if rest:
                problems.append(
                    "the nav of mkdocs.yml is not a block list; the folder's order is used"
                )
                continue
            nav_lines = []
            while index < len(lines) and (not lines[index].strip() or lines[index][0] in " \t-#"):
                nav_lines.append(lines[index])
                index += 1
        elif key in ("site_name", "site_author", "docs_dir") and rest:
            value = _scalar(rest)
            if value and not value.startswith(_NOT_PLAIN):  # a tag, a flow value, a block
                scalars[key] = value
    nav = None if nav_lines is None else _nav(nav_lines, problems)
    return MkDocsConfig(
        site_name=scalars.get("site_name"),
        site_author=scalars.get("site_author"),
        docs_dir=scalars.get("docs_dir"),
        nav=nav,
        problems=tuple(problems),
    )


def _nav(lines: list[str], problems: list[str]) -> tuple[NavEntry, ...] | None:
    entries: list[NavEntry] = []
    for line in lines:
        item = _strip_comment(line).strip()
        if not item:
            continue
        if not item.startswith("-"):
            problems.append(f"mkdocs.yml's nav holds a line that is not a list item ({item[:60]})")
            return None
        item = item[1:].strip()
        if not item:
            continue
        title, target = _pair(item)
        if target:  # a section's own line ("- Guide:") names no page; its items follow
            entries.append(NavEntry(title, target))
    return tuple(entries)


def _pair(item: str) -> tuple[str | None, str]:
    """``Title: x`` → (Title, x); ``x`` → (None, x); ``Title:`` → (Title, "") (a section)."""
    quoted = _QUOTED.match(item)
    if quoted:
        key, rest = _unquote(quoted), item[quoted.end() :].strip()
        if not rest.startswith(":"):
            return None, key
        return key, _scalar(rest[1:].strip())
    match = re.match(r"^(.*?):(?:\s+(.*))?$", item)
    if match is None:
        return None, _scalar(item)
    return match.group(1).strip() or None, _scalar(match.group(2) or "")


def _scalar(text: str) -> str:
    text = text.strip()
    quoted = _QUOTED.match(text)
    return _unquote(quoted) if quoted else text


def _unquote(match: re.Match[str]) -> str:
    single, double = match.group(1), match.group(2)
    if single is not None:
        return single.replace("''", "'")
    return re.sub(r"\\(.)", r"\1", double or "")


def _strip_comment(text: str) -> str:
    """The text before a ``#`` comment that is outside quotes and after a space (or first)."""
    quote = ""
    for position, char in enumerate(text):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#" and (position == 0 or text[position - 1] in " \t"):
            return text[:position]
    return text
