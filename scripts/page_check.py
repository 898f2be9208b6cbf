"""Check one executed chapter the way the book's tests do, in seconds, without building the
whole book: render it as a single page and measure it in headless Chromium (Playwright on
the system's Chromium).

    python scripts/page_check.py /tmp/out/04_permutation_copy.ipynb   # an executed notebook

It reports (and exits 1 on any):
- display equations wider than the column, at a 1280 px desktop window and a 390 px phone;
- printed output blocks wider than the column at 1280 px;
- figures whose smallest text is under 9 pt once fitted to the column (desktop, phone),
  from the ``attn_text_pt`` the book's style records with every figure and slider;
- controls that look live but are not (ipywidgets outside a kernel-free figure slider);
- object reprs (``<... at 0x...>``, ``Text(...)``), machine paths, the package's
  bookkeeping lines (``[cache]``, ``[stored]``) and dates in the outputs.

Screenshots of the page go to ``/tmp/page_check/<name>-<width>.png``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import page_metrics  # noqa: E402

MIN_PT = 9.0
CHROMIUM = "/usr/bin/chromium"
SHOTS = Path("/tmp/page_check")
REPR = re.compile(r"<[\w.]+(?: object)? at 0x[0-9a-f]+>|^Text\(|^\[<matplotlib|"
                  r"^<matplotlib\.|^\(?<Figure size", re.M)
PATHS = re.compile(r"(/tmp/|/root/|/home/|/work/|/Users/|[A-Z]:\\\\)")
#: The package's bookkeeping ([cache], [stored] lines) and dates: not for the reader's page
#: (#55; attn_core.report() lists the bookkeeping, the setup page explains it).
BOOKKEEPING = re.compile(r"^\[(cache|stored)\]|\b20\d\d-[01]\d-[0-3]\d\b", re.M)


def notebook_problems(nb: dict) -> list[str]:
    """What the executed notebook's outputs show that the book must not (no browser)."""
    out = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        tags = cell.get("metadata", {}).get("tags", [])
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            text = o.get("text", "") if o.get("output_type") == "stream" else \
                data.get("text/plain", "")
            text = "".join(text) if isinstance(text, list) else text
            if "remove-output" not in tags and "remove-cell" not in tags:
                if REPR.search(text) and o.get("output_type") == "execute_result" \
                        or re.search(r" at 0x[0-9a-f]{6,}>", text):
                    out.append(f"cell {i}: an object repr in the output: {text[:70]!r}")
                b = BOOKKEEPING.search(text)
                if b:
                    out.append(f"cell {i}: bookkeeping or a date on the page: "
                               f"{text[max(0, b.start() - 10):b.start() + 60]!r}")
                m = PATHS.search(text) or PATHS.search(json.dumps(data.get("text/html", "")))
                if m:
                    out.append(f"cell {i}: a machine path in the output: "
                               f"...{text[max(0, m.start() - 20):m.start() + 50]!r}")
            if "image/png" in data:
                meta = o.get("metadata", {}).get("image/png", {})
                pt = meta.get("attn_text_pt")
                if pt is None:
                    out.append(f"cell {i}: a figure shown without the book's style "
                               f"(no attn_text_pt: call plotting.set_style() first)")
                    continue
                for where, v in pt.items():
                    if v < MIN_PT:
                        out.append(f"cell {i}: figure text {v} pt on a {where} "
                                   f"(< {MIN_PT}; smallest: "
                                   f"{meta.get('attn_smallest_text', '')!r})")
    state = nb.get("metadata", {}).get("widgets", {}).get(
        "application/vnd.jupyter.widget-state+json", {}).get("state", {})
    for wid, w in state.items():
        classes = w.get("state", {}).get("_dom_classes", [])
        if "attn-figure-slider" in classes:
            for c in classes:
                m = re.fullmatch(r"attn-text-pt-(\w+)-([\d.]+)", c)
                if m and float(m.group(2)) < MIN_PT:
                    out.append(f"a figure slider's text is {m.group(2)} pt on a "
                               f"{m.group(1)} (< {MIN_PT})")
    return out


