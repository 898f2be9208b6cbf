"""One place for the repository URL: ``_config.yml``. scripts/sync_repository_url.py writes it
into every chapter's Colab badge and install cell; these tests fail when a notebook disagrees,
check that changing the config changes every notebook, and run the install cell itself."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("sync_repository_url",
                                               ROOT / "scripts" / "sync_repository_url.py")
sync_url = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sync_url)


def _copy_book(tmp_path: Path) -> Path:
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "book").mkdir()
    for page in (ROOT / "book").glob("*.md"):
        shutil.copy(page, tmp_path / "book" / page.name)
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks",
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    return tmp_path


def _set_repository(root: Path, url: str, branch: str = "main") -> None:
    cfg = root / "_config.yml"
    text = cfg.read_text()
    old_url, old_branch = sync_url.read_repository(root)
    text = text.replace(f"url: {old_url}", f"url: {url}")
    text = text.replace(f"branch: {old_branch}", f"branch: {branch}")
    cfg.write_text(text)


def _moved_back(text: str) -> str:
    """The links of ``test_changing_the_config...``'s fork put back where they were."""
    return (text.replace("https://a-reader.github.io/attention-fork/",
                         "https://how-attention-learns.github.io/how-attention-learns/")
            .replace("https://github.com/a-reader/attention-fork/blob/dev/",
                     "https://github.com/how-attention-learns/how-attention-learns/blob/main/")
            .replace("https://github.com/a-reader/attention-fork/tree/dev/",
                     "https://github.com/how-attention-learns/how-attention-learns/tree/main/"))


def _cells(path: Path) -> tuple[str, str]:
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    return "".join(nb["cells"][0]["source"]), "".join(code[0]["source"])


def test_every_book_notebook_agrees_with_config():
    from attn_core.chapters import registry

    assert [p.stem for p in sync_url.book_notebooks()] == [c.notebook
                                                           for c in registry.CHAPTERS]
    changed = sync_url.sync(ROOT, check=True)
    assert not changed, (f"{[p.name for p in changed]} disagree with _config.yml's repository: "
                         f"run `python scripts/sync_repository_url.py`")


