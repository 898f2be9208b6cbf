"""Rehearse a reader's Colab session without Colab: install the book the way a chapter's
first cell does, into a fresh environment that already has torch, then run the chapter.

    python scripts/colab_rehearsal.py                      # chapter 1 (the shortest)
    python scripts/colab_rehearsal.py 04_permutation_copy  # any chapters, by notebook name
    python scripts/colab_rehearsal.py all                  # every chapter (~10 min here)
    python scripts/colab_rehearsal.py --base-python ENV/bin/python 04_permutation_copy
                                  # another environment plays Colab's preinstalled stack
    python scripts/colab_rehearsal.py --smoke              # a GPU runtime's full mode, as a
                                  # smoke run (ATTN_MODE=full ATTN_MAX_STEPS=2): the test
                                  # command's way, which is also chapter 1's full-mode smoke

What it does, in a temporary folder outside the repository:

1. A fresh virtual environment that has, like Colab, torch and the scientific stack already
   installed -- the packages of this checkout's ``.venv``, made visible through a ``.pth``
   file, with ``attn_core`` itself left out -- and nothing of the book. With
   ``--base-python PATH`` the environment of that interpreter plays Colab's preinstalled
   stack instead (another Python, another torch: ``scripts/portability_check.py``); the fresh
   environment, and the kernel the chapter runs in, then use that interpreter's Python.
2. Each chapter runs with nbclient in a kernel of that environment, from the temporary folder,
   in fast mode, with ``ATTN_INSTALL_URL=git+file://<checkout>@<HEAD commit>``: its first
   cell (the install cell, unchanged) pip-installs ``attn_core`` from the committed HEAD,
   as it would from GitHub on Colab. Uncommitted changes are not part of the rehearsal.
3. It checks that the install left torch alone (same version, same files, no copy in the new
   environment), that ``attn_core`` was imported from the new environment (not from the
   checkout), and that the chapter ran to its claims table with every claim holding (the
   claims cell raises otherwise). With ``--smoke`` the chapter runs as on a GPU runtime
   (``ATTN_MODE=full``: the papers' shapes) for two steps a run, and its claims table must
   say it was not checked (a smoke run proves plumbing: the install, the worker processes
   of the installed package, the full-size code paths; the strict book build checks the
   fast-mode claims).

Exit status 0 when every chapter passed. ``tests/test_colab_rehearsal.py`` runs chapter 1.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CHAPTER = "01_gated_classifier"
#: Seconds one cell may run before the rehearsal fails (--cell-timeout). Fast mode's longest
#: cell takes well under a minute here; a kernel that stops answering fails in 5 minutes.
CELL_TIMEOUT = 300
#: A smoke run's cap on each training run (``--smoke``), as in the test command's smoke run.
SMOKE_STEPS = 2
KERNEL = "attn-colab-rehearsal"
#: Left out of the "preinstalled" packages: the book's own code (an editable install).
_OWN = ("attn_core", "__editable__", "_attn_core", "attn-core")

_PROBE = """\
import json, sys
import importlib.metadata as md
import torch
print(json.dumps({"version": torch.__version__, "file": torch.__file__,
                  "dist": str(md.distribution("torch")._path)}))
