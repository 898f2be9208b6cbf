"""The built book works in a real browser, offline.

Serves ``_build/html`` on 127.0.0.1, drives headless Chromium over the Chrome DevTools
Protocol (a plain websocket: no selenium, no playwright) and checks that

(a) MathJax typesets the maths on the intro and on chapter 1;
(b) the chapter-1 figure slider is rendered and moving it changes the displayed image,
    with no Python kernel behind the page;
(c) every request the pages make goes to the local server (or is data:/blob:/about:),
    i.e. the book needs no CDN, and none of them fails;
(d) on a 390 px phone every display equation keeps the text's size and fits the column, and
    every claims table shows every cell, with its column's name, without sideways scrolling.

Screenshots for humans land in ``_build/screenshots/``. Run after building the book
(the test builds it if the chapter-1 page is missing)::

    pytest -m browser tests/test_browser.py

Skipped, with the reason, when Chromium is not installed (``apt-get install chromium``).
"""

from __future__ import annotations

import base64
import functools
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import wait_for_render  # tests/ is on the path (pytest's rootdir conftest)

from attn_core.chapters import registry

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
CHAPTER1 = "notebooks/01_gated_classifier.html"
CHAPTER5 = "notebooks/05_multihead.html"
INTRO = "book/intro.html"
READING = "book/reading_numbers.html"
#: the book's pages with display equations besides the chapters
MATH_PAGES = [INTRO, READING]
#: the book's pages with wide markdown tables, and the chapters that have such a table
TABLE_PAGES = ["book/notation.html", "book/setup.html", "notebooks/03_ibm1.html",
               "notebooks/07_end_token.html"]
#: a phone's window width (an iPhone 12-15's 390 CSS px)
PHONE = 390
#: every registered chapter's page (attn_core/chapters/registry.py)
CHAPTERS = [f"notebooks/{c.notebook}.html" for c in registry.CHAPTERS]
assert CHAPTER5 in CHAPTERS
PAGE_LOAD_TIMEOUT = 60.0
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")
ALLOWED_SCHEMES = ("data:", "blob:", "about:")
# jupyter-book 1.0.4 + sphinx-thebe 0.3.1 emit the inline `const THEBE_JS_URL = ...` script
# twice per page; the second copy throws a SyntaxError. It only affects the (unused, off)
# Thebe live-code button, so it is not counted as a page error.
KNOWN_HARMLESS_JS_ERRORS = ("Identifier 'THEBE_JS_URL' has already been declared",)


def _find_chromium() -> str | None:
    env = os.environ.get("CHROMIUM")
    for cand in ((env,) if env else ()) + CHROMIUM_CANDIDATES:
        path = shutil.which(cand) if not os.path.isabs(cand) else (cand if os.access(cand, os.X_OK) else None)
        if path:
            return path
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------------------
# A minimal Chrome DevTools Protocol client
# --------------------------------------------------------------------------------------


