"""Open a page in a real headless browser (Debian's Chromium, installed on first use as the
Docker engine is; driven by Playwright, which never downloads a browser here) and report what it
rendered and every request the page made.

Page requests are told apart from the browser's own background traffic (update checks and the
like) by Playwright's request events; all traffic goes to a proxy on 127.0.0.1 that records it
and answers nothing, so none leaves the machine."""

from __future__ import annotations

import shutil
import socket
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusters.backends.compose.engine import apt_install

#: One browser start and page load; ~2-5 s on this 2-core machine.
BROWSER_TIMEOUT_S = 120.0


def ensure_chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    apt_install(["chromium"], "the report's browser test")
    found = shutil.which("chromium")
    if not found:
        raise RuntimeError("chromium was installed but is not on PATH")
    return found


class RecordingProxy:
    """A TCP listener on 127.0.0.1 that records each request's first line and closes."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.requests: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    first = conn.recv(4096).split(b"\r\n", 1)[0].decode(errors="replace")
                except OSError:
                    first = "(connection, no request line)"
                self.requests.append(first)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()


@dataclass
class Rendered:
    dom: str
    plots_rendered: int | None  # the page's own self-check (None: its script did not run)
    #: what the page asked for beyond itself (a script, style, font, image, fetch): must be empty
    requests: list[str]
    #: what reached the local proxy (the browser's own background traffic included); never forwarded
    proxied: list[str]
    #: what ``measure`` (a script run in the page after it loaded) returned
    measured: Any = None


def render(page: Path, measure: str | None = None) -> Rendered:
    """Load ``page`` (a file) in headless Chromium through Playwright; the DOM after its scripts
    ran, and every request the page made. Requests other than the page's own file are refused
    (Playwright routing), and all network traffic is sent to a local proxy that never forwards:
    nothing leaves the machine, whatever the page or the browser tries."""
    from playwright.sync_api import sync_playwright

    chromium = ensure_chromium()
    proxy = RecordingProxy()
    url = page.resolve().as_uri()
    requests: list[str] = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"],
                                         proxy={"server": f"http://127.0.0.1:{proxy.port}", "bypass": "<-loopback>"},
                                         timeout=BROWSER_TIMEOUT_S * 1000)
            try:
                tab = browser.new_page()
                tab.on("request", lambda r: requests.append(r.url) if r.url != url else None)
                tab.route("**/*", lambda route: route.continue_() if route.request.url == url else route.abort())
                tab.goto(url, wait_until="load", timeout=BROWSER_TIMEOUT_S * 1000)
                rendered = tab.evaluate("document.documentElement.dataset.plotsRendered ?? null")
                measured = tab.evaluate(measure) if measure else None
                dom = tab.content()
            finally:
                browser.close()
    finally:
        proxy.close()
    return Rendered(dom, int(rendered) if rendered is not None else None, requests, proxy.requests, measured)
