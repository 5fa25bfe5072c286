"""Uploads: a multipart body streamed to a temporary file, refused as soon as it is too large.

Nothing is buffered in memory beyond a few small fields, and the size limit
(``max_file_bytes``) is enforced while the bytes arrive, not after. The
document reader then hands the received file to the same ingest use case as
the CLI's, as a document named by the uploaded file's name (never the spool
path) and without a sidecar manifest; the per-file errors are the CLI's, and
the tenant is always the caller's.

Files are spooled under ``<CITADEL_HOME>/uploads/<pid>-<random>/`` and removed when
the request ends; a server that died mid-upload leaves its folder behind, and
``clean_spool`` (run when the app starts) removes the folders of processes that
are gone.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Collection
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from citadel.app.errors import Forbidden, InvalidRequest
from citadel.app.ingest import IngestOptions, IngestReport
from citadel.bootstrap import Services
from citadel.domain.integers import declared_over
from citadel.domain.users import Actor
from citadel.entrypoints.http.errors import TooLarge

if TYPE_CHECKING:
    from python_multipart.multipart import MultipartCallbacks

FILE_FIELD = "file"
OPTION_FIELDS = ("source_id", "url", "acl", "title", "tenant")
_MAX_FIELD_BYTES = 16 * 1024
_MAX_FIELDS = 16
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._ -]+")

MULTIPART_SCHEMA: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": [FILE_FIELD],
                    "properties": {
                        FILE_FIELD: {"type": "string", "format": "binary"},
                        "source_id": {"type": "string"},
                        "url": {"type": "string"},
                        "acl": {"type": "string", "description": "Comma-separated groups"},
                        "title": {"type": "string"},
                        "tenant": {"type": "string", "description": "Must be your own tenant"},
                    },
                    "additionalProperties": False,
                }
            }
        },
    }
}


@dataclass
class Upload:
    filename: str
    path: Path
    fields: dict[str, str] = field(default_factory=dict)


@dataclass
class _Part:
    name: str = ""
    filename: str | None = None
    data: bytearray = field(default_factory=bytearray)


@asynccontextmanager
async def received(
    request: Request, max_file_bytes: int, allowed: Collection[str], spool_root: Path
) -> AsyncIterator[Upload]:
    """Stream the body into a temporary directory under ``spool_root``, removed afterwards."""
    content_type, params = parse_options_header(request.headers.get("content-type"))
    boundary = params.get(b"boundary")
    if content_type != b"multipart/form-data" or not boundary:
        raise InvalidRequest("send the file as multipart/form-data in a field named 'file'")
    declared = request.headers.get("content-length", "")
    budget = max_file_bytes + _MAX_FIELDS * _MAX_FIELD_BYTES + 64 * 1024
    if declared_over(declared, budget):
        raise TooLarge(f"the upload is over the {max_file_bytes}-byte limit")
    spool_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"{os.getpid()}-", dir=spool_root) as tmp:
        receiver = _Receiver(Path(tmp), max_file_bytes, allowed)
        try:
            parser = MultipartParser(boundary, receiver.callbacks())
            async for chunk in request.stream():
                parser.write(chunk)
            parser.finalize()
        except FormParserError as exc:
            raise InvalidRequest(f"malformed multipart body: {exc}") from None
        finally:
            receiver.close()
        yield receiver.result()


class _Receiver:
    def __init__(self, directory: Path, max_file_bytes: int, allowed: Collection[str]) -> None:
        self._directory = directory
        self._max = max_file_bytes
        self._allowed = frozenset(allowed)
        self._part = _Part()
        self._header_field = bytearray()
        self._header_value = bytearray()
        self._headers: dict[str, bytes] = {}
        self._file: IO[bytes] | None = None
        self._written = 0
        self._upload: Upload | None = None
        self._fields: dict[str, str] = {}

    def callbacks(self) -> MultipartCallbacks:  # a TypedDict only for type checkers
        return {
            "on_part_begin": self._begin,
            "on_header_field": lambda d, s, e: self._header_field.extend(d[s:e]),
            "on_header_value": lambda d, s, e: self._header_value.extend(d[s:e]),
            "on_header_end": self._header_end,
            "on_headers_finished": self._headers_finished,
            "on_part_data": self._data,
            "on_part_end": self._end,
        }

    def _begin(self) -> None:
        self._part = _Part()
        self._headers = {}

    def _header_end(self) -> None:
        self._headers[self._header_field.decode("latin-1").lower()] = bytes(self._header_value)
        self._header_field.clear()
        self._header_value.clear()

    def _headers_finished(self) -> None:
        _, options = parse_options_header(self._headers.get("content-disposition"))
        self._part.name = options.get(b"name", b"").decode("utf-8", "replace")
        raw = options.get(b"filename")
        if self._part.name == FILE_FIELD:
            if self._upload is not None:
                raise InvalidRequest("send one file per request")
            name = _safe_filename(raw.decode("utf-8", "replace") if raw else "")
            path = self._directory / name
            self._upload = Upload(name, path)
            self._file = path.open("wb")
        elif self._part.name not in self._allowed:
            known = ", ".join([FILE_FIELD, *sorted(self._allowed)])
            raise InvalidRequest(f"unknown form field {self._part.name!r}; known: {known}")
        elif len(self._fields) >= _MAX_FIELDS:
            raise InvalidRequest("too many form fields")

    def _data(self, data: bytes, start: int, end: int) -> None:
        if self._part.name == FILE_FIELD and self._file is not None:
            self._written += end - start
            if self._written > self._max:
                raise TooLarge(f"the file is over the {self._max}-byte limit")
            self._file.write(data[start:end])
            return
        self._part.data.extend(data[start:end])
        if len(self._part.data) > _MAX_FIELD_BYTES:
            raise InvalidRequest(f"form field {self._part.name!r} is too long")

    def _end(self) -> None:
        if self._part.name == FILE_FIELD:
            self.close()
        else:
            try:
                self._fields[self._part.name] = self._part.data.decode("utf-8")
            except UnicodeDecodeError:
                raise InvalidRequest(f"form field {self._part.name!r} is not UTF-8") from None

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def result(self) -> Upload:
        if self._upload is None:
            raise InvalidRequest("no file: send it in a multipart field named 'file'")
        return replace(self._upload, fields=dict(self._fields))


def _safe_filename(name: str) -> str:
    """The file's own name (the parser is chosen by its extension), without any path."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = _SAFE_NAME.sub("_", base).strip(" .")[:200]
    return cleaned or "upload"


