"""The book's own pages (book/*.md): figure options that MyST reads as the author meant."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PAGES = sorted((Path(__file__).resolve().parents[1] / "book").glob("*.md"))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_figure_options_are_one_line_each(page):
    """A directive option continued on an indented next line is not joined by MyST: the rest
    of an ``:alt:`` became the figure's caption (the intro's figure showed "reach 1 by step
    250) and ..." as its caption until 2026-11-22)."""
    text = page.read_text(encoding="utf-8")
    for block in re.findall(r"```\{figure\}.*?```", text, flags=re.S):
        lines = block.splitlines()[1:]
        options = []
        for line in lines:
            if not line.strip():
                break
            options.append(line)
        bad = [line for line in options if not line.startswith(":")]
        assert not bad, f"{page.name}: figure option lines must each start with ':' ({bad[0]!r})"


# --------------------------------------------------------------------------- glossary terms

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = ROOT / "book" / "glossary.md"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

#: The names the chapters link with {term}`NAME` (issue #31): the glossary defines each.
GLOSSARY_TERMS = (
    "KTIW", "SEN", "SZKS", "LMN", "IBM Model 1", "EM", "lexical probe", "proxy",
    "count table", "agreement", "good head", "bad head", "guessing level", "EOS", "finding",
    "identity", "fast mode", "full mode", "stored run", "uniform attention",
    "Luong attention", "attention score", "embedding norm", "topic word", "keyword",
    "permutation copy", "control task", "success", "Predict box", "attention sink",
    "end step", "push", "censored run", "Kaplan-Meier curve", "Holm correction",
    "paired comparison", "lens", "contrast", "hit rate", "AUC", "log score",
    "rank correlation", "seed", "Wilson interval", "Fisher's exact test", "McNemar's test",
    "Newcombe interval", "permutation p-value",
)

# {term}`NAME` or {term}`shown text <NAME>`; the role's text may run over a line break.
_TERM_ROLE = re.compile(r"\{term\}`([^`]+)`")


def _term_target(content: str) -> str:
    content = " ".join(content.split())
    m = re.fullmatch(r".*?<([^<>]+)>", content)
    return " ".join((m.group(1) if m else content).split())


def glossary_terms(text: str) -> dict[str, str]:
    """The terms of the ``{glossary}`` directive(s) in a MyST page, mapped to their
    definitions: a term is a line of the directive's body that starts in column 0 (not an
    ``:option:``), its definition the indented lines after it (Sphinx's glossary syntax).
    ValueError for a duplicate term or a term without a definition."""
    blocks = re.findall(r"^(`{3,}|~{3,})\{glossary\}[^\n]*\n(.*?)^\1\s*$", text,
                        flags=re.S | re.M)
    if not blocks:
        raise ValueError("no {glossary} directive")
    terms: dict[str, str] = {}
    for _, body in blocks:
        current = None
        for line in body.splitlines():
            if not line.strip():
                continue
            if not line[0].isspace():
                if line.startswith(":") and current is None and not terms:
                    continue  # a directive option such as :sorted:
                current = " ".join(line.split())
                if current in terms:
                    raise ValueError(f"glossary term {current!r} is defined twice")
                terms[current] = ""
            elif current is None:
                raise ValueError(f"an indented line before the first term: {line!r}")
            else:
                terms[current] = (terms[current] + " " + line.strip()).strip()
    empty = [t for t, d in terms.items() if not d]
    if empty:
        raise ValueError(f"glossary terms without a definition: {empty}")
    return terms


def term_uses(text: str) -> list[str]:
    """The target of every {term} role in ``text``."""
    return [_term_target(c) for c in _TERM_ROLE.findall(text)]


def _markdown_sources() -> list[tuple[str, str]]:
    import json

    sources = [(f"book/{p.name}", p.read_text(encoding="utf-8")) for p in PAGES]
    for nb in NOTEBOOKS:
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        for i, cell in enumerate(cells):
            if cell["cell_type"] == "markdown":
                src = cell["source"]
                sources.append((f"{nb.name} cell {i}",
                                "".join(src) if isinstance(src, list) else src))
    return sources


def test_term_parsing():
    """The parser reads Sphinx's glossary syntax and both forms of the role."""
    page = ("# G\n\n```{glossary}\n:sorted:\nfoo bar\n  One.\n  Two.\n\nEM\n  Three.\n```\n"
            "after\n")
    assert glossary_terms(page) == {"foo bar": "One. Two.", "EM": "Three."}
    assert term_uses("a {term}`EM` b {term}`the\nshown text <foo  bar>` c {term}`x<y>`") == \
        ["EM", "foo bar", "y"]
    with pytest.raises(ValueError, match="twice"):
        glossary_terms("```{glossary}\nEM\n  a\nEM\n  b\n```\n")
    with pytest.raises(ValueError, match="without a definition"):
        glossary_terms("```{glossary}\nEM\nSEN\n  b\n```\n")


