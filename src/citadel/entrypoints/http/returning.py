"""Where signing in sends a reader back: the permalink or deep link that asked them to
sign in (``/ask?q=…``, a footnote's route, a source's page), and nowhere else.

The link rides along as ``next`` on the sign-in form. Only paths of this site that
start with one of ``RETURNABLE`` are followed; anything else (another site, a
scheme-relative ``//host``, control characters, an overlong value) lands on ``/ask``.
"""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.requests import Request

RETURNABLE = ("/ask?", "/answers/", "/library/")
HOME = "/ask"
MAX_NEXT = 2048


def safe_next(value: str | None) -> str:
    """``value`` when it is one of the links above, else ``HOME``."""
    if not value or len(value) > MAX_NEXT or not value.isascii():
        return HOME
    if any(not 0x21 <= ord(c) <= 0x7E or c == "\\" for c in value):
        return HOME
    return value if value.startswith(RETURNABLE) else HOME


def sign_in_url(request: Request) -> str:
    """``/signin``, with the page to come back to when it is a link worth keeping."""
    if request.method != "GET":
        return "/signin"
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    if safe_next(here) == HOME:
        return "/signin"
    return "/signin?" + urlencode({"next": here})
