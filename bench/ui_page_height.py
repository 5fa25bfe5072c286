"""How tall the answer page is for the demo question, in Debian's chromium (playwright).

Builds a library from ``../shared/books/pdf/R-intro.pdf`` (default settings:
the packaged MiniLM embedder, the extractive generator) in a temporary home,
serves it on loopback, signs in, asks the demo's first question through the
ask form and prints the page's height in CSS pixels at a 1280x720 viewport,
and that height in screens. Nothing is expanded.

    .venv/bin/python bench/ui_page_height.py [--book PATH] [--home DIR] [--screenshot FILE]

``--home`` keeps the library between runs (ingestion is the slow part).
"""

from __future__ import annotations

import argparse
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path

import uvicorn

from citadel.app.ingest import IngestOptions
from citadel.bootstrap import build
from citadel.config import HttpSettings, Settings
from citadel.domain.users import Actor, Role
from citadel.entrypoints.http import create_app

QUESTION = "How do I read data from a file into a data frame?"
VIEWPORT = {"width": 1280, "height": 720}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--book", type=Path, default=Path("../shared/books/pdf/R-intro.pdf"))
    parser.add_argument("--home", type=Path, default=None)
    parser.add_argument("--screenshot", type=Path, default=None)
    args = parser.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="citadel-ui-"))
    services = build(Settings(home=home, http=HttpSettings(rate_per_minute=10_000)))
    try:
        if not services.registry.list("default"):
            services.ingest.ingest(
                services.documents.open(args.book),
                IngestOptions(),
                actor=Actor(user_id="local", tenant="default", role=Role.ADMIN),
            )
        if "bench" in {u.name for u in services.users.list()}:
            _, token = services.users.rotate("bench")
        else:
            _, token = services.users.add("bench", Role.READER, "default")
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        server = uvicorn.Server(
            uvicorn.Config(
                create_app(services, session_secret=b"b" * 32),
                log_config=None,
                access_log=False,
                lifespan="off",
            )
        )
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.02)
        try:
            height = measure(f"http://127.0.0.1:{port}", token, args.screenshot)
        finally:
            server.should_exit = True
            thread.join(10)
        screens = height / VIEWPORT["height"]
        print(f"answer page height: {height} px ({screens:.2f} screens of {VIEWPORT['height']} px)")
    finally:
        services.close()
        if args.home is None:
            shutil.rmtree(home, ignore_errors=True)


def measure(base: str, token: str, screenshot: Path | None) -> int:
    from playwright.sync_api import sync_playwright

    executable = shutil.which("chromium") or "/usr/bin/chromium"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_context(viewport=VIEWPORT).new_page()
            page.goto(f"{base}/signin")
            page.fill("input[name=name]", "bench")
            page.fill("input[name=token]", token)
            page.click("button[type=submit]")
            page.wait_for_url(f"{base}/ask")
            page.fill("textarea[name=question]", QUESTION)
            page.click("#ask-form button[type=submit]")
            page.wait_for_selector("ol.footnotes li, .degraded", timeout=120_000)
            page.wait_for_selector("section.evidence")
            height = int(page.evaluate("document.documentElement.scrollHeight"))
            if screenshot is not None:
                page.screenshot(path=str(screenshot), full_page=True)
            return height
        finally:
            browser.close()


if __name__ == "__main__":
    main()
