"""PDFs that are small on disk and take pdfium many seconds to draw, written in code.

``mesh_pdf``: each page a line of text over a free-form triangle mesh shading
(type 4) whose every triangle covers the whole page, so pdfium fills the page
once per triangle; 10,000 triangles take it about 9 s a page (Xeon, 1.5x scale)
and the file stays under 2 KB (the mesh is one repeated triangle, compressed).
``path_pdf``: a page of ``operators`` stroked triangles (path operators).
"""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

from tests.http.pdf_sample import write_objects

_FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"


def mesh_pdf(path: Path, *, pages: int = 3, triangles: int = 20_000) -> Path:
    corners = ((0, 0, 255), (65535, 0, 0), (32768, 65535, 128))
    triangle = b"".join(struct.pack(">BHHBBB", 0, x, y, red, 0, 0) for x, y, red in corners)
    mesh = zlib.compress(triangle * triangles, 9)
    shading = (
        b"<< /ShadingType 4 /ColorSpace /DeviceRGB /BitsPerCoordinate 16"
        b" /BitsPerComponent 8 /BitsPerFlag 8 /Decode [0 612 0 792 0 1 0 1 0 1]"
        b" /Length %d /Filter /FlateDecode >>\nstream\n" % len(mesh) + mesh + b"\nendstream"
    )
    return _write(path, pages, b"/Sh0 sh", b"/Shading << /Sh0 4 0 R >>", shading)


def path_pdf(path: Path, *, pages: int = 1, operators: int = 200_000) -> Path:
    strokes = zlib.compress(b"0.1 w\n" + b"10 10 m 600 780 l 20 700 l h S\n" * operators, 9)
    content = b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(strokes) + strokes
    return _write(path, pages, b"/P0 Do", b"/XObject << /P0 4 0 R >>", _form(content))


def _form(stream: bytes) -> bytes:
    # A form XObject drawing the strokes: one copy on disk, drawn by every page.
    return stream.replace(
        b"<< /Length", b"<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Length", 1
    ) + (b"\nendstream")


def _write(path: Path, pages: int, draw: bytes, resource: bytes, shared: bytes) -> Path:
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>"
        % (b" ".join(b"%d 0 R" % (5 + 2 * i) for i in range(pages)), pages),
        _FONT,
        shared,
    ]
    for number in range(1, pages + 1):
        text = b"BT /F1 12 Tf 72 740 Td (Page %d of the hostile drawing manual.) Tj ET\n" % number
        content = text + b"q " + draw + b" Q\n" + text
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources"
            b" << /Font << /F1 3 0 R >> %s >> /Contents %d 0 R >>"
            % (resource, 6 + 2 * (number - 1))
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
    return write_objects(path, objects)


def big_pdf(path: Path, mib: int) -> Path:
    """One page of text and an unreferenced stream of ``mib`` MiB of random bytes."""
    content = b"BT /F1 12 Tf 72 740 Td (The kestrel engine, in a large scan.) Tj ET\n"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]"
        b" /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Length %d >>\nstream\n" % (mib << 20) + os.urandom(mib << 20) + b"\nendstream",
    ]
    return write_objects(path, objects)
