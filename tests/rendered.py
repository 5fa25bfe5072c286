"""What a renderer makes of an interface's output: the checks the hostile-text tests share.

Markdown (MCP's text content, the CLI's human output) is rendered by markdown-it-py
as CommonMark with raw HTML on, plus linkify when linkify-it-py is installed. Where
it is not, a text outside code that holds a link form of the renderable-text rule
(``renderable_form``: bare hosts with a path, e-mail addresses, ``www.``, schemes —
what linkify-it and GFM's autolinks link) counts as linked, as linkify would have made
it a link; a markup form left in the text outside code (``&ltsvg``, which CommonMark
keeps as text) counts too: a client showing that text as HTML would decode it.
Anything but paragraphs, emphasis, lists and code is something the text turned into.
"""

from __future__ import annotations

import importlib.util
import re

import lxml.html
from markdown_it import MarkdownIt

from citadel.domain.renderable import Renderable, renderable_form

_LINKIFY = importlib.util.find_spec("linkify_it") is not None
# Paragraphs, emphasis, code and the lists an interface lays its results out in.
_PLAIN_TAGS = frozenset({"div", "p", "em", "strong", "code", "pre", "br", "ol", "ul", "li"})
# What a terminal acts on: ESC (so OSC 8 and every other escape sequence), the C1
# controls, and the bidirectional controls.
TERMINAL_ACTIVE = re.compile("[\x1b\x80-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def render_markdown(markdown: str) -> str:
    renderer = MarkdownIt("commonmark", {"html": True, "linkify": _LINKIFY})
    if _LINKIFY:
        renderer.enable("linkify")
    return renderer.render(markdown)


def what_markdown_renders(markdown: str) -> list[str]:
    """Every element (``<a>``, ``<img>``, ``<h1>``, a raw tag…) and every linkable text
    outside code that rendering ``markdown`` makes; empty when it is all text."""
    tree = lxml.html.fragment_fromstring(render_markdown(markdown), create_parent="div")
    found: list[str] = []
    for el in tree.iter():
        tag = el.tag if isinstance(el.tag, str) else "!--"  # a comment or an instruction
        if tag not in _PLAIN_TAGS:
            found.append(f"<{tag}>")
    for code in list(tree.iter("code", "pre")):
        code.text = ""  # its own text only: what follows it (its tail) is outside code
        for child in list(code):
            code.remove(child)
    outside_code = tree.text_content()
    form = renderable_form(outside_code)
    if form is Renderable.LINK and not _LINKIFY:
        found.append("linkable text outside code")
    if form is Renderable.MARKUP:  # a page that shows this text raw would render it
        found.append("markup form outside code")
    if TERMINAL_ACTIVE.search(markdown):
        found.append("terminal control")
    return found
