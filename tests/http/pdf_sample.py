"""A small PDF written by hand: pages of Helvetica text lines, for the viewer's tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def write_pdf(path: Path, pages: Sequence[Sequence[str]]) -> Path:
    """``pages``, each a list of lines, as a US Letter PDF at ``path``; the outline has
    one entry per page, titled by its first line (so each page is a section)."""
    count = len(pages)
    outline = 3 + 2 * count + 1  # after the font, the pages and their contents
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R /Outlines %d 0 R >>" % outline,
        (
            "<< /Type /Pages /Kids ["
            + " ".join(f"{4 + 2 * i} 0 R" for i in range(count))
            + f"] /Count {count} >>"
        ).encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    for i, lines in enumerate(pages):
        content_no = 5 + 2 * i
        objects.append(
            (
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]"
                f" /Resources << /Font << /F1 3 0 R >> >> /Contents {content_no} 0 R >>"
            ).encode()
        )
        ops = ["BT", "/F1 12 Tf", "14 TL", "72 720 Td"]
        ops += [f"({_escape(line)}) Tj T*" for line in lines]
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(
        b"<< /Type /Outlines /First %d 0 R /Last %d 0 R /Count %d >>"
        % (outline + 1, outline + count, count)
    )
    for i, lines in enumerate(pages):
        links = b"".join(
            (
                b" /Prev %d 0 R" % (outline + i) if i else b"",
                b" /Next %d 0 R" % (outline + i + 2) if i + 1 < count else b"",
            )
        )
        title = _escape(lines[0]).encode("latin-1")
        objects.append(
            b"<< /Title (%s) /Parent %d 0 R /Dest [%d 0 R /Fit]%s >>"
            % (title, outline, 4 + 2 * i, links)
        )
    return write_objects(path, objects)


def write_objects(path: Path, objects: list[bytes]) -> Path:
    """A PDF file of ``objects`` (numbered from 1, the first the catalog) with its
    cross-reference table, written to ``path``."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    path.write_bytes(bytes(out))
    return path