def build_page(nb_path: Path, where: Path) -> Path:
    """Render one executed notebook as a single page (no execution), with the book's
    assets (offline MathJax and widgets), into ``where``; return the HTML file."""
    import yaml

    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    cfg["execute"] = {"execute_notebooks": "off"}
    for key in ("only_build_toc_files", "exclude_patterns"):
        cfg.pop(key, None)
    cfg.pop("bibtex_bibfiles", None)
    sph = cfg.setdefault("sphinx", {})
    # the book's own extensions but for the footer's: Predict boxes shown as in the book
    # (links to the book's other pages stay links to the published book, said quietly)
    sph["local_extensions"] = {"portable_markdown": str(ROOT / "book" / "_ext")}
    conf = sph.setdefault("config", {})
    conf["html_static_path"] = [str(ROOT / p) for p in conf.get("html_static_path", [])]
    conf["suppress_warnings"] = ["myst.xref_missing", "ref.term", "ref.ref", "bibtex",
                                 "portable_markdown"]
    exts = cfg.get("parse", {}).get("myst_enable_extensions", [])
    cfg["parse"] = {"myst_enable_extensions": exts}
    src = where / "src"
    src.mkdir(parents=True, exist_ok=True)
    page = src / nb_path.name
    shutil.copy(nb_path, page)
    (where / "_config.yml").write_text(yaml.safe_dump(cfg, sort_keys=False))  # order matters
    # {cite} and {term} roles (the book's own pages still use them) need the book's other
    # pages: plain text is enough here
    nb = json.loads(page.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            text = "".join(cell["source"])
            text = re.sub(r"\{(cite|term|ref|doc)\}`([^`<]*?)(?:\s*<[^`]*>)?`", r"\2", text)
            cell["source"] = text
    page.write_text(json.dumps(nb))
    subprocess.run(["jupyter-book", "build", str(page), "--config", str(where / "_config.yml"),
                    "--path-output", str(where / "out")], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    html = where / "out" / "_build" / "_page" / page.stem / "html" / f"{page.stem}.html"
    if not html.exists():
        raise SystemExit(f"page_check: jupyter-book did not write {html}")
    return html


def browser_problems(html: Path) -> list[str]:
    from playwright.sync_api import sync_playwright

    import functools
    import http.server
    import threading

    SHOTS.mkdir(exist_ok=True)
    out = []
    handler = functools.partial(_Quiet, directory=str(html.parent))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/{html.name}"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        for width in (1280, 390):
            page = b.new_page(viewport={"width": width, "height": 900})
            page.goto(url)
            page.wait_for_function("() => document.querySelectorAll('mjx-container')"
                                   ".length > 0", timeout=60000)
            page.wait_for_timeout(2500)          # the rest typesets, widgets render
            for e in page.evaluate(page_metrics.OVERFLOWING_EQUATIONS):
                out.append(f"{width} px: equation {e['over']} px too wide: {e['tex']!r}")
            if width == 1280:
                for o in page.evaluate(page_metrics.OVERFLOWING_OUTPUTS):
                    out.append(f"{width} px: output {o['over']} px too wide: {o['text']!r}")
                for d in page.evaluate(page_metrics.DEAD_CONTROLS):
                    out.append(f"a control with no kernel behind it ({d['control']}) in "
                               f"the cell {d['cell']!r}")
            page.screenshot(path=str(SHOTS / f"{html.stem}-{width}.png"), full_page=True)
            page.close()
        b.close()
    server.shutdown()
    return out


class _Quiet(__import__("http.server").server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not argv[0].endswith(".ipynb"):
        print(__doc__)
        return 2
    nb_path = Path(argv[0]).resolve()
    nb = json.loads(nb_path.read_text())
    problems = notebook_problems(nb)
    with tempfile.TemporaryDirectory() as tmp:
        problems += browser_problems(build_page(nb_path, Path(tmp)))
    for p in problems:
        print("-", p)
    print(f"page_check {nb_path.name}: {len(problems)} problem(s); screenshots in {SHOTS}/")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
