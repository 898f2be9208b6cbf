"""Every notebook's markdown reads right where readers open it: the book, JupyterLab, Colab.

Jupyter and Colab render markdown cells with a CommonMark/GFM renderer that knows nothing
of MyST: a ``:::{admonition}`` box, a ``{term}`` role or a ``(label)=`` target shows there as
raw text. So the notebooks use only portable markdown (CONTRIBUTING.md, "Writing a
notebook's markdown"), and ``book/_ext/portable_markdown.py`` upgrades two of its forms in the
book. These tests

- render every markdown cell as Jupyter does (nbconvert's HTML renderer, mistune, the
  renderer of ``jupyter nbconvert --to html``) and fail on any MyST syntax left in what a
  reader sees (not in code blocks, where it may be the subject);
- check the portable forms: links absolute (Colab cannot follow a relative one), glossary
  links to a term the glossary defines, citations to a key of ``book/references.bib``, links
  into the book to a page it builds, links to the repository's files to a file that exists,
  and every repository file named as evidence linked;
- build a small book with the extension and check what it makes of them: the Predict box
  the book showed before, the book's own cross-references, and a warning (an error in the
  strict build) for a link to a term, a label or a page the book does not have.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
import sys
import textwrap
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("0*.ipynb"))
PAGES = sorted((ROOT / "book").glob("*.md"))

_spec = importlib.util.spec_from_file_location("sync_repository_url",
                                               ROOT / "scripts" / "sync_repository_url.py")
sync_url = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sync_url)
REPO_URL, BRANCH = sync_url.read_repository(ROOT)
BOOK_URL = sync_url.book_url(REPO_URL)

#: MyST syntax that Jupyter shows as raw text, as it appears in the rendered text (inline
#: code written back as `...`): what each pattern catches
MYST_LEFTOVERS = {
    "a colon fence (:::{directive} or its closing :::)": re.compile(r":::"),
    "a role ({term}`...`, {cite}`...`, {ref}`...`, {numref}, {eq}, {doc}, ...)":
        re.compile(r"\{[a-z][a-z0-9:_-]*\}`"),
    "a target label line ((label)=)": re.compile(r"(?m)^\s*\([A-Za-z0-9_:.-]+\)=\s*$"),
    "a labelled display equation ($$ ... $$ (label))":
        re.compile(r"\$\$\s*\([A-Za-z0-9_:.-]+\)"),
    "a substitution ({{ name }})": re.compile(r"\{\{\s*[A-Za-z_]\w*\s*\}\}"),
}


def _markdown_cells(path: Path) -> list[tuple[int, str]]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [(i, "".join(c["source"]) if isinstance(c["source"], list) else c["source"])
            for i, c in enumerate(cells) if c["cell_type"] == "markdown"]


def jupyter_html(markdown: str) -> str:
    """A markdown cell as nbconvert's HTML exporter renders it (mistune, math protected)."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    return markdown2html_mistune(markdown)