class CDP:
    """Synchronous CDP session over one websocket: ``call`` waits for its reply and
    stores every event that arrives meanwhile in ``events``."""

    def __init__(self, ws_url: str):
        import websocket  # websocket-client (a Jupyter dependency)

        self.ws = websocket.create_connection(ws_url, timeout=PAGE_LOAD_TIMEOUT, suppress_origin=True)
        self.next_id = 0
        self.events: list[dict] = []
        #: The URL of the page as loaded and not changed since (None after a test moved a
        #: slider, opened a dropdown, ...): :func:`_visit` reuses it instead of reloading.
        self.clean_url: str | None = None

    def close(self) -> None:
        self.ws.close()

    def _recv(self, timeout: float) -> dict | None:
        import websocket

        self.ws.settimeout(max(timeout, 0.01))
        try:
            return json.loads(self.ws.recv())
        except websocket.WebSocketTimeoutException:
            return None

    def call(self, method: str, timeout: float = PAGE_LOAD_TIMEOUT, **params):
        self.next_id += 1
        msg_id = self.next_id
        self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = self._recv(deadline - time.monotonic())
            if msg is None:
                continue
            if msg.get("id") == msg_id:
                if "error" in msg:
                    raise RuntimeError(f"CDP {method} failed: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)
        raise TimeoutError(f"CDP {method}: no reply within {timeout} s")

    def settle(self) -> None:
        """Wait until the page has drawn two more frames: the layout, resize handlers and
        scrolling asked for before are done (a fixed sleep here cost ~25 s a test run)."""
        self.evaluate("new Promise(r => requestAnimationFrame("
                      "() => requestAnimationFrame(() => r(true))))")

    def pump(self, seconds: float) -> None:
        """Collect events for ``seconds``."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            msg = self._recv(deadline - time.monotonic())
            if msg is not None and "method" in msg:
                self.events.append(msg)

    def evaluate(self, expression: str, timeout: float = 30.0):
        res = self.call(
            "Runtime.evaluate",
            timeout=timeout,
            expression=expression,
            returnByValue=True,
            awaitPromise=True,
        )
        if "exceptionDetails" in res:
            raise RuntimeError(f"JS error in {expression[:80]!r}: {res['exceptionDetails']}")
        return res.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float = PAGE_LOAD_TIMEOUT, what: str = ""):
        """Poll a JS expression until it is truthy; return its value."""
        deadline = time.monotonic() + timeout
        value = None
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            self.pump(0.05)
        raise TimeoutError(f"timed out after {timeout} s waiting for {what or expression!r} (last: {value!r})")

    def goto(self, url: str) -> None:
        self.events.clear()
        self.clean_url = None
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + PAGE_LOAD_TIMEOUT
        while time.monotonic() < deadline:
            if any(e["method"] == "Page.loadEventFired" for e in self.events):
                return
            self.pump(0.05)
        raise TimeoutError(f"{url} did not finish loading within {PAGE_LOAD_TIMEOUT} s")

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))


# --------------------------------------------------------------------------------------
# Fixtures: the built book, a local server, a headless browser
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chromium() -> str:
    path = _find_chromium()
    if path is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium); browser checks skipped")
    try:
        import websocket  # noqa: F401
    except ImportError:
        pytest.skip("websocket-client is not installed; browser checks skipped")
    return path


@pytest.fixture(scope="module")
def built_book(chromium) -> Path:
    wait_for_render()     # the test command renders the HTML beside this run
    if not (HTML / CHAPTER1).exists():
        jb = Path(sys.executable).with_name("jupyter-book")
        cmd = [str(jb) if jb.exists() else "jupyter-book", "build", "."]
        env = {**os.environ, "ATTN_MODE": os.environ.get("ATTN_MODE", "fast")}
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, f"book build failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert (HTML / CHAPTER1).exists(), f"{HTML / CHAPTER1} missing after the build"
    return HTML


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass


@pytest.fixture(scope="module")
def server(built_book):
    handler = functools.partial(_QuietHandler, directory=str(built_book))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", _free_port()), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser(chromium, server):
    port = _free_port()
    profile = tempfile.mkdtemp(prefix="attn-chromium-")
    cmd = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--disable-default-apps",
        "--no-first-run",
        "--no-default-browser-check",
        "--mute-audio",
        "--hide-scrollbars",
        "--window-size=1280,900",
        "--remote-allow-origins=*",
        f"--user-data-dir={profile}",
        f"--remote-debugging-port={port}",
        "about:blank",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        page_ws = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and page_ws is None:
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace")[-2000:]
                pytest.fail(f"chromium exited with {proc.returncode}:\n{err}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2) as r:
                    targets = json.load(r)
                pages = [t for t in targets if t.get("type") == "page"]
                if pages:
                    page_ws = pages[0]["webSocketDebuggerUrl"]
            except OSError:
                time.sleep(0.3)
        assert page_ws, "chromium's DevTools endpoint did not come up within 30 s"
        cdp = CDP(page_ws)
        cdp.call("Page.enable")
        cdp.call("Network.enable")
        cdp.call("Runtime.enable")
        cdp.call("Network.setCacheDisabled", cacheDisabled=True)
        cdp.call(
            "Emulation.setDeviceMetricsOverride",
            width=1280,
            height=900,
            deviceScaleFactor=1,
            mobile=False,
        )
        yield cdp
        cdp.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr:
            proc.stderr.close()
        shutil.rmtree(profile, ignore_errors=True)


# Every page visit's CDP events, by page, for the network test at the end.
_VISITS: dict[str, list[dict]] = {}


def _visit(browser: CDP, server: str, page: str) -> None:
    """Load ``page``, or keep it when it is loaded already and no test has changed it
    (a chapter page takes ~4 s to load and typeset; each is loaded about once)."""
    if browser.clean_url == server + page:
        return
    browser.goto(server + page)
    # MathJax typesets asynchronously after load; widgets render after require.js resolves.
    browser.wait_for(
        "document.querySelectorAll('mjx-container').length > 0",
        what=f"MathJax output on {page}",
    )
    browser.clean_url = server + page


def _changed(browser: CDP) -> None:
    """This test changed the page (moved a slider, opened a dropdown): the next visit
    reloads it."""
    browser.clean_url = None


@pytest.fixture(scope="module", params=CHAPTERS, ids=lambda p: p.split("/")[-1][:2])
def chapter(request, browser, server) -> str:
    """A chapter page, loaded; module-scoped, so pytest runs every test of one chapter
    before the next chapter's (one page load each, where no test changes the page)."""
    _visit(browser, server, request.param)
    return request.param


def _record(browser: CDP, page: str) -> None:
    browser.pump(0.25)     # late requests (most came in with the calls before)
    _VISITS.setdefault(page, []).extend(browser.events)


# --------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------


def test_intro_maths_is_typeset(browser, server):
    _visit(browser, server, INTRO)
    n = browser.evaluate("document.querySelectorAll('mjx-container').length")
    assert n > 0
    # A display equation renders as a block container, and nothing failed to parse.
    assert browser.evaluate("document.querySelectorAll('mjx-container[display=\"true\"]').length") > 0
    assert browser.evaluate("document.querySelectorAll('mjx-merror').length") == 0
    browser.evaluate(
        "(document.querySelector('mjx-container[display=\"true\"]')"
        " || document.body).scrollIntoView({block: 'center'}); true"
    )
    browser.settle()
    browser.screenshot(SHOTS / "intro.png")
    _record(browser, INTRO)


def test_chapter1_maths_is_typeset(browser, server):
    _visit(browser, server, CHAPTER1)
    assert browser.evaluate("document.querySelectorAll('mjx-container').length") > 0
    assert browser.evaluate("document.querySelectorAll('mjx-merror').length") == 0
    _record(browser, CHAPTER1)


# The book's figure sliders carry the class attn-figure-slider (attn_core.plotting); pages
# built before that class existed fall back to the first slider on the page.
# The first kernel-free slider a reader sees (not one folded away in an exercise's solution).
_SLIDER = (
    "([...document.querySelectorAll('.attn-figure-slider')]"
    ".filter(b => !b.closest('details:not([open])'))"
    ".map(b => b.querySelector('.widget-slider')).find(s => s) || null)"
)

_VISIBLE_IMAGE_JS = """
(async () => {
  const slider = SLIDER;
  const box = slider && slider.closest('.widget-vbox');
  const img = box && Array.from(box.querySelectorAll('img')).find(i => i.offsetParent !== null);
  if (!img || !img.complete || !img.naturalWidth) return null;
  const buf = await (await fetch(img.src)).arrayBuffer();
  const digest = await crypto.subtle.digest('SHA-256', buf);
  const hex = Array.from(new Uint8Array(digest)).map(b => b.toString(16).padStart(2, '0')).join('');
  const readout = box.querySelector('.widget-readout');
  return {hash: hex, bytes: buf.byteLength, width: img.naturalWidth,
          readout: readout ? readout.textContent.trim() : null};
})()
""".replace("SLIDER", _SLIDER)


def test_chapter1_slider_changes_the_image(browser, server):
    _visit(browser, server, CHAPTER1)
    browser.wait_for(
        "document.querySelectorAll('.widget-slider .noUi-handle').length > 0",
        what="an ipywidgets slider on chapter 1 (is the widget state embedded?)",
    )
    before = browser.wait_for(_VISIBLE_IMAGE_JS, what="the slider's first frame")
    browser.evaluate(
        f"(() => {{ const s = {_SLIDER};"
        " s.closest('.widget-vbox').scrollIntoView({block: 'center'}); return true; })()"
    )
    browser.settle()
    browser.screenshot(SHOTS / "chapter1_before.png")

    # Focus the noUiSlider handle and press ArrowRight, as a keyboard user would.
    browser.evaluate(f"{_SLIDER}.querySelector('.noUi-handle').focus(); true")
    for kind in ("keyDown", "keyUp"):
        browser.call(
            "Input.dispatchKeyEvent",
            type=kind,
            key="ArrowRight",
            code="ArrowRight",
            windowsVirtualKeyCode=39,
            nativeVirtualKeyCode=39,
        )
    expr = _VISIBLE_IMAGE_JS.replace(
        "return {hash", f"if (hex === {json.dumps(before['hash'])}) return null; return {{hash"
    )
    try:
        after = browser.wait_for(expr, timeout=10, what="a different frame after ArrowRight")
    except TimeoutError:
        # Fall back to clicking the far end of the slider track.
        rect = browser.evaluate(
            f"(() => {{ const r = {_SLIDER}.querySelector('.noUi-target')"
            ".getBoundingClientRect(); return {x: r.right - 2, y: r.top + r.height / 2}; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            browser.call(
                "Input.dispatchMouseEvent", type=kind, x=rect["x"], y=rect["y"], button="left", clickCount=1
            )
        after = browser.wait_for(expr, timeout=10, what="a different frame after clicking the slider")

    assert after["hash"] != before["hash"]
    if before["readout"] is not None:
        assert after["readout"] != before["readout"], "the slider readout did not move"
    browser.settle()
    browser.screenshot(SHOTS / "chapter1_after.png")
    _record(browser, CHAPTER1)
    _changed(browser)


_SLIDER_OVERFLOW_JS = """
(() => {
  const boxes = Array.from(document.querySelectorAll('.attn-figure-slider'));
  if (!boxes.length) return null;
  const imgs = boxes.map(b => Array.from(b.querySelectorAll('img')).find(i => i.offsetParent !== null));
  if (imgs.some(i => !i || !i.complete || !i.naturalWidth)) return null;
  return boxes.map((b, n) => {
    const out = b.closest('.cell_output') || b.parentElement;
    // the widest overflow of anything that would draw a scrollbar: the output area, the
    // slider box, or a box inside it
    const scrolls = e => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX);
    const spill = Math.max(0, ...[out, b, ...b.querySelectorAll('div')].filter(scrolls)
                                   .map(e => e.scrollWidth - e.clientWidth));
    return {n, spill, room: out.clientWidth, img: imgs[n].offsetWidth, natural: imgs[n].naturalWidth};
  });
})()
"""


def test_wide_slider_figures_fit_the_column(browser, server):
    """On a phone (390 px) the book's figures (4.6 in, ~480 px) are wider than the text
    column: a slider's image must shrink to the column instead of overflowing it (which
    draws a horizontal scrollbar). Chapter 5's sliders."""
    _visit(browser, server, CHAPTER5)
    _width(browser, 390)
    try:
        sizes = browser.wait_for(_SLIDER_OVERFLOW_JS, what="chapter 5's figure sliders")
    finally:
        _width(browser, 1280)
    assert any(s["natural"] > s["room"] for s in sizes), (
        f"no slider figure is wider than the phone's column: {sizes}")
    overflow = [s for s in sizes if s["spill"] > 0 or s["img"] > s["room"]]
    assert not overflow, f"slider figures overflow their column: {overflow}"
    _record(browser, CHAPTER5)


# The claims cell's HTML table: its caption, failed cells, and its width against its box.
_CLAIMS_JS = r"""
(() => {
  const tables = [...document.querySelectorAll('table.attn-claims')];
  if (!tables.length) return null;
  const t = tables[tables.length - 1];
  t.scrollIntoView({block: 'start'});
  const box = t.closest('.cell_output, .output') || t.parentElement;
  return {caption: t.caption ? t.caption.textContent : '',
          failed: t.querySelectorAll('.attn-claim-failed').length,
          ok: t.querySelectorAll('.attn-claim-ok').length,
          findings: t.querySelectorAll('tr.attn-claim-finding').length,
          identities: t.querySelectorAll('tr.attn-claim-identity').length,
          width: t.getBoundingClientRect().width, room: box.clientWidth,
          spill: Math.max(0, box.scrollWidth - box.clientWidth)};
})()
"""


def test_claims_table_is_shown_whole(browser, chapter):
    """Every chapter ends on its claims table: shown as a table, every claim held, and no
    wider than the column (no horizontal scrollbar). Screenshot in _build/screenshots/."""
    page = chapter
    claims = browser.wait_for(_CLAIMS_JS, what=f"the claims table on {page}")
    n = claims["ok"]
    assert n > 0 and claims["failed"] == 0, claims
    assert claims["findings"] + claims["identities"] == n, claims
    assert claims["findings"] > 0, f"a claims table with no finding: {claims}"
    assert re.search(r": \d+ findings? and \d+ identit(y|ies) holds?$|: \d+ findings? holds?$",
                     claims["caption"].strip()), claims
    assert claims["spill"] == 0 and claims["width"] <= claims["room"] + 1, (
        f"the claims table is {claims['width']:.0f} px wide in a {claims['room']} px column")
    browser.settle()
    browser.screenshot(SHOTS / f"claims_{page.split('/')[-1][:2]}.png")
    _record(browser, page)


_EXERCISES_JS = """
(() => {
  const sols = [...document.querySelectorAll('div.cell.tag_hide-cell')];
  const folded = sols.filter(c => {
    const d = c.querySelector('details');
    return d && !d.open && d.querySelector('summary');
  });
  const checked = sols.filter(c => {
    const out = c.querySelector('.cell_output');
    return out && out.textContent.includes('\u2713');
  });
  const answers = [...document.querySelectorAll('details.attn-answer')];
  const hints = [...document.querySelectorAll('details.attn-hint')];
  // closed, and no taller than its summary line: the folded text takes no room
  const shut = ds => ds.filter(d => {
    const s = d.querySelector('summary');
    if (d.open || !s) return false;
    const hs = s.getBoundingClientRect().height;
    return hs > 0 && d.getBoundingClientRect().height < hs + 8;
  }).length;
  return {n: sols.length, folded: folded.length, checked: checked.length,
          answers: answers.length, answers_folded: shut(answers),
          hints: hints.length, hints_folded: shut(hints)};
})()
"""


def test_exercise_solutions_are_folded_and_checked(browser, chapter):
    """Every exercise's solution is folded away (a closed dropdown) with its checker's ✓ inside,
    and every Predict answer and exercise hint is a closed dropdown. Screenshots of the first solution closed and open in _build/screenshots/."""
    page = chapter
    ex = browser.evaluate(_EXERCISES_JS)
    assert ex["n"] >= 3, f"{page}: {ex['n']} folded solution cells; at least 3 wanted"
    assert ex["folded"] == ex["n"], f"{page}: solutions not folded: {ex}"
    assert ex["checked"] == ex["n"], f"{page}: solutions without a ✓ below them: {ex}"
    # every Predict answer and every hint: a closed dropdown whose text takes no room
    assert ex["answers"] >= 3 and ex["answers_folded"] == ex["answers"], \
        f"{page}: Predict answers not folded: {ex}"
    assert ex["hints"] >= ex["n"] and ex["hints_folded"] == ex["hints"], \
        f"{page}: exercise hints not folded: {ex}"
    name = page.split("/")[-1][:2]
    browser.evaluate("document.querySelector('div.cell.tag_hide-cell')"
                     ".scrollIntoView({block: 'center'}) || true")
    browser.settle()
    browser.screenshot(SHOTS / f"exercise_{name}_closed.png")
    opened = browser.evaluate("(() => { const d = document.querySelector("
                              "'div.cell.tag_hide-cell details'); d.open = true;"
                              " return d.open; })()")
    assert opened
    browser.settle()
    browser.screenshot(SHOTS / f"exercise_{name}_open.png")
    _record(browser, page)
    _changed(browser)


_CODE_OVERFLOW_JS = r"""
(() => {
  document.querySelectorAll('div.cell details').forEach(d => { d.open = true; });
  const pres = [...document.querySelectorAll(
    'div.cell div.cell_input pre, div.cell div.cell_output div.highlight-python pre')];
  const longest = p => Math.max(...p.innerText.split('\n').map(l => l.length));
  const over = pres.filter(p => p.scrollWidth > p.clientWidth + 1).map(longest);
  return {n: pres.length, over: over, longest: Math.max(...pres.map(longest))};
})()
"""


def test_code_lines_fit_the_column(browser, chapter):
    """Every code cell, folded solutions opened, and the model source chapters 4 and 5 show,
    fits the text column: their lines (at most 88 characters, tests/test_notebooks_stripped.py)
    need no horizontal scrollbar."""
    res = browser.evaluate(_CODE_OVERFLOW_JS)
    _changed(browser)
    assert res["n"] >= 10 and res["longest"] >= 80, res
    assert not res["over"], (f"{chapter}: {len(res['over'])} of {res['n']} code cells need a "
                             f"horizontal scrollbar; their longest lines: {res['over']}")


_BOOK_CODE_JS = r"""
(() => {
  const pres = [...document.querySelectorAll('article div.highlight pre')]
                 .filter(p => p.offsetParent !== null && p.clientWidth > 0 && p.innerText.trim());
  const over = pres.filter(p => p.scrollWidth > p.clientWidth + 1)
                   .map(p => p.innerText.split('\n').reduce((a, l) => l.length > a.length ? l : a, ''));
  return {n: pres.length, over};
})()
"""


@pytest.mark.parametrize("page", ["book/reading_numbers.html", "book/intro.html",
                                  "book/setup.html"], ids=lambda p: p.split("/")[-1][:-5])
def test_book_page_code_fits_the_column(browser, server, page):
    """#55: the code blocks of the book's own pages fit the text column at 1280 px (Reading
    the numbers' first block once needed a scrollbar)."""
    _visit(browser, server, page)
    res = browser.evaluate(_BOOK_CODE_JS)
    _record(browser, page)
    assert res["n"] >= 1, f"{page}: no code block found"
    assert not res["over"], f"{page}: code blocks wider than the column; their longest " \
        f"lines: {res['over']}"


sys.path.insert(0, str(ROOT / "scripts"))
import page_metrics  # noqa: E402  (the JavaScript measures, shared with scripts/page_check.py)


def _measure(browser: CDP, js: str):
    return browser.evaluate(f"({js})()")


def _typeset(browser: CDP) -> None:
    """Wait until MathJax has typeset the whole page (not only its first equation)."""
    browser.evaluate("(window.MathJax && MathJax.startup && MathJax.startup.promise) ? "
                     "MathJax.startup.promise.then(() => true) : true", timeout=60)
    browser.settle()


def _width(browser: CDP, width: int) -> None:
    browser.call("Emulation.setDeviceMetricsOverride", width=width, height=900,
                 deviceScaleFactor=1, mobile=width < 600)
    # the resize event's handlers, the layout and the CSS media queries follow
    browser.wait_for(f"window.innerWidth === {width}", timeout=10, what=f"a {width} px window")
    browser.settle()


# One 390 px pass a page (folds open), shared by the phone tests below: each resize makes the
# page lay itself out again, and one pass instead of three saved ~20 s of the test command.
_PHONE: dict[str, dict] = {}


def _screenshot_widest_equation(browser: CDP, path: Path) -> None:
    browser.evaluate("(() => { const es = [...document.querySelectorAll("
                     "'mjx-container[display=\"true\"] mjx-math')];"
                     " if (!es.length) return true;"
                     " const w = es.reduce((a, e) => e.getBoundingClientRect().width >"
                     " a.getBoundingClientRect().width ? e : a, es[0]);"
                     " w.scrollIntoView({block: 'center'}); return true; })()")
    browser.settle()
    browser.screenshot(path)


def _on_a_phone(browser: CDP, page: str) -> dict:
    """The loaded ``page`` measured at 390 px with every fold open: the display equations'
    sizes beside the text's, those wider than the column, its markdown tables
    (:data:`_BOOK_TABLES_JS`) and (chapters) every claims-table cell; screenshots
    ``phone_<name>.png`` (the top), ``phone_eq_<name>.png`` (the widest equation),
    ``phone_tables_<name>.png`` (the widest table, if any) and, for a chapter,
    ``phone_claims_<name>.png``. Measured once a page."""
    if page in _PHONE:
        return _PHONE[page]
    name = page.split("/")[-1][:-len(".html")]
    name = name[:2] if name[:2].isdigit() else name
    _typeset(browser)
    _measure(browser, page_metrics.OPEN_FOLDS)
    _width(browser, PHONE)
    try:
        out = {"sizes": _measure(browser, page_metrics.DISPLAY_EQUATION_SIZES),
               "over": _measure(browser, page_metrics.OVERFLOWING_EQUATIONS),
               "claims": None}
        browser.evaluate("window.scrollTo(0, 0) || true")
        browser.settle()
        browser.screenshot(SHOTS / f"phone_{name}.png")
        _screenshot_widest_equation(browser, SHOTS / f"phone_eq_{name}.png")
        out["tables"] = browser.evaluate(_BOOK_TABLES_JS)
        if out["tables"]["tables"]:
            browser.evaluate("(() => { const t = [...document.querySelectorAll('table.table')]"
                             ".sort((a, b) => b.scrollWidth - a.scrollWidth)[0];"
                             " t.scrollIntoView({block: 'start'}); return true; })()")
            browser.settle()
            browser.screenshot(SHOTS / f"phone_tables_{name}.png")
        if page in CHAPTERS:
            out["claims"] = _measure(browser, page_metrics.CLAIMS_CELLS)
            browser.evaluate("(() => { const ts = document.querySelectorAll("
                             "'table.attn-claims'); if (!ts.length) return true;"
                             " ts[ts.length - 1].scrollIntoView({block: 'start'});"
                             " window.scrollBy(0, -70); return true; })()")
            browser.settle()
            browser.screenshot(SHOTS / f"phone_claims_{name}.png")
    finally:
        _width(browser, 1280)
        _measure(browser, page_metrics.CLOSE_FOLDS)
    _PHONE[page] = out
    return out


def test_nothing_is_wider_than_the_column(browser, chapter):
    """#31: no display equation wider than the text column (a 1280 px window and a 390 px
    phone, folds open: MathJax's equations are cut off at the column's edge with no cue),
    and no printed output block wider than the column at 1280 px (config reprs, machine
    paths, long lines). Screenshots: ``_build/screenshots/phone_<chapter>.png``."""
    _typeset(browser)
    eq_desktop = _measure(browser, page_metrics.OVERFLOWING_EQUATIONS)
    outputs = _measure(browser, page_metrics.OVERFLOWING_OUTPUTS)
    eq_phone = _on_a_phone(browser, chapter)["over"]
    problems = ([f"equation {e['over']} px too wide at 1280 px: {e['tex']!r}"
                 for e in eq_desktop]
                + [f"equation {e['over']} px too wide at 390 px: {e['tex']!r}"
                   for e in eq_phone]
                + [f"output {o['over']} px too wide at 1280 px: {o['text']!r}"
                   for o in outputs])
    assert not problems, f"{chapter}: {len(problems)} block(s) wider than the column:\n" + \
        "\n".join(problems)


def _phone_equations(browser: CDP, page: str) -> None:
    """#55: on a phone every display equation of the loaded ``page``, folded ones included,
    keeps the text's size (a long one is written on several lines in its source, not shrunk)
    and fits the column. Screenshot of the widest: ``_build/screenshots/phone_eq_<page>.png``
    (``phone_eq_01.png`` for chapter 1)."""
    measured = _on_a_phone(browser, page)
    sizes, over = measured["sizes"], measured["over"]
    eqs, text, inline = sizes["equations"], sizes["text"], sizes["inline"]
    assert eqs, f"{page}: no display equation measured"
    assert text > 0 and (inline is None or inline > 0), sizes
    small = [e for e in eqs if e["size"] < 0.99 * text
             or (inline is not None and e["size"] < 0.99 * inline)]
    problems = ([f"equation at {e['size']:.1f} px beside {text:.1f} px text"
                 + (f" ({inline:.1f} px inline maths)" if inline else "") + f": {e['tex']!r}"
                 for e in small]
                + [f"equation {e['over']} px too wide: {e['tex']!r}" for e in over])
    assert not problems, (f"{page} at {PHONE} px: {len(problems)} of {len(eqs)} display "
                          "equations shrunk or wider than the column:\n" + "\n".join(problems))


def test_equations_keep_the_text_size_on_a_phone(browser, chapter):
    """#55: every chapter's display equations at 390 px: the text's size, inside the column."""
    _phone_equations(browser, chapter)


@pytest.mark.parametrize("page", MATH_PAGES, ids=lambda p: p.split("/")[-1][:-5])
def test_book_page_equations_keep_the_text_size_on_a_phone(browser, server, page):
    """#55: the same on the book's pages that have display equations."""
    _visit(browser, server, page)
    _phone_equations(browser, page)
    _record(browser, page)


def test_claims_table_fits_a_phone(browser, chapter):
    """#55: at 390 px every cell of every claims table is on screen (no sideways scrolling:
    the "untrained" and "paper" columns once sat past the phone's edge), not clipped, and
    named (its column's header above it, or its own label: the book's phone layout stacks
    each claim's cells, book/_static/book.css). Screenshot: ``phone_claims_<chapter>.png``."""
    cells = _on_a_phone(browser, chapter)["claims"]
    assert cells["tables"] >= 1 and cells["cells"] >= 10, f"{chapter}: {cells}"
    hidden = [f"{c['label']} {c['text']!r}: {c['why']}" for c in cells["hidden"]]
    unnamed = [f"{c['label']} {c['text']!r}" for c in cells["unnamed"]]
    assert not hidden, (f"{chapter} at {PHONE} px: {len(hidden)} of {cells['cells']} "
                        "claims-table cells not on screen whole:\n" + "\n".join(hidden[:20]))
    assert not unnamed, (f"{chapter} at {PHONE} px: cells shown without their column's "
                         "name:\n" + "\n".join(unnamed[:20]))


_BOOK_TABLES_JS = r"""
(() => {
  const col = document.querySelector('article.bd-article') || document.querySelector('main')
              || document.body;
  const right = col.getBoundingClientRect().right + 1;
  const tables = [...document.querySelectorAll('table.table')];
  const wide = [], unnamed = [];
  tables.forEach((t, n) => {
    const r = t.getBoundingClientRect();
    if (r.right > right || t.scrollWidth > t.clientWidth + 1)
      wide.push({n, width: Math.round(r.width), room: Math.round(col.clientWidth)});
    t.querySelectorAll('td').forEach(td => {
      const text = td.textContent.trim().slice(0, 40);
      if (text && !(td.getAttribute('data-label') || '').trim()) unnamed.push({n, text});
      if (td.getBoundingClientRect().right > right) wide.push({n, cell: text});
    });
  });
  return {tables: tables.length, cells: document.querySelectorAll('table.table td').length,
          wide, unnamed};
})()
"""


@pytest.mark.parametrize("page", TABLE_PAGES, ids=lambda p: p.split("/")[-1][:-5])
def test_book_tables_fit_a_phone(browser, server, page):
    """#55: at 390 px the book's markdown tables (the notation page's, the setup page's
    timings) fit the column: each row a card, every cell inside the column and named by its
    column (book/_static/tables.js, book.css). Measured in the page's one phone pass
    (:func:`_on_a_phone`); screenshot ``phone_tables_<page>.png``."""
    fresh = page not in _PHONE          # a chapter's phone pass may have measured it already
    if fresh:
        _visit(browser, server, page)
    res = _on_a_phone(browser, page)["tables"]
    if fresh:
        _record(browser, page)
    assert res["tables"] >= 1 and res["cells"] >= 6, f"{page}: {res}"
    assert not res["wide"], f"{page} at {PHONE} px: tables wider than the column: {res['wide']}"
    assert not res["unnamed"], f"{page} at {PHONE} px: cells without their column's name: " \
        f"{res['unnamed'][:10]}"


def test_no_control_is_dead(browser, chapter):
    """#31: in the static book every slider, dropdown or button a reader sees answers
    (a kernel-free figure slider); a live ``interact`` cell's widgets are not shown there
    (its output is removed: it needs a kernel)."""
    dead = _measure(browser, page_metrics.DEAD_CONTROLS)
    n_sliders = browser.evaluate("document.querySelectorAll('.attn-figure-slider').length")
    assert n_sliders >= 1, f"{chapter}: no kernel-free figure slider on the page"
    assert not dead, f"{chapter}: controls with no kernel behind them: {dead}"


def test_no_request_leaves_the_machine(browser, server):
    for page in (INTRO, CHAPTER1):
        if page not in _VISITS:  # this test run on its own
            _visit(browser, server, page)
            _record(browser, page)
    requests = [
        (page, e["params"]["request"]["url"])
        for page, events in _VISITS.items()
        for e in events
        if e["method"] == "Network.requestWillBeSent"
    ]
    assert requests, "no network events were recorded"
    external = [(p, u) for p, u in requests if not (u.startswith(server) or u.startswith(ALLOWED_SCHEMES))]
    assert not external, "pages fetched resources from outside the local book:\n" + "\n".join(
        f"  {p}: {u}" for p, u in external
    )
    failed = [
        (page, e["params"])
        for page, events in _VISITS.items()
        for e in events
        if e["method"] == "Network.loadingFailed" and not e["params"].get("canceled")
    ]
    responses = {
        e["params"]["response"]["url"]: e["params"]["response"]["status"]
        for events in _VISITS.values()
        for e in events
        if e["method"] == "Network.responseReceived"
    }
    # favicon.ico is the browser's own guess, not something a page asked for.
    missing = sorted(
        u for u, status in responses.items() if status >= 400 and not u.endswith("/favicon.ico")
    )
    assert not missing, "local resources missing from the built book:\n" + "\n".join(missing)
    assert not failed, f"requests failed: {failed}"
    js_errors = [
        e["params"]["exceptionDetails"]
        for events in _VISITS.values()
        for e in events
        if e["method"] == "Runtime.exceptionThrown"
        and not any(k in json.dumps(e["params"]) for k in KNOWN_HARMLESS_JS_ERRORS)
    ]
    assert not js_errors, f"uncaught JavaScript errors: {json.dumps(js_errors)[:3000]}"
