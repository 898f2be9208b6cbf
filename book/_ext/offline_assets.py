"""Sphinx extension: serve well-known remote images from the book itself.

Notebooks carry the usual "Open in Colab" badge, an image hosted by Google. That is what
GitHub and Colab users should see, but in the built book it would be the one request a page
makes to the internet. This swaps such URLs in each page's HTML body for a local copy under
``_static/`` (written relative to the page), leaving the notebooks untouched.

Wired in ``_config.yml`` under ``sphinx: local_extensions``.
"""

from __future__ import annotations

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


def setup(app):
    app.connect("html-page-context", _localise)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
