"""``/docs``: the API's interactive documentation, served entirely by this server.

Swagger UI's files come from the ``swagger-ui-bundle`` package (Apache-2.0), read
from its install; the page is a fixed document whose scripts are files of this
origin (the bundle and ``/static/docs.js``, which points it at ``/openapi.json``),
so it runs under the site's Content-Security-Policy: ``script-src 'self'``, no
inline script, nothing from a CDN, nothing downloaded at run time.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from starlette.exceptions import HTTPException
from starlette.responses import FileResponse, HTMLResponse, Response
from swagger_ui_bundle import swagger_ui_path  # type: ignore[import-untyped]

router = APIRouter(include_in_schema=False)

ASSETS = Path(swagger_ui_path)

SERVED = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon-32x32.png": "image/png",
}
"""The bundle's files the page uses; nothing else of the package is served."""

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>citadel API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
</head>
<body>
<noscript>The interactive documentation needs JavaScript; the document itself is
<a href="/openapi.json">/openapi.json</a>.</noscript>
<div id="swagger-ui" data-spec="/openapi.json"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/static/docs.js"></script>
</body>
</html>
"""


@router.get("/docs")
def docs() -> Response:
    """The documentation page (public, like /openapi.json)."""
    return HTMLResponse(PAGE, headers={"Cache-Control": "no-cache"})


@router.get("/docs/assets/{name}")
def asset(name: str) -> Response:
    """One of Swagger UI's files, from the installed package."""
    media_type = SERVED.get(name)
    if media_type is None:
        raise HTTPException(404, "no such file")
    return FileResponse(
        ASSETS / name, media_type=media_type, headers={"Cache-Control": "public, max-age=86400"}
    )
