"""Notebooks are committed clean, fit the book's column, and open on Colab ready to run.

- no outputs and no execution counts (run ``bash scripts/strip_notebooks.sh``);
- the first cell carries an "Open in Colab" link to this very notebook on GitHub (generated
  from ``_config.yml`` and checked by ``tests/test_repository_url.py``);
- the first code cell installs the book's code only when running on Colab
  (``"google.colab" in sys.modules``) and never pins torch, so Colab's own GPU build stays.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks found in notebooks/"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stripped(path):
    nb = _load(path)
    dirty = [
        i
        for i, cell in enumerate(nb["cells"])
        if cell["cell_type"] == "code" and (cell.get("outputs") or cell.get("execution_count") is not None)
    ]
    assert not dirty, (
        f"{path.name}: code cells {dirty} have outputs or execution counts; "
        "run `bash scripts/strip_notebooks.sh`"
    )
    assert "widgets" not in nb.get("metadata", {}), f"{path.name}: saved widget state; strip it"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_colab_install_is_guarded_and_keeps_torch(path):
    nb = _load(path)
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code, f"{path.name} has no code cells"
    first = _source(code[0])
    assert re.search(r"""["']google\.colab["']\s+in\s+sys\.modules""", first), (
        f"{path.name}: the first code cell must install only under "
        '`if "google.colab" in sys.modules:`'
    )
    assert "install" in first, f"{path.name}: the Colab guard should install the book's code"
    assert "torch==" not in first, f"{path.name}: do not pin torch on Colab (keeps its GPU build)"


#: The book's text column fits 88 characters of code without a horizontal scrollbar.
MAX_LINE = 88


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_code_lines_fit_the_column(path):
    nb = _load(path)
    long = [(i, len(line)) for i, cell in enumerate(nb["cells"]) if cell["cell_type"] == "code"
            for line in _source(cell).split("\n") if len(line) > MAX_LINE]
    assert not long, f"{path.name}: (cell, length) of code lines over {MAX_LINE}: {long}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_cell_has_a_unique_id(path):
    """nbformat 4.5 requires cell ids (missing ones are a warning now, an error later)."""
    nb = _load(path)
    ids = [c.get("id") for c in nb["cells"]]
    assert all(isinstance(i, str) and i for i in ids), "a cell has no id"
    assert len(set(ids)) == len(ids), "two cells share an id"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_model_source_shown_in_the_book_fits_the_column(path):
    """Chapters show their model's code with ``inspect.getsource(ch.<Name>)``: those lines must
    fit the same column as the cells' own code."""
    import importlib
    import inspect

    nb = _load(path)
    code = "\n".join(_source(c) for c in nb["cells"] if c["cell_type"] == "code")
    shown = re.findall(r"inspect\.getsource\(ch\.(\w+)\)", code)
    if not shown:
        return
    module = re.search(r"from attn_core\.chapters import (\w+) as ch\b", code)
    assert module, f"{path.name} shows ch.<name> but does not import a chapter module as ch"
    ch = importlib.import_module(f"attn_core.chapters.{module.group(1)}")
    for name in shown:
        long = [(i, len(line)) for i, line in enumerate(inspect.getsource(getattr(ch, name))
                                                          .splitlines()) if len(line) > MAX_LINE]
        assert not long, (f"{path.name} shows {module.group(1)}.{name}, whose lines (index, "
                          f"length) {long} are longer than {MAX_LINE}")
