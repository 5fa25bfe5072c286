"""Which canonical URLs may be rendered as links.

A book's canonical URL is shown to readers as a link and nothing more: the
application never fetches a URL it stores or shows, so there is no server-side
request forgery surface here. What this policy guards is the reader. A link it
accepts goes over HTTPS to a host the operator put on the allowlist, cannot be
disguised (userinfo, IP literals, internal names, homographs) and cannot break
out of the markup it is rendered into (controls, whitespace, backslashes).

The policy is a pure function and runs twice: when a URL is registered, where
only the normalised form is stored, and again when it is rendered, so a URL
stored before the allowlist shrank, or written to the catalogue by other means,
is refused all the same. Render :attr:`Link.url`, never the raw input: the
checks are made on that form.

The policy (:mod:`.policy`) reads a URL in two sets of rules: the URL rules
(:mod:`.urls`: characters, percent-encoding, scheme, authority) and the host
rules (:mod:`.hosts`: IDNA mapping, labels, reserved names, scripts and
look-alikes); its verdict is a :class:`Link` or a :class:`LinkRefusal`
(:mod:`.verdict`).

Judgement calls, each pinned by a test:

* A trailing dot (``docs.example.org.``) is refused, not normalised away: a
  canonical URL has no reason to carry one, and browsers treat it as another
  origin.
* Host text is mapped the way IDNA maps it (as browsers do): Unicode full
  stops (U+3002, U+FF0E, U+FF61) separate labels, compatibility forms
  (full-width, circled) become ASCII, upper case becomes lower case. The
  mapped host is what is checked and rendered, so ``docs。example。org`` is
  ``docs.example.org``.
* The stdlib codec implements IDNA 2003. The characters where IDNA 2003 and
  IDNA 2008 (and so browsers) disagree, ß and final sigma, are refused rather
  than mapped, so the rendered host is never a different one from the one the
  author wrote; a label that does not survive the IDNA 2003 round trip is
  refused as ``invalid_idn``.
* Percent-encoding is refused in the host outright. Anywhere else an encoded
  control, whitespace (``%20`` included), format character or backslash is
  refused, decoding repeatedly so that ``%250a`` counts too.
* Homographs matter under a ``*.suffix`` entry (an exact entry is matched in
  punycode, which no look-alike shares). A label mixing scripts is refused
  (Latin with Han, kana or Hangul excepted, as in UTS #39); so is a host whose
  confusable skeleton is an allowlisted name it is not, and a non-ASCII label
  made only of look-alikes of ASCII letters, which also refuses a few genuine
  words such as Cyrillic "рус": the cost is a missing link, never a wrong one.
* Raw non-ASCII letters in the path, query and fragment are accepted (the
  renderer escapes them); only the host is rewritten.
* ``:443`` is accepted and dropped from the normalised URL; any other port,
  including ``0443``, is refused.
"""

from citadel.domain.links.policy import LinkPolicy
from citadel.domain.links.verdict import Link, LinkRefusal

__all__ = ["Link", "LinkPolicy", "LinkRefusal"]
