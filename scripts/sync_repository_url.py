"""Write the repository URL of ``_config.yml`` into every chapter's Colab badge and install cell.

    python scripts/sync_repository_url.py           # rewrite the notebooks that disagree
    python scripts/sync_repository_url.py --check   # only list them; exit 1 if any

``_config.yml``'s ``repository.url`` (a ``https://github.com/<owner>/<name>`` address) and
``repository.branch`` are the one place the book's home is written. From them this script
generates, in every notebook of ``_toc.yml``,

- the "Open in Colab" badge in the first cell (the line starting ``[![Open In Colab]``), which
  opens ``notebooks/<name>.ipynb`` of that repository and branch on Colab; and
- the first code cell, which installs ``attn_core`` with pip from that repository when it runs
  on Colab;
- the markdown's links into the published book (``book_url``: glossary terms, citations,
  cross-references) and to the repository's files (``file_url``: the scripts and results a
  chapter cites as evidence). ``ATTN_INSTALL_URL`` (any pip requirement, e.g. ``git+https://github.com/you/fork``
  or ``git+file:///path/to/checkout``) overrides where from, and also makes the cell install
  outside Colab; without either the cell does nothing. torch is never named, so Colab's own
  build stays.

The jupyter-book launch button reads the same ``repository`` block. ``tests/
test_repository_url.py`` fails when a notebook disagrees with ``_config.yml`` (e.g. was edited
by hand): run this script instead.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BADGE_IMAGE = "https://colab.research.google.com/assets/colab-badge.svg"
BADGE_PREFIX = "[![Open In Colab]"
_GITHUB = re.compile(r"^https://github\.com/([A-Za-z0-9][A-Za-z0-9-]*)/([A-Za-z0-9._-]+?)/?$")
_BRANCH = re.compile(r"^[A-Za-z0-9._/-]+$")

INSTALL_CELL = '''\
# In Colab: install attn_core from the repository (Colab's own torch is kept).
# ATTN_INSTALL_URL (a pip requirement: a fork, or git+file:// of a local checkout)
# overrides where from, and installs outside Colab too; otherwise this does nothing.
import os
import subprocess
import sys

INSTALL_URL = "git+{url}@{branch}"
if "google.colab" in sys.modules or os.environ.get("ATTN_INSTALL_URL"):
    url = os.environ.get("ATTN_INSTALL_URL") or INSTALL_URL
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", url], check=True)'''


def read_repository(root: Path = ROOT) -> tuple[str, str]:
    """``(url, branch)`` from ``root/_config.yml``'s ``repository`` block, checked."""
    config = yaml.safe_load((Path(root) / "_config.yml").read_text(encoding="utf-8")) or {}
    repo = config.get("repository") or {}
    url, branch = repo.get("url"), repo.get("branch", "main")
    if not isinstance(url, str) or not _GITHUB.match(url):
        raise ValueError(f"_config.yml: repository.url must be https://github.com/<owner>/"
                         f"<name>; got {url!r}")
    if not isinstance(branch, str) or not _BRANCH.match(branch):
        raise ValueError(f"_config.yml: repository.branch must be a branch name; got "
                         f"{branch!r}")
    return url.rstrip("/"), branch


def colab_url(url: str, branch: str, notebook: str) -> str:
    """The Colab address of ``notebooks/<notebook>.ipynb`` in that repository and branch."""
    owner, name = _GITHUB.match(url).groups()
    return (f"https://colab.research.google.com/github/{owner}/{name}/blob/{branch}/"
            f"notebooks/{notebook}.ipynb")


def book_url(url: str) -> str:
    """The published book's address (GitHub Pages of that repository), ending in ``/``.

    ``https://github.com/<owner>/<name>`` is published at ``https://<owner>.github.io/<name>/``
    (``.github/workflows/book.yml``). The notebooks link their glossary terms, citations and
    cross-references there, so that the links work in Colab and JupyterLab too; in the book
    itself ``book/_ext/portable_markdown.py`` turns them back into the book's own links.
    """
    match = _GITHUB.match(url)
    if not match:
        raise ValueError(f"url must be https://github.com/<owner>/<name>; got {url!r}")
    owner, name = match.groups()
    return f"https://{owner.lower()}.github.io/{name}/"


def file_url(url: str, branch: str, path: str) -> str:
    """The address of a file (or, ending in ``/``, a folder) of that repository and branch."""
    kind = "tree" if path.endswith("/") else "blob"
    return f"{url}/{kind}/{branch}/{path.rstrip('/')}"


#: links to some published book (``https://<owner>.github.io/<name>/``) and to a file of some
#: GitHub repository; rewritten to this repository's when they point into this book or at a
#: file of this repository (its top-level folders below)
_BOOK_LINK = re.compile(r"\]\((https://[A-Za-z0-9-]+\.github\.io/[A-Za-z0-9._-]+/)"
                        r"((?:book|notebooks)/[^)\s]*)\)")
