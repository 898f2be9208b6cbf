"""Sphinx extension: serve well-known remote images from the book itself.

Notebooks carry the usual "Open in Colab" badge, an image hosted by Google. That is what
GitHub and Colab users should see, but in the built book it would be the one request a page
makes to the internet. This swaps such URLs in each page's HTML body for a local copy under
``_static/`` (written relative to the page), leaving the notebooks untouched.

The footer (``_config.yml``'s ``html.extra_footer``) is the same HTML on every page, so its
links to the book's own pages are written from the book's root (``book/intro.html#...``);
``_footer_links`` makes them relative to each page, so that they resolve from the search and
index pages at the root as well as from the chapters one folder down.

Wired in ``_config.yml`` under ``sphinx: local_extensions``.
"""

from __future__ import annotations

import re

#: remote URL -> path under _static/ (the files live in book/_vendor/static/)
LOCAL_COPIES = {
    "https://colab.research.google.com/assets/colab-badge.svg": "vendor/badges/colab-badge.svg",
}


def _localise(app, pagename, templatename, context, doctree):
    body = context.get("body")
    if not body or "pathto" not in context:
        return
    for remote, local in LOCAL_COPIES.items():
        if remote in body:
            body = body.replace(remote, context["pathto"]("_static/" + local, 1))
    context["body"] = body


#: a link in the footer to a page of the book, written from the book's root
_ROOT_LINK = re.compile(r'href="((?:book|notebooks)/[A-Za-z0-9_./-]+)\.html(#[^"]*)?"')


def _footer_links(app, pagename, templatename, context, doctree):
    footer = context.get("theme_extra_footer")
    if not footer or "pathto" not in context:
        return

    def relative(m):
        target = context["pathto"](m.group(1))
        if target.startswith("#") or m.group(1) == pagename:   # the page itself
            target = "" if m.group(2) else "#"
        return f'href="{target}{m.group(2) or ""}"'

    context["theme_extra_footer"] = _ROOT_LINK.sub(relative, footer)


def setup(app):
    app.connect("html-page-context", _localise)
    app.connect("html-page-context", _footer_links)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