def options_for(upload: Upload, actor: Actor) -> IngestOptions:
    """Ingest options from the form. A blank ``acl`` is no ACL given (a form always
    sends the field): a new source is open to the tenant, a new version keeps its
    source's groups. Opening a restricted source is a change of its ACL, not an upload."""
    fields = upload.fields
    tenant = fields.get("tenant", "").strip()
    if tenant and tenant != actor.tenant:
        raise Forbidden(f"you may ingest only into your own tenant ({actor.tenant})")
    groups = frozenset(g.strip() for g in fields.get("acl", "").split(",") if g.strip())
    return IngestOptions(
        tenant=actor.tenant,
        source_id=fields.get("source_id", "").strip() or None,
        url=fields.get("url", "").strip() or None,
        acl_groups=groups or None,
        title=fields.get("title", "").strip() or None,
    )


def ingest_upload(services: Services, upload: Upload, actor: Actor) -> IngestReport:
    """Ingest the received file; reports and errors name the uploaded file."""
    options = options_for(upload, actor)
    document = services.documents.received(upload.path, name=upload.filename)
    return services.ingest.ingest(document, options, actor=actor)


def spool_root(services: Services) -> Path:
    """Where uploads are spooled while they arrive and are ingested."""
    return services.settings.home / "uploads"


def clean_spool(root: Path, *, max_age_s: float = 86_400.0) -> int:
    """Remove what uploads of dead processes left (a crash mid-upload); return how many.

    A folder is ``<pid>-<random>``; it goes when that process is gone, or, whatever
    its pid (pids are reused), when it is older than ``max_age_s``.
    """
    if not root.is_dir():
        return 0
    removed = 0
    now = time.time()
    for entry in root.iterdir():
        pid_text = entry.name.partition("-")[0]
        try:
            stale = now - entry.stat().st_mtime > max_age_s or not (
                pid_text.isdigit() and _alive(int(pid_text))
            )
        except OSError:
            continue
        if stale and entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
            removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    return True


async def receive_upload(request: Request, services: Services, actor: Actor) -> IngestReport:
    limit = services.settings.max_file_bytes
    async with received(request, limit, OPTION_FIELDS, spool_root(services)) as upload:
        return await run_in_threadpool(ingest_upload, services, upload, actor)