class _Reader(HTMLParser):
    """What a reader sees of rendered markdown: its text, each inline code span as ```code```
    (its content left out: MyST written as code is the subject, not a leftover; a role's
    name sits before its code span), code blocks left out but their info strings kept (a
    fenced directive renders as a code block of language ``{name}``)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.directives: list[str] = []
        self.links: list[str] = []
        self._pre = 0
        self._code = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "pre":
            self._pre += 1
        elif tag == "code" and self._pre:
            lang = (attrs.get("class") or "").removeprefix("language-")
            if lang.startswith("{"):
                self.directives.append(lang)
        elif tag == "code":
            self._code += 1
            self.text.append("`code")
        elif tag == "a" and attrs.get("href") is not None:
            self.links.append(attrs["href"])
        elif tag in ("p", "li", "br", "blockquote", "div", "h1", "h2", "h3", "h4", "tr"):
            self.text.append("\n")

    def handle_endtag(self, tag):
        if tag == "pre":
            self._pre -= 1
        elif tag == "code" and not self._pre:
            self._code -= 1
            self.text.append("`")

    def handle_data(self, data):
        if not self._pre and not self._code:
            self.text.append(data)


def read_as_jupyter(markdown: str) -> _Reader:
    reader = _Reader()
    reader.feed(jupyter_html(markdown))
    reader.close()
    return reader


def myst_leftovers(markdown: str) -> list[str]:
    """What of ``markdown`` a Jupyter reader would see as raw MyST: one line per finding."""
    reader = read_as_jupyter(markdown)
    text = "".join(reader.text)
    found = [f"{what}: {m.group(0)!r} in "
             f"{text[max(0, m.start() - 40):m.end() + 40].strip()!r}"
             for what, pattern in MYST_LEFTOVERS.items() for m in pattern.finditer(text)]
    found += [f"a fenced directive (```{d}) shown as a code block" for d in reader.directives]
    return found


# ---------------------------------------------------------------------------- the renderer


def test_the_check_finds_each_kind_of_myst_syntax():
    """Each MyST construct the notebooks used (and the others the issue lists) is caught as
    Jupyter renders it; the portable forms are not."""
    cases = {
        ":::{admonition} Predict\n:class: tip\nHow many?\n:::": "colon fence",
        "See {term}`uniform attention` here.": "a role",
        "By hand {cite}`snell2021blog`.": "a role",
        "See {ref}`stored-runs` and {numref}`fig-x`.": "a role",
        "As {eq}`eq-sen` says; {doc}`glossary`.": "a role",
        "(my-label)=\n## A section": "target label",
        "$$\nx = 1\n$$ (eq-one)": "labelled display equation",
        "```{figure} a.png\n:name: f\nA figure.\n```": "fenced directive",
        "Hello {{ name }}.": "substitution",
    }
    for markdown, kind in cases.items():
        found = myst_leftovers(markdown)
        assert found and all(kind in f for f in found[:1]), (markdown, found)
    portable = ("> **Predict.** When $\\Delta$ reaches 1, is $p$ above {0.8}?\n\n"
                "[uniform attention](https://x.github.io/y/book/glossary.html#term-a) and "
                "`{term}` written as code, `::: `, and\n\n```text\n:::{note}\n```\n\n"
                "<details class=\"attn-answer\">\n<summary>Answer</summary>\n\n"
                "**Answer.** $\\{0, 1\\}$.\n\n</details>")
    assert myst_leftovers(portable) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_myst_syntax_survives_a_jupyter_render(path):
    bad = [f"cell {i}: {f}" for i, md in _markdown_cells(path) for f in myst_leftovers(md)]
    assert not bad, (f"{path.name}: MyST syntax that JupyterLab and Colab show as raw text "
                     "(write it as portable markdown: CONTRIBUTING.md, 'Writing a "
                     "notebook's markdown'):\n" + "\n".join(bad))


# ---------------------------------------------------------------------- the portable forms


@functools.lru_cache(maxsize=None)
def _glossary_anchors() -> dict[str, str]:
    """{anchor: term}: the ids Sphinx gives book/glossary.md's terms."""
    from sphinx.util.nodes import _make_id
    from test_book_pages import glossary_terms

    terms = glossary_terms((ROOT / "book" / "glossary.md").read_text(encoding="utf-8"))
    return {_make_id(f"term-{t}"): t for t in terms}


@functools.lru_cache(maxsize=None)
def _bib_keys() -> frozenset[str]:
    bib = (ROOT / "book" / "references.bib").read_text(encoding="utf-8")
    return frozenset(re.findall(r"^@\w+\{([^,\s]+),", bib, flags=re.M))


@functools.lru_cache(maxsize=None)
def _book_pages() -> frozenset[str]:
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return frozenset({toc["root"], *(e["file"] for e in toc.get("chapters", []))})


def link_problems(links: list[str]) -> list[str]:
    """What is wrong with links found in a notebook's markdown (an empty list: nothing)."""
    anchors, keys, pages = _glossary_anchors(), _bib_keys(), _book_pages()
    bad = []
    for href in links:
        if href.startswith("#") or href.startswith("mailto:"):
            continue
        if not re.match(r"https?://", href):
            bad.append(f"{href}: a relative link, which Colab cannot follow (link the "
                       f"published book, {BOOK_URL}..., or the repository)")
            continue
        if re.match(r"https://[^/]+\.github\.io/", href) and not href.startswith(BOOK_URL):
            bad.append(f"{href}: a link to another copy of the book than {BOOK_URL} "
                       "(run python scripts/sync_repository_url.py)")
        elif href.startswith(BOOK_URL):
            page, _, anchor = href[len(BOOK_URL):].partition("#")
            doc = page.removesuffix(".html")
            if doc not in pages:
                bad.append(f"{href}: the book has no page {doc!r} (_toc.yml)")
            elif doc == "book/glossary" and anchor and anchor not in anchors:
                bad.append(f"{href}: book/glossary.md defines no term with the anchor "
                           f"{anchor!r}")
            elif doc == "book/references" and anchor:
                key = anchor.removeprefix("cite-")
                if not anchor.startswith("cite-") or key not in keys:
                    bad.append(f"{href}: book/references.bib has no entry {key!r} (link "
                               "#cite-<key>)")
        m = re.match(r"https://github\.com/([^/]+/[^/]+)/(blob|tree)/(.+)$", href)
        if m and f"https://github.com/{m.group(1)}" == REPO_URL:
            rest = m.group(3).split("#")[0]
            if not rest.startswith(BRANCH + "/"):
                bad.append(f"{href}: not on the configured branch {BRANCH!r}")
            elif not (ROOT / rest[len(BRANCH) + 1:]).exists():
                bad.append(f"{href}: no such file in the repository")
    return bad


