"""Sphinx extension: the notebooks' portable markdown, shown the book's way.

The notebooks are written in markdown that JupyterLab, Jupyter Notebook, Colab and this book
all render (CONTRIBUTING.md, "Writing a notebook's markdown"): no MyST role or directive,
which Jupyter would show as raw text. Two of its forms are upgraded here, in the book only:

- **Predict boxes.** A blockquote whose first paragraph starts with a bold ``Predict.``
  (``> **Predict.** When Δ reaches 1, ...``) becomes the admonition that ``:::{admonition}
  Predict`` with ``:class: tip`` made: a ``tip`` box titled "Predict".
- **Links into the book.** Links to the published book (its address derived from
  ``_config.yml``'s ``repository.url`` by ``scripts/sync_repository_url.py``) are absolute, so
  that they work in Colab. Here they become the book's own cross-references: a link to a
  glossary term is the ``{term}`` it stands for, a link to a labelled section or figure the
  ``{ref}``, a link to a page the ``{doc}``, and any other anchor (a citation's
  ``#cite-<key>`` on the References page) a relative link. A link to a page the book does not
  have, or to a term, label or citation it does not define, is a warning (an error in the
  strict build, ``-W``).

Wired in ``_config.yml`` under ``sphinx: local_extensions``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

logger = logging.getLogger(__name__)

#: the bold label that opens a Predict box, and the box's title in the book
PREDICT_LABEL = "Predict."
PREDICT_TITLE = "Predict"


def _sync_module():
    """``scripts/sync_repository_url.py`` of this repository (its URL rules)."""
    path = Path(__file__).resolve().parents[2] / "scripts" / "sync_repository_url.py"
    spec = importlib.util.spec_from_file_location("_attn_sync_repository_url", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _is_predict(quote: nodes.block_quote) -> bool:
    first = quote.children[0] if quote.children else None
    if not isinstance(first, nodes.paragraph):
        return False
    lead = next((c for c in first.children
                 if not (isinstance(c, nodes.Text) and not c.astext().strip())), None)
    return isinstance(lead, nodes.strong) and lead.astext().strip() == PREDICT_LABEL


class PredictBoxes(SphinxTransform):
    """``> **Predict.** ...`` -> the "Predict" tip admonition."""

    default_priority = 500

    def apply(self, **kwargs) -> None:
        for quote in list(self.document.findall(nodes.block_quote)):
            if not _is_predict(quote):
                continue
            box = nodes.admonition("", classes=["tip"])
            box.source, box.line = quote.source, quote.line
            box += nodes.title(PREDICT_TITLE, PREDICT_TITLE)
            first = quote.children[0]
            while not isinstance(first.children[0], nodes.strong):
                first.remove(first.children[0])                 # blank text before the label
            first.remove(first.children[0])                     # the bold label
            if first.children and isinstance(first.children[0], nodes.Text):
                rest = first.children[0].lstrip()
                if rest:
                    first.replace(first.children[0], nodes.Text(rest))
                else:
                    first.remove(first.children[0])
            if not first.children:
                quote.remove(first)
            box.extend(quote.children)
            quote.replace_self(box)


class BookLinks(SphinxPostTransform):
    """Absolute links to the published book -> the book's own cross-references."""

    default_priority = 5          # before ReferencesResolver (10) resolves pending_xref

    def run(self, **kwargs) -> None:
        base = self.app.config.portable_markdown_book_url
        if not base:
            return
        std = self.env.get_domain("std")
        for ref in list(self.document.findall(nodes.reference)):
            uri = ref.get("refuri", "")
            if not uri.startswith(base):
                continue
            path, _, anchor = uri[len(base):].partition("#")
            docname = path[:-len(".html")] if path.endswith(".html") else path
            if docname not in self.env.all_docs:
                logger.warning(f"link to a page the book does not have: {uri}",
                               location=ref, type="portable_markdown", subtype="page")
                continue
            new = self._xref(std, ref, docname, anchor, uri)
            if new is not None:
                ref.replace_self(new)

    def _pending(self, ref, reftype, target, classes) -> addnodes.pending_xref:
        xref = addnodes.pending_xref("", refdomain="std", reftype=reftype, reftarget=target,
                                     refexplicit=True, refwarn=True,
                                     refdoc=self.env.docname)
        xref.source, xref.line = ref.source, ref.line
        xref += nodes.inline(ref.astext(), ref.astext(), classes=["xref", "std", *classes])
        return xref

    def _xref(self, std, ref, docname, anchor, uri):
        if not anchor:
            return self._pending(ref, "doc", "/" + docname, ["std-doc"])
        for term, (doc, labelid) in std._terms.items():
            if doc == docname and labelid == anchor:
                return self._pending(ref, "term", term, ["std-term"])
        for label, (doc, labelid, _title) in std.labels.items():
            if doc == docname and labelid == anchor:
                return self._pending(ref, "ref", label, ["std-ref"])
        ids = self._ids(docname)
        if anchor not in ids:
            logger.warning(f"link to an anchor that {docname} does not have: {uri}",
                           location=ref, type="portable_markdown", subtype="anchor")
            return None
        new = nodes.reference("", "", *ref.children, internal=True,
                              refuri=self.app.builder.get_relative_uri(self.env.docname,
                                                                       docname)
                              + "#" + anchor)
        return new

    def _ids(self, docname) -> set[str]:
        cache = self.env.temp_data.setdefault("portable_markdown_ids", {})
        if docname not in cache:
            cache[docname] = set(self.env.get_doctree(docname).ids)
        return cache[docname]


def _book_url(app, config) -> None:
    """The published book's address, from the repository URL (``_config.yml``)."""
    if config.portable_markdown_book_url:
        return
    url = (config.html_theme_options or {}).get("repository_url")
    if not url:
        return
    config.portable_markdown_book_url = _sync_module().book_url(url.rstrip("/"))


def setup(app):
    app.add_config_value("portable_markdown_book_url", "", "env")
    app.connect("config-inited", _book_url)
    app.add_transform(PredictBoxes)
    app.add_post_transform(BookLinks)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