"""

_FINAL_CELL = """\
import json, resource, sys, attn_core, torch
import importlib.metadata as md
print("REHEARSAL " + json.dumps({"attn_core": attn_core.__file__,
                                 "python": sys.version.split()[0], "prefix": sys.prefix,
                                 "torch": torch.__version__, "torch_file": torch.__file__,
                                 "torch_dist": str(md.distribution("torch")._path),
                                 "kernel_peak_mb": resource.getrusage(
                                     resource.RUSAGE_SELF).ru_maxrss // 1024}))
"""

_EXECUTE = """\
import json, logging, sys
import nbformat
from nbclient import NotebookClient
nb_path, out_path, kernel, cwd, timeout, scripts = sys.argv[1:7]
sys.path.insert(0, scripts)
from nbclient_wakeup import install
install()
nb = nbformat.read(nb_path, as_version=4)
nb.cells.append(nbformat.v4.new_code_cell(sys.stdin.read()))
# every message nbclient sees, timestamped, next to the executed copy (kept on failure)
log = logging.getLogger("colab-rehearsal")
handler = logging.FileHandler(out_path + ".log")
handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
log.addHandler(handler)
log.setLevel(logging.DEBUG)
client = NotebookClient(nb, kernel_name=kernel, timeout=int(timeout), log=log,
                        resources={"metadata": {"path": cwd}})
try:
    client.execute()
finally:
    nbformat.write(nb, out_path)
"""


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({r.returncode}):\n"
                           f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


def _site_packages(python: Path) -> Path:
    return Path(_run([str(python), "-c", "import sysconfig; "
                      "print(sysconfig.get_paths()['purelib'])"]).stdout.strip())


def head_commit(root: Path = ROOT) -> str:
    return _run(["git", "-C", str(root), "rev-parse", "HEAD"]).stdout.strip()


def make_colab_env(where: Path, base: Path | None = None) -> Path:
    """A fresh venv in ``where/venv`` that sees the installed packages of ``base`` (an
    interpreter; default: the one running this script, this checkout's ``.venv``), minus the
    book's own code; returns its python, which runs ``base``'s Python."""
    creator = sys.executable if base is None else str(base)
    # no pip of its own: pip comes with the preinstalled stack, as on Colab (ensurepip: ~3 s)
    _run([creator, "-m", "venv", "--without-pip", str(where / "venv")])
    python = where / "venv" / "bin" / "python"
    pre = where / "preinstalled"
    pre.mkdir()
    ours = Path(sysconfig.get_paths()["purelib"]) if base is None else _site_packages(base)
    for entry in ours.iterdir():
        if entry.name.startswith(_OWN) or entry.suffix == ".pth":
            continue
        (pre / entry.name).symlink_to(entry)
    (_site_packages(python) / "colab_preinstalled.pth").write_text(f"{pre}\n")
    # a kernel of this environment, found by nbclient run from it
    _run([str(python), "-m", "ipykernel", "install", "--prefix", str(where / "venv"),
          "--name", KERNEL, "--display-name", "Colab rehearsal"])
    return python


def torch_state(python: Path) -> dict:
    return json.loads(_run([str(python), "-c", _PROBE]).stdout)


def kernel_env(environ) -> dict:
    """The environment the rehearsal's kernel starts from: this one without its ``ATTN_*``
    settings, its virtual environment and ``MPLBACKEND`` (Colab's kernels draw figures
    inline; the test command's smoke runs set Agg for their own kernels)."""
    return {k: v for k, v in environ.items()
            if not k.startswith(("ATTN_", "VIRTUAL_ENV")) and k != "MPLBACKEND"}


def rehearse(chapter: str, where: Path, python: Path, url: str,
             cell_timeout: int = CELL_TIMEOUT, smoke: bool = False) -> dict:
    """Run one chapter in the Colab-like environment; return what was checked. ``smoke``:
    in full mode, two training steps a run (``ATTN_MAX_STEPS=2``), claims not checked."""
    src = ROOT / "notebooks" / f"{chapter}.ipynb"
    if not src.exists():
        raise ValueError(f"chapter must name a notebook in notebooks/ (e.g. {DEFAULT_CHAPTER}); "
                         f"got {chapter!r}")
    run_dir = where / chapter
    run_dir.mkdir()
    nb = run_dir / src.name
    shutil.copy(src, nb)
    out = run_dir / f"{chapter}.executed.ipynb"
    env = kernel_env(os.environ)
    env.update(ATTN_MODE="fast", ATTN_CACHE=str(run_dir / "results"), ATTN_INSTALL_URL=url,
               PATH=f"{python.parent}{os.pathsep}{env.get('PATH', '')}",
               VIRTUAL_ENV=str(python.parent.parent), ATTN_THREADS="1")
    if smoke:
        env.update(ATTN_MODE="full", ATTN_MAX_STEPS=str(SMOKE_STEPS))
    before = torch_state(python)
    t0 = time.perf_counter()
    r = subprocess.run([str(python), "-c", _EXECUTE, str(nb), str(out), KERNEL, str(run_dir),
                        str(cell_timeout), str(ROOT / "scripts")],
                       input=_FINAL_CELL, capture_output=True, text=True, env=env, cwd=run_dir)
    seconds = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{chapter}: the notebook failed in the Colab rehearsal "
                           f"(executed copy: {out}; nbclient's messages: {out}.log):\n"
                           f"{r.stderr[-4000:]}")
    executed = json.loads(out.read_text())
    code = [(i, c) for i, c in enumerate(executed["cells"]) if c["cell_type"] == "code"]
    slowest = sorted(((_cell_seconds(c), i) for i, c in code), reverse=True)[:3]
    # the kernel's idle time between one cell's reply and the next cell's start
    gaps = [(_stamp(c, "iopub.execute_input") - _stamp(p, "shell.execute_reply"), i)
            for (_, p), (i, c) in zip(code, code[1:])]
    gap = max((g for g in gaps if not math.isnan(g[0])), default=(0.0, None))
    text = "\n".join("".join(o.get("text", "")) for c in executed["cells"]
                     if c["cell_type"] == "code" for o in c.get("outputs", []))
    line = next(x for x in text.splitlines() if x.startswith("REHEARSAL "))
    seen = json.loads(line[len("REHEARSAL "):])
    # torch as the chapter's kernel saw it, after the install cell (no process of its own)
    after = {"version": seen["torch"], "file": seen["torch_file"], "dist": seen["torch_dist"]}
    venv = str(python.parent.parent)
    problems = []
    if after != before:
        problems.append(f"the install changed torch: {before} -> {after}")
    if seen["torch_file"] != before["file"]:
        problems.append(f"the chapter imported torch from {seen['torch_file']}, not the "
                        f"preinstalled {before['file']}")
    site = _site_packages(python)
    own = [p.name for p in [*site.glob("torch"), *site.glob("torch-*.dist-info")]]
    if own:
        problems.append(f"pip put a torch of its own into the new environment: {own}")
    if os.path.realpath(seen["prefix"]) != os.path.realpath(venv):
        problems.append(f"the kernel ran in {seen['prefix']}, not the new environment {venv}")
    if not seen["attn_core"].startswith(venv):
        problems.append(f"attn_core came from {seen['attn_core']}, not the new environment "
                        f"{venv}")
    summary = (rf"smoke run \(ATTN_MAX_STEPS={SMOKE_STEPS}\): the \d+ claims of .+ were not "
               r"checked" if smoke else r"all \d+ claims of .+ hold\b")
    held = [x for x in text.splitlines() if re.match(summary, x.strip())]
    if not held:
        problems.append(f"no claims summary ({summary!r}) in the chapter's output")
    # a reader on Colab sees the chapter's figures: every cell that calls plt.show() showed
    # a PNG (a live interact cell draws inside its widget instead)
    shows = [c for _, c in code if "plt.show()" in "".join(c["source"])
             and "interact(" not in "".join(c["source"])]
    blank = [c.get("execution_count") for c in shows
             if not any("image/png" in o.get("data", {}) for o in c.get("outputs", []))]
    if not shows or blank:
        problems.append(f"figures not shown: {len(blank)} of the {len(shows)} cells that call "
                        f"plt.show() have no image (a non-inline matplotlib backend?)")
    if problems:
        raise RuntimeError(f"{chapter}: " + "; ".join(problems))
    return {"chapter": chapter, "seconds": round(seconds, 1), "torch": before["version"],
            "python": seen["python"],
            "attn_core": seen["attn_core"], "claims": held[-1].strip(),
            "kernel_peak_mb": seen["kernel_peak_mb"],
            "slowest_cells": [(i, round(t, 1)) for t, i in slowest],
            "largest_gap": (gap[1], round(gap[0], 1))}


def _stamp(cell: dict, key: str) -> float:
    """A timestamp (seconds) from an executed cell's timing metadata, or NaN."""
    value = cell.get("metadata", {}).get("execution", {}).get(key)
    if not value:
        return float("nan")
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def _cell_seconds(cell: dict) -> float:
    """How long a code cell of an executed notebook ran (nbclient's timing metadata), or 0."""
    t = _stamp(cell, "shell.execute_reply") - _stamp(cell, "iopub.execute_input")
    return 0.0 if math.isnan(t) else t


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", default=[DEFAULT_CHAPTER],
                        help="notebook names in notebooks/ (default: %(default)s), or 'all'")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--smoke", action="store_true",
                        help=f"full mode, {SMOKE_STEPS} steps a run, claims not checked")
    parser.add_argument("--cell-timeout", type=int, default=CELL_TIMEOUT, metavar="SECONDS",
                        help="fail when one cell runs longer (default: %(default)s)")
    parser.add_argument("--base-python", type=Path, default=None, metavar="PATH",
                        help="the interpreter whose environment plays Colab's preinstalled "
                             "stack (default: the one running this script)")
    args = parser.parse_args(argv)
    if args.cell_timeout < 1:
        parser.error(f"--cell-timeout must be a whole number of seconds >= 1; "
                     f"got {args.cell_timeout}")
    base = args.base_python
    if base is not None:
        # absolute, not resolved: a venv's python is a symlink that must stay the venv's
        base = Path(os.path.abspath(base.expanduser()))
        if not (base.is_file() and os.access(base, os.X_OK)):
            parser.error(f"--base-python must name a Python interpreter; got {args.base_python}")
    chapters = args.chapters
    if chapters == ["all"]:
        chapters = sorted(p.stem for p in (ROOT / "notebooks").glob("0*.ipynb"))
    url = f"git+file://{ROOT}@{head_commit()}"
    dirty = _run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"])
    if dirty.stdout.strip():
        print("[colab] note: the working tree has uncommitted changes; the rehearsal installs "
              "the committed HEAD without them")
    where = Path(tempfile.mkdtemp(prefix="attn-colab-"))
    print(f"[colab] rehearsal in {where}; the install cell gets ATTN_INSTALL_URL={url}")
    failed = 0
    try:
        t0 = time.perf_counter()
        python = make_colab_env(where, base)
        print(f"[colab] fresh environment with torch {torch_state(python)['version']} "
              f"preinstalled ({time.perf_counter() - t0:.0f} s)"
              + ("" if base is None else f"; the packages of {base}"))
        for chapter in chapters:
            try:
                got = rehearse(chapter, where, python, url, args.cell_timeout, args.smoke)
            except (RuntimeError, ValueError) as e:
                failed += 1
                print(f"[colab] FAILED {e}")
            else:
                print(f"[colab] {chapter}: passed in {got['seconds']:.0f} s -- Python "
                      f"{got['python']}, torch {got['torch']} untouched, attn_core from "
                      f"{got['attn_core']}; "
                      f"{got['claims']}; the kernel's peak memory {got['kernel_peak_mb']} MB; "
                      f"slowest cells (index, s): {got['slowest_cells']}; largest wait "
                      f"before a cell (index, s): {got['largest_gap']}")
    finally:
        if args.keep or failed:
            print(f"[colab] kept {where}")
        else:
            shutil.rmtree(where, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