def test_glossary_defines_the_chapters_terms():
    """book/glossary.md defines exactly the terms the chapters were told to link, each with a
    definition that says where the book defines it."""
    terms = glossary_terms(GLOSSARY.read_text(encoding="utf-8"))
    missing = [t for t in GLOSSARY_TERMS if t not in terms]
    assert not missing, f"book/glossary.md does not define {missing}"
    extra = sorted(set(terms) - set(GLOSSARY_TERMS))
    assert not extra, f"book/glossary.md defines terms not in GLOSSARY_TERMS: {extra}"
    for term, definition in terms.items():
        assert re.search(r"[Cc]hapter|setup page|introduction|references|Reading the numbers", definition), (
            f"glossary: {term!r} does not say where the book defines it")


def test_every_term_role_names_a_glossary_term():
    """Every {term}`NAME` (or {term}`text <NAME>`) in a chapter's markdown or a book page
    names a term of book/glossary.md, spelt exactly as there (Sphinx would match a wrong case
    silently, and a misspelt name only warns at build time)."""
    terms = glossary_terms(GLOSSARY.read_text(encoding="utf-8"))
    bad = [f"{where}: {{term}}`{name}`" for where, text in _markdown_sources()
           for name in term_uses(text) if name not in terms]
    assert not bad, ("{term} roles that name no glossary term (write {term}`shown text <NAME>` "
                     "with NAME exactly as in book/glossary.md):\n" + "\n".join(bad))


def test_glossary_and_notation_are_in_the_book():
    """Both pages are built (listed in _toc.yml, before the references) and the intro
    links them."""
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    files = re.findall(r"file:\s*(\S+)", toc)
    for page in ("book/glossary", "book/notation"):
        assert page in files, f"_toc.yml does not list {page}"
        assert files.index(page) < files.index("book/references")
    intro = (ROOT / "book" / "intro.md").read_text(encoding="utf-8")
    assert "{doc}`glossary`" in intro and "{doc}`notation`" in intro


# --------------------------------------------------------------------------- notation


def _notation_section(title):
    text = (ROOT / "book" / "notation.md").read_text(encoding="utf-8")
    part = text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in part.splitlines() if line.startswith("| ")][1:]   # no header
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows]


def test_notation_gives_each_symbol_one_meaning():
    """The book-wide table lists every symbol once (three columns, to fit a phone), each
    with where it is defined."""
    rows = _notation_section("One meaning per symbol")
    assert len(rows) >= 15
    assert all(len(row) == 3 and "{doc}" in row[2] for row in rows), rows
    symbols = [s for row in rows for s in re.findall(r"\$([^$]+)\$", row[0])]
    assert len(symbols) == len(set(symbols)), sorted(symbols)


def _chapter_markdown(doc_cell):
    import json

    name = re.search(r"<\.\./notebooks/(\w+)>", doc_cell).group(1)
    nb = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8"))
    return "\n".join(" ".join("".join(c["source"]).split())
                     for c in nb["cells"] if c["cell_type"] == "markdown")


def test_every_kept_letter_is_stated_in_its_chapter():
    """An exception (a paper's letter kept) names the sentence its chapter says it in; that
    sentence is in the chapter's text, and the letters the chapters renamed are gone."""
    rows = _notation_section("Exceptions: a paper's letter kept")
    assert len(rows) >= 4
    for letter, chapter, why in rows:
        quoted = re.findall(r"“([^”]+)”", why)
        assert quoted, f"{letter}: no sentence quoted"
        assert all(q in _chapter_markdown(chapter) for q in quoted), (letter, quoted)
    renamed = {"01_gated_classifier": [r"\alpha^\top h_l", "W h_l", "3K$"],
               "02_sen": ["α", r"\alpha\lVert", " a_t = ", "$a_t", "p_{n,l}", "K_1",
                          "(a,b)", "$(s, e)$"],
               "03_ibm1": ["Zipf exponent $s", "1/r^{s}", r"\sum_m", "x^m_l", "r_l = W h_l"],
               "04_permutation_copy": [r"+ a^\top h_l", r"\sum_m"],
               "05_multihead": [r"\kappa"], "06_transformer": ["y &= z + p"],
               "08_scorecard": [r"\kappa/", r"\sum_m"]}
    for name, gone in renamed.items():
        text = _chapter_markdown(f"<../notebooks/{name}>")
        assert not [g for g in gone if g in text], (name, [g for g in gone if g in text])