_FILE_LINK = re.compile(r"\]\((https://github\.com/[A-Za-z0-9-]+/[A-Za-z0-9._-]+)/(blob|tree)/"
                        r"([A-Za-z0-9._/-]+?)/((?:attn_core|benchmarks|book|notebooks|scripts|"
                        r"tests)(?:/[^)\s#]*)?)(#[^)\s]*)?\)")


def relinked(text: str, url: str, branch: str) -> str:
    """``text`` (markdown) with its links into the book and to this repository's files
    pointed at the book and repository of ``url`` and ``branch``."""
    text = _BOOK_LINK.sub(lambda m: f"]({book_url(url)}{m.group(2)})", text)
    return _FILE_LINK.sub(
        lambda m: f"]({url}/{m.group(2)}/{branch}/{m.group(4)}{m.group(5) or ''})", text)


def badge(url: str, branch: str, notebook: str) -> str:
    return f"{BADGE_PREFIX}({BADGE_IMAGE})]({colab_url(url, branch, notebook)})"


def install_cell(url: str, branch: str) -> str:
    return INSTALL_CELL.format(url=url, branch=branch)


def book_notebooks(root: Path = ROOT) -> list[Path]:
    toc = yaml.safe_load((Path(root) / "_toc.yml").read_text(encoding="utf-8"))
    return [Path(root) / f"{e['file']}.ipynb" for e in toc.get("chapters", [])
            if e["file"].startswith("notebooks/")]


def book_pages(root: Path = ROOT) -> list[Path]:
    """The book's own markdown pages of ``_toc.yml`` (its root and every ``.md`` chapter)."""
    toc = yaml.safe_load((Path(root) / "_toc.yml").read_text(encoding="utf-8"))
    files = [toc["root"], *(e["file"] for e in toc.get("chapters", []))]
    return [Path(root) / f"{f}.md" for f in files if (Path(root) / f"{f}.md").exists()]


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def synced(nb: dict, path: Path, url: str, branch: str) -> dict:
    """A copy of notebook ``nb`` with its badge, install cell and links generated from the
    config."""
    nb = json.loads(json.dumps(nb))
    cells = nb.get("cells", [])
    if not cells or cells[0].get("cell_type") != "markdown":
        raise ValueError(f"{path.name}: the first cell must be markdown with the Colab badge")
    lines = _source(cells[0]).split("\n")
    at = [i for i, line in enumerate(lines) if line.startswith(BADGE_PREFIX)]
    if len(at) != 1:
        raise ValueError(f"{path.name}: the first cell must hold exactly one line starting "
                         f"{BADGE_PREFIX!r}; found {len(at)}")
    lines[at[0]] = badge(url, branch, path.stem)
    cells[0]["source"] = "\n".join(lines).splitlines(keepends=True)
    code = [c for c in cells if c.get("cell_type") == "code"]
    if not code or "google.colab" not in _source(code[0]):
        raise ValueError(f"{path.name}: the first code cell must be the Colab install cell "
                         f"(it mentions google.colab)")
    code[0]["source"] = install_cell(url, branch).splitlines(keepends=True)
    for cell in cells:
        if cell.get("cell_type") == "markdown":
            text = _source(cell)
            new = relinked(text, url, branch)
            if new != text:
                cell["source"] = new.splitlines(keepends=True)
    return nb


def sync(root: Path = ROOT, check: bool = False) -> list[Path]:
    """Bring every book notebook (and the links of every book page) in line with
    ``_config.yml``; return the files that were not (with ``check=True`` nothing is
    written)."""
    url, branch = read_repository(root)
    changed = []
    for path in book_notebooks(root):
        text = path.read_text(encoding="utf-8")
        nb = json.loads(text)
        new = json.dumps(synced(nb, path, url, branch), indent=1, ensure_ascii=False) + "\n"
        if new != text:
            changed.append(path)
            if not check:
                path.write_text(new, encoding="utf-8")
    for path in book_pages(root):
        text = path.read_text(encoding="utf-8")
        new = relinked(text, url, branch)
        if new != text:
            changed.append(path)
            if not check:
                path.write_text(new, encoding="utf-8")
    return changed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="list the notebooks that disagree with _config.yml; write nothing")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    changed = sync(args.root, check=args.check)
    verb = "disagree with" if args.check else "rewritten from"
    for path in changed:
        print(f"{path.relative_to(args.root)}: {verb} _config.yml's repository")
    if not changed:
        print("every notebook's Colab badge, install cell and links match _config.yml")
    return 1 if (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