def test_link_problems_are_found():
    """The link check fails the mistakes it is there for (and passes good links)."""
    good = [f"{BOOK_URL}book/glossary.html#term-SZKS",
            f"{BOOK_URL}book/references.html#cite-snell2021blog",
            f"{BOOK_URL}book/setup.html#stored-runs",
            f"{REPO_URL}/blob/{BRANCH}/scripts/build_book.sh",
            f"{REPO_URL}/tree/{BRANCH}/benchmarks/full_ch6",
            "https://arxiv.org/abs/2103.07601", "#claims"]
    assert link_problems(good) == []
    bad = ["../book/glossary.md#term-SZKS", f"{BOOK_URL}book/glossary.html#term-nothing",
           f"{BOOK_URL}book/references.html#cite-nobody2020",
           f"{BOOK_URL}book/nowhere.html", "https://someone.github.io/fork/book/intro.html",
           f"{REPO_URL}/blob/{BRANCH}/scripts/no_such_script.py",
           f"{REPO_URL}/blob/other-branch/scripts/build_book.sh"]
    found = link_problems(bad)
    assert len(found) == len(bad), found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_link_works_outside_the_book(path):
    links = [(i, href) for i, md in _markdown_cells(path)
             for href in read_as_jupyter(md).links]
    bad = [f"cell {i}: {p}" for i, href in links for p in link_problems([href])]
    assert not bad, f"{path.name}:\n" + "\n".join(bad)
    glossary = [h for _, h in links if h.startswith(f"{BOOK_URL}book/glossary.html#")]
    assert glossary, f"{path.name}: links no glossary term"


#: a repository path in inline code, not already the text of a link
_PATH_IN_CODE = re.compile(r"(?<![\[`])`((?:attn_core|benchmarks|scripts|tests|book|notebooks)"
                           r"/[^`\s]*)`(?!\]\()")


def unlinked_paths(markdown: str) -> list[str]:
    """Repository files named in ``markdown``'s inline code but not linked (code blocks,
    which show commands, are left alone)."""
    out, fence = [], False
    for line in markdown.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence if not line.lstrip().startswith("```{") else fence
            continue
        if not fence:
            out += [p for p in _PATH_IN_CODE.findall(line)
                    if (ROOT / p.rstrip("/")).exists()]
    return out


def test_unlinked_paths_are_found():
    assert unlinked_paths("see `benchmarks/full_ch6/run.py` and `scripts/`") == [
        "benchmarks/full_ch6/run.py", "scripts/"]
    assert unlinked_paths(f"see [`scripts/build_book.sh`]({REPO_URL}/blob/main/scripts/"
                          "build_book.sh), `no/such/file.py`,\n```bash\nbash "
                          "`scripts/build_book.sh`\n```") == []


@pytest.mark.parametrize("where", [*NOTEBOOKS, *PAGES], ids=lambda p: p.name)
def test_every_file_given_as_evidence_is_a_link(where):
    """A web reader cannot open ``benchmarks/...`` on a page: every repository file a chapter
    or a book page names is a link to it in the repository (``sync_repository_url.file_url``)."""
    texts = ([md for _, md in _markdown_cells(where)] if where.suffix == ".ipynb"
             else [where.read_text(encoding="utf-8")])
    bad = [p for text in texts for p in unlinked_paths(text)]
    assert not bad, (f"{where.name}: repository files named but not linked (write "
                     f"[`path`]({REPO_URL}/blob/{BRANCH}/path)): {bad}")


