"""MathML as readable linear text, for the markup walker."""

from __future__ import annotations

import re

from citadel.adapters.parsers.markup.names import Element, local_name

_WS = re.compile(r"\s+")
_INVISIBLE = dict.fromkeys(map(ord, "\u2061\u2062\u2063\u2064\u200b"))
_TIGHT_OPS = frozenset("()[]{}|,.;:!'′″")


def math_text(el: Element) -> str:
    """MathML as readable linear text: ``x_{ij}``, ``(a + b)/c``, ``√x``; annotations dropped."""
    try:
        return _WS.sub(" ", _math(el)).strip()
    except RecursionError:  # absurdly deep markup: the bare text will do
        return _WS.sub(" ", "".join(t for t in el.itertext() if isinstance(t, str))).strip()


def _group(text: str) -> str:
    text = text.strip()
    return text if len(text) <= 1 else "{" + text + "}"


def _paren(text: str) -> str:
    text = text.strip()
    return text if len(text) <= 1 or text.isalnum() else f"({text})"


def _math(el: Element) -> str:
    tag = el.tag
    if not isinstance(tag, str):
        return ""
    name = local_name(tag)
    if name in ("annotation", "annotation-xml", "mphantom", "none", "mprescripts"):
        return ""
    if name in ("mi", "mn", "mo", "mtext", "ms"):
        text = _WS.sub(" ", "".join(el.itertext())).translate(_INVISIBLE).strip()
        return f" {text} " if name == "mo" and text and text not in _TIGHT_OPS else text
    if name == "mspace":
        return " "
    parts = [_math(child) for child in el if isinstance(child.tag, str)]
    if name == "semantics":
        return parts[0] if parts else ""
    if name in ("msub", "munder") and len(parts) >= 2:
        return f"{parts[0]}_{_group(parts[1])}"
    if name in ("msup", "mover") and len(parts) >= 2:
        return f"{parts[0]}^{_group(parts[1])}"
    if name in ("msubsup", "munderover") and len(parts) >= 3:
        return f"{parts[0]}_{_group(parts[1])}^{_group(parts[2])}"
    if name == "mfrac" and len(parts) >= 2:
        return f"{_paren(parts[0])}/{_paren(parts[1])}"
    if name == "msqrt":
        return f"√{_paren(''.join(parts))}"
    if name == "mroot" and len(parts) >= 2:
        return f"√[{parts[1].strip()}]{_paren(parts[0])}"
    if name == "mfenced":
        separator = (el.get("separators") or ",").strip()[:1]
        inner = f"{separator} ".join(parts) if separator else "".join(parts)
        return f"{el.get('open', '(')}{inner}{el.get('close', ')')}"
    if name == "mtable":  # rows; a fence around the table supplies the brackets
        return "; ".join(row for row in (p.strip() for p in parts) if row)
    if name in ("mtr", "mlabeledtr"):
        return ", ".join(cell for cell in (p.strip() for p in parts) if cell)
    return "".join(parts)
