"""What the built book shows, read from the build itself (no browser): every figure's text
is readable at the column width, on a desktop and on a phone; no machine path and no Python
object repr reaches a page. Runs after the book build (stage 3 of scripts/run_tests.sh);
skipped when the book has not been built.

Every internal link of every page is followed (a missing file is a 404 on the web, a missing
anchor a link that goes nowhere), and every chapter's Predict blockquotes are the book's
"Predict" boxes.

The figures' text sizes come from the executed notebooks in the build's execution cache:
``plotting.set_style()`` records, with every figure a chapter displays, the size of its
smallest text once the figure is fitted to the column (``attn_text_pt``), and each
kernel-free slider carries the smallest over its frames (``attn-text-pt-*`` classes).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from conftest import wait_for_render  # tests/ is on the path (pytest's rootdir conftest)

pytestmark = pytest.mark.book

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "_build"
HTML = BUILD / "html"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("0*.ipynb"))

sys.path.insert(0, str(ROOT / "scripts"))
import page_check  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _rendered():
    wait_for_render()     # the test command renders the HTML beside this run


@pytest.fixture(scope="module")
def executed() -> dict:
    """{chapter file name: the executed notebook (the cache's outputs merged in)}."""
    if not (BUILD / ".jupyter_cache").is_dir() or not HTML.is_dir():
        pytest.skip("the book is not built (bash scripts/build_book.sh)")
    import nbformat
    from jupyter_cache import get_cache

    cache = get_cache(str(BUILD / ".jupyter_cache"))
    out = {}
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        try:
            _, merged = cache.merge_match_into_notebook(nb)
        except KeyError:
            pytest.fail(f"{path.name} has no execution in the build's cache matching its "
                        f"code: build the book again (bash scripts/build_book.sh)")
        out[path.name] = merged
    return out


def test_every_chapter_was_executed(executed):
    assert sorted(executed) == [p.name for p in NOTEBOOKS]
    for name, nb in executed.items():
        n = sum(len(c.get("outputs", [])) for c in nb.cells if c.cell_type == "code")
        assert n >= 20, f"{name}: only {n} outputs in its execution"


@pytest.mark.parametrize("name", [p.name for p in NOTEBOOKS])
def test_figures_are_readable_and_outputs_clean(executed, name):
    """Every figure's smallest text is >= 9 pt once fitted to the column (688 px on a
    desktop, 358 px on a phone), every figure went through the book's style, and no output
    shows an object repr or a path of the machine that built it."""
    nb = executed[name]
    n_figures = sum("image/png" in o.get("data", {}) for c in nb.cells
                    if c.cell_type == "code" for o in c.get("outputs", []))
    assert n_figures >= 3, f"{name}: only {n_figures} figures"
    problems = page_check.notebook_problems(nb)
    assert not problems, f"{name}:\n" + "\n".join(problems)


def test_no_machine_path_in_the_html():
    """No page, script or source copy of the built site names a folder of the machine that
    built it (the results cache, the checkout, a home or temporary folder)."""
    if not HTML.is_dir():
        pytest.skip("the book is not built (bash scripts/build_book.sh)")
    needles = {str(ROOT), str(Path.home()) + "/", tempfile.gettempdir() + "/attn",
               "/home/", "/root/", "/Users/"}
    if os.environ.get("ATTN_CACHE", "off") not in ("off", ""):
        needles.add(os.environ["ATTN_CACHE"])
    found = []
    for path in HTML.rglob("*"):
        if not path.is_file() or path.suffix not in (".html", ".js", ".txt", ".ipynb",
                                                     ".json", ".md"):
            continue
        if "_static" in path.parts and path.suffix == ".js":
            continue                                   # third-party bundles
        text = path.read_text(encoding="utf-8", errors="replace")
        for needle in needles:
            i = text.find(needle)
            if i >= 0:
                found.append(f"{path.relative_to(HTML)}: ...{text[max(0, i - 40):i + 60]!r}")
    assert not found, "machine paths in the built book:\n" + "\n".join(found[:20])


def test_the_checks_catch_what_they_look_for():
    """page_check's notebook rules fail a small figure, a missing record, a repr and a
    path (so a green run above means something)."""
    import nbformat

    def nb_with(outputs):
        nb = nbformat.v4.new_notebook()
        cell = nbformat.v4.new_code_cell("x")
        cell.outputs = outputs
        nb.cells = [cell]
        return nb

    small = nbformat.v4.new_output("display_data", data={"image/png": "AA=="},
                                   metadata={"image/png": {"attn_text_pt": {
                                       "desktop": 12.0, "phone": 6.5}}})
    bare = nbformat.v4.new_output("display_data", data={"image/png": "AA=="})
    legend = nbformat.v4.new_output("execute_result", data={
        "text/plain": "<matplotlib.legend.Legend at 0x7f00deadbeef>"}, execution_count=1)
    path = nbformat.v4.new_output("stream", name="stdout",
                                  text="x: saved to /tmp/attn_cache.x/y.npz\n")
    kept = nbformat.v4.new_output("stream", name="stdout",
                                  text="[stored] x: member 0 of 3 retrained, match bitwise\n")
    dated = nbformat.v4.new_output("stream", name="stdout",
                                   text="x: reused the result computed on 2026-11-24\n")
    ok = nbformat.v4.new_output("display_data", data={"image/png": "AA=="},
                                metadata={"image/png": {"attn_text_pt": {
                                    "desktop": 12.5, "phone": 9.5}}})
    assert page_check.notebook_problems(nb_with([ok])) == []
    for bad, word in ((small, "6.5 pt on a phone"), (bare, "without the book's style"),
                      (legend, "object repr"), (path, "machine path"),
                      (kept, "bookkeeping"), (dated, "a date")):
        problems = page_check.notebook_problems(nb_with([bad]))
        assert len(problems) == 1 and word in problems[0], (word, problems)


def test_the_build_log_is_quiet_and_reports_each_chapters_claims():
    """The test command keeps the strict build's output in _build/build.log: stages, each
    chapter's seconds and claims summary, the times -- no per-page progress, no kernel or
    pip notices (issue #32)."""
    log = BUILD / "build.log"
    if not log.exists():
        pytest.skip("no _build/build.log: the test command (scripts/run_tests.sh) writes it")
    text = log.read_text()
    noise = ["Kernel is running over TCP", "reading sources...", "writing output...",
             "copying images...", "is ignored: it is neither a file nor a directory",
             "Finished generating HTML for book"]
    assert not [n for n in noise if n in text], [n for n in noise if n in text]
    for nb in NOTEBOOKS:
        assert re.search(rf"\[execute\] {nb.stem}: \d+ s; all \d+ claims of .+ hold", text), \
            f"no claims summary for {nb.stem} in the build log"
    assert re.search(r"\[build\] stage times: execute notebooks \d+ s", text)


# ------------------------------------------------------------------- links and Predict boxes


class _Page(HTMLParser):
    """A page's ids (link targets) and the href/src of every element."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("name"):
            self.ids.add(attrs["name"])
        self.links += [attrs[k] for k in ("href", "src") if attrs.get(k) is not None]


def broken_links(html: Path) -> tuple[int, list[str]]:
    """(internal links followed, broken ones) over every page of a built book: a link to a
    file that is not there (a 404 on the web) or to an anchor its page does not have."""
    html = html.resolve()
    parsed: dict[Path, _Page] = {}

    def page(path: Path) -> _Page:
        if path not in parsed:
            parsed[path] = _Page()
            parsed[path].feed(path.read_text(encoding="utf-8", errors="replace"))
        return parsed[path]

    pages = [p for p in sorted(html.rglob("*.html"))
             if "_static" not in p.relative_to(html).parts]
    followed, bad = 0, []
    for path in pages:
        for href in page(path).links:
            url = urlsplit(href)
            if url.scheme or href.startswith("//"):
                continue                          # another site: not this build's to check
            followed += 1
            target = (path.parent / unquote(url.path)).resolve() if url.path else path
            if target.is_dir():
                target = target / "index.html"
            where = f"{path.relative_to(html)}: {href}"
            if not target.is_file():
                bad.append(f"{where} (no such file: a 404 on the web)")
            elif (url.fragment and target.suffix == ".html"
                  and unquote(url.fragment) not in page(target).ids):
                bad.append(f"{where} (its page has no anchor {url.fragment!r})")
    return followed, bad


def test_the_link_crawl_finds_broken_links(tmp_path):
    """The crawl fails a missing page, a missing anchor and a footer link written for
    another folder (the "How to cite" link of the search page 404'd until #51)."""
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "intro.html").write_text(
        '<h2 id="how-to-cite">Cite</h2><a href="#how-to-cite">here</a>'
        '<a href="../search.html">search</a><a href="https://example.org/x">out</a>')
    (tmp_path / "search.html").write_text(
        '<a href="../book/intro.html#how-to-cite">cite</a><a href="book/intro.html#nope">x'
        '</a><a href="book/gone.html">y</a><img src="_static/a.png">'
        '<a href="book/intro.html#how-to-cite">ok</a>')
    followed, bad = broken_links(tmp_path)
    assert followed == 7
    assert [b.split(" (")[0] for b in bad] == [
        "search.html: ../book/intro.html#how-to-cite", "search.html: book/intro.html#nope",
        "search.html: book/gone.html", "search.html: _static/a.png"], bad


def test_no_internal_link_is_broken():
    """Every page's links inside the book resolve: the file exists and so does the anchor
    (the search and index pages, whose footer is written from another folder, included)."""
    if not HTML.is_dir():
        pytest.skip("the book is not built (bash scripts/build_book.sh)")
    followed, bad = broken_links(HTML)
    assert followed > 1000, f"only {followed} internal links found: is the build whole?"
    assert not bad, f"{len(bad)} broken internal links:\n" + "\n".join(bad[:30])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_predict_boxes_are_the_books_boxes(path):
    """Each Predict blockquote of the notebook is a "Predict" tip box in the book
    (book/_ext/portable_markdown.py), and none is left a plain quotation."""
    page = HTML / "notebooks" / f"{path.stem}.html"
    if not page.exists():
        pytest.skip("the book is not built (bash scripts/build_book.sh)")
    import json

    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    quotes = sum(len(re.findall(r"^> \*\*Predict\.\*\*", "".join(c["source"]), flags=re.M))
                 for c in cells if c["cell_type"] == "markdown")
    html = page.read_text(encoding="utf-8")
    boxes = re.findall(r'<div class="tip admonition">\s*<p class="admonition-title">Predict</p>',
                       html)
    assert quotes >= 3 and len(boxes) == quotes, (path.name, quotes, len(boxes))
    assert "<strong>Predict.</strong>" not in html, f"{path.name}: a Predict box left a quote"