def test_book_pages_link_the_repository_where_it_is():
    """The book's own pages (MyST) name repository files by the configured URL and branch."""
    bad = [f"{page.name}: {p}" for page in PAGES
           for href in re.findall(r"\]\((https://github\.com/[^)\s]+)\)",
                                  page.read_text(encoding="utf-8"))
           for p in link_problems([href])]
    assert not bad, "\n".join(bad)


# ----------------------------------------------------------------- the book's upgrade of them


def _mini_book(tmp_path: Path, chapter: str) -> tuple[Path, str]:
    """Build a two-page Sphinx project (a glossary, a chapter) with the extension."""
    from sphinx.application import Sphinx
    from sphinx.util.console import nocolor

    nocolor()

    src = tmp_path / "src"
    (src / "book").mkdir(parents=True)
    (src / "book" / "glossary.md").write_text(textwrap.dedent("""\
        # Glossary

        (a-label)=
        ## A section

        ```{glossary}
        uniform attention
          Every position weighted alike.

        SZKS
          The paper.
        ```
        """))
    (src / "chapter.md").write_text(chapter)
    (src / "index.md").write_text("# Index\n\n```{toctree}\nchapter\nbook/glossary\n```\n")
    (src / "conf.py").write_text(
        "extensions = ['myst_parser', 'portable_markdown']\n"
        f"import sys; sys.path.insert(0, {str(ROOT / 'book' / '_ext')!r})\n"
        f"portable_markdown_book_url = {BOOK_URL!r}\n")
    out, warnings = tmp_path / "html", tmp_path / "warnings.txt"
    with open(warnings, "w") as stream:
        app = Sphinx(str(src), str(src), str(out), str(tmp_path / "doctrees"), "html",
                     status=None, warning=stream, freshenv=True)
        app.build()
    return out, warnings.read_text()


def test_the_book_shows_predict_boxes_and_its_own_links(tmp_path):
    chapter = textwrap.dedent(f"""\
        # Chapter

        > **Predict.** Will $p$ pass 0.8 before $\\Delta$ reaches 1?

        > A quotation that is no Predict box.

        Under [uniform attention]({BOOK_URL}book/glossary.html#term-uniform-attention),
        says [SZKS]({BOOK_URL}book/glossary.html#term-SZKS) (see [the section]({BOOK_URL}book/glossary.html#a-label),
        [the glossary]({BOOK_URL}book/glossary.html)); [a file]({REPO_URL}/blob/main/x.py).
        """)
    out, warnings = _mini_book(tmp_path, chapter)
    assert "portable_markdown" not in warnings and "WARNING" not in warnings, warnings
    html = (out / "chapter.html").read_text()
    box = re.search(r'<div class="tip admonition">\s*<p class="admonition-title">Predict</p>'
                    r'\s*<p>Will .*? reaches 1\?</p>\s*</div>', html, flags=re.S)
    assert box, "the Predict blockquote is not the book's 'Predict' tip box"
    assert html.count("<blockquote>") == 1 and "A quotation that is no Predict box" in html
    assert "Predict." not in html
    for anchor, text in (("term-uniform-attention", "uniform attention"),
                         ("term-SZKS", "SZKS")):
        assert re.search(rf'<a class="reference internal" href="book/glossary.html#{anchor}">'
                         rf'<span class="xref std std-term">{text}</span></a>', html), anchor
    assert re.search(r'<a class="reference internal" href="book/glossary.html#a-label">'
                     r'<span class="std std-ref">the section</span></a>', html)
    assert re.search(r'<a class="reference internal" href="book/glossary.html">'
                     r'<span class="doc">the glossary</span></a>', html)
    assert BOOK_URL not in html                        # no link leaves the book for itself
    assert f'href="{REPO_URL}/blob/main/x.py"' in html  # the repository's files stay links


def test_a_link_the_book_cannot_resolve_is_a_warning(tmp_path):
    chapter = textwrap.dedent(f"""\
        # Chapter

        [a term]({BOOK_URL}book/glossary.html#term-no-such-term),
        [a page]({BOOK_URL}book/no-such-page.html).
        """)
    _, warnings = _mini_book(tmp_path, chapter)
    assert "book/glossary does not have: " in warnings and "term-no-such-term" in warnings
    assert "a page the book does not have" in warnings and "no-such-page" in warnings


if __name__ == "__main__":        # python tests/test_portable_markdown.py: show what is found
    sys.path.insert(0, str(ROOT / "tests"))
    for path in NOTEBOOKS:
        for i, md in _markdown_cells(path):
            for finding in myst_leftovers(md):
                print(f"{path.name} cell {i}: {finding}")