def test_a_hand_edited_badge_or_install_cell_is_caught(tmp_path):
    root = _copy_book(tmp_path)
    nbs = sync_url.book_notebooks(root)

    def edit(path, cell, old, new):
        nb = json.loads(path.read_text())
        if cell == "install":
            cell = next(i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code")
        src = "".join(nb["cells"][cell]["source"])
        assert old in src
        nb["cells"][cell]["source"] = src.replace(old, new, 1).splitlines(keepends=True)
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")

    edit(nbs[1], 0, "how-attention-learns/how-attention-learns/blob/main", "someone/else/blob/main")
    edit(nbs[3], "install", '"-q", url]', '"-q", url, "torch==2.0"]')
    assert sync_url.sync(root, check=True) == [nbs[1], nbs[3]]
    assert sync_url.sync(root) == [nbs[1], nbs[3]]        # rewritten ...
    assert sync_url.sync(root, check=True) == []          # ... and now in line


def test_changing_the_config_changes_every_badge_and_install_cell(tmp_path):
    root = _copy_book(tmp_path)
    before = {p.name: p.read_text() for p in sync_url.book_notebooks(root)}
    pages = {p.name: p.read_text() for p in sync_url.book_pages(root)}
    _set_repository(root, "https://github.com/a-reader/attention-fork", "dev")
    changed = sync_url.sync(root)
    linking = [n for n, text in pages.items() if "how-attention-learns/blob/main" in text]
    assert linking, "no book page links a repository file: the pages' part is not tested"
    assert sorted(p.name for p in changed) == sorted([*before, *linking])
    for path in sync_url.book_pages(root):      # only their links to this repository moved
        new = path.read_text()
        assert "how-attention-learns/how-attention-learns/blob/main" not in new
        assert _moved_back(new) == pages[path.name]
    for path in sync_url.book_notebooks(root):
        first, install = _cells(path)
        assert (f"https://colab.research.google.com/github/a-reader/attention-fork/blob/dev/"
                f"notebooks/{path.stem}.ipynb") in first
        assert 'INSTALL_URL = "git+https://github.com/a-reader/attention-fork@dev"' in install
        assert "how-attention-learns/how-attention-learns" not in first + install
        # the badge line, the install cell and the links changed, nothing else
        old, new = json.loads(before[path.name]), json.loads(path.read_text())
        assert len(old["cells"]) == len(new["cells"])
        differ = [i for i, (a, b) in enumerate(zip(old["cells"], new["cells"])) if a != b]
        code0 = next(i for i, c in enumerate(old["cells"]) if c["cell_type"] == "code")
        assert code0 in differ and 0 in differ
        for i in differ:
            if i == code0:
                continue
            assert new["cells"][i]["cell_type"] == "markdown"
            text = "".join(new["cells"][i]["source"])
            assert "how-attention-learns.github.io" not in text, (path.name, i)
            assert "how-attention-learns/how-attention-learns" not in text, (path.name, i)
            if i:
                assert _moved_back(text) == "".join(old["cells"][i]["source"]), (path.name, i)
        assert any("https://a-reader.github.io/attention-fork/book/glossary.html#term-" in
                   "".join(new["cells"][i]["source"]) for i in differ), path.name
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "sync_repository_url.py"),
                        "--check", "--root", str(root)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("url, branch, match", [
    ("https://gitlab.com/a/b", "main", r"repository\.url must be https://github\.com/"),
    ("github.com/a/b", "main", r"repository\.url must be"),
    ("https://github.com/a", "main", r"repository\.url must be"),
    ("https://github.com/a/b", "bad branch", r"repository\.branch must be a branch name"),
])
def test_a_bad_repository_in_the_config_is_named(tmp_path, url, branch, match):
    root = _copy_book(tmp_path)
    _set_repository(root, url, branch)
    with pytest.raises(ValueError, match=match):
        sync_url.sync(root, check=True)


def test_check_mode_exits_nonzero_and_names_the_notebook(tmp_path):
    root = _copy_book(tmp_path)
    path = sync_url.book_notebooks(root)[0]
    path.write_text(path.read_text().replace("@main", "@master", 1))
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "sync_repository_url.py"),
                        "--check", "--root", str(root)], capture_output=True, text=True)
    assert r.returncode == 1
    assert f"notebooks/{path.name}: disagree with _config.yml" in r.stdout


# ------------------------------------------------------------------ the install cell itself
def _run_install_cell(monkeypatch, env_url=None, colab=False):
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: calls.append((cmd, kw)))
    if env_url is None:
        monkeypatch.delenv("ATTN_INSTALL_URL", raising=False)
    else:
        monkeypatch.setenv("ATTN_INSTALL_URL", env_url)
    if colab:
        monkeypatch.setitem(sys.modules, "google.colab", object())
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    url, branch = sync_url.read_repository()
    exec(compile(sync_url.install_cell(url, branch), "<install cell>", "exec"), {})
    return calls


def test_install_cell_does_nothing_outside_colab(monkeypatch):
    assert _run_install_cell(monkeypatch) == []


def test_install_cell_on_colab_installs_from_the_config_and_leaves_torch(monkeypatch):
    calls = _run_install_cell(monkeypatch, colab=True)
    url, branch = sync_url.read_repository()
    assert len(calls) == 1
    cmd, kw = calls[0]
    assert cmd == [sys.executable, "-m", "pip", "install", "-q", f"git+{url}@{branch}"]
    assert kw == {"check": True}
    assert not any("torch" in part for part in cmd)


@pytest.mark.parametrize("colab", [False, True])
def test_install_url_overrides_where_from(monkeypatch, colab):
    calls = _run_install_cell(monkeypatch, env_url="git+file:///tmp/checkout", colab=colab)
    assert [c[0][-1] for c in calls] == ["git+file:///tmp/checkout"]
