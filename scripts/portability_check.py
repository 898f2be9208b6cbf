"""The readers' stacks, rehearsed: fresh environments for other Pythons with the newest torch,
the book installed the Colab way, then the live checks of chapters 4-7 and the Colab rehearsal
of one chapter in each.

    python scripts/portability_check.py                         # Python 3.10, 3.12 and 3.13
    python scripts/portability_check.py --pythons 3.12 --skip-rehearsal
    python scripts/portability_check.py --torch 2.15.0 --steps 200 --chapter 05_multihead

A script to run when the stored results change, not a CI stage: the first run downloads
torch's CUDA wheels, a few GB for each Python. Per Python version:

1. An environment ``<--envs>/py3.X`` made with that interpreter (pyenv's
   ``~/.pyenv/versions/3.X*``, or ``python3.X`` on PATH; a Python not found is a row "not
   found here", not an error) holding the stack Colab has preinstalled: ``torch==VERSION`` and
   the newest numpy, matplotlib, pandas, seaborn, tqdm, joblib, ipywidgets, ipykernel,
   nbclient and nbformat pip picks for that Python. VERSION is ``--torch``, or by default the
   newest torch the registry serves *for that Python* (``pip index versions torch`` run by
   it): what a reader on that Python gets from ``pip install torch``. A Python for which
   ``--torch`` has no wheel is a row "no torch wheel", not an error. An environment is kept
   for the next run while its torch is the one wanted (``<env>/portability.json``).
2. The book installed the Colab way: the chapter's first code cell (the install cell, as the
   notebook has it) run by that environment's Python with
   ``ATTN_INSTALL_URL=git+file://<checkout>@<HEAD commit>`` -- a ``pip install`` of the
   committed HEAD that must leave torch alone (checked; an earlier run's ``attn_core`` is
   uninstalled first). Uncommitted changes are not part of the check.
3. The live checks of chapters 4-7: ``python -m attn_core.chapters --json OUT`` (with ``--steps
   N``: ``--steps N`` or ``--upto N``, whichever the installed command takes) in that
   environment, from a temporary folder outside the repository, with ``ATTN_MODE=fast
   ATTN_WORKERS=1 ATTN_THREADS=1`` and an empty results cache. ``--check-command`` replaces the
   command (a stand-in, or a subset): a shell command in which ``{python}``, ``{json}`` and
   ``{steps}`` are replaced (``$ATTN_CHECK_JSON`` names the JSON too, and the environment's
   ``bin`` comes first on PATH); it must write the JSON ``attn_core.stored`` writes:
   ``{"platform": {...}, "ok": bool, "checks": [{"name", "ok", "ratio", ...}]}`` (ratio:
   largest difference / allowed, <= 1 passes; null when a check could not compare).
4. The Colab rehearsal of ``--chapter`` with that environment as Colab's preinstalled stack:
   ``scripts/colab_rehearsal.py --base-python <env>/bin/python CHAPTER``.

Every pip runs with this machine's pip configuration unless ``--no-pip-config``
(``PIP_CONFIG_FILE=/dev/null``: no configuration file is read, as on Colab). A machine whose
configuration caps torch below the wanted version (a constraints file) fails the environment
with a note saying so -- and would let the install cell downgrade a kept environment's torch
(caught: "the install changed torch").

It writes ``--json`` (default ``benchmarks/portability/results.json``; rewritten after each
Python, so an interrupted run keeps the rows it finished) and prints a Markdown table for
``book/setup.md``. Exit status 1 when a row failed, or when no row could run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PYTHONS = ("3.10", "3.12", "3.13")
DEFAULT_CHAPTER = "04_permutation_copy"
DEFAULT_ENVS = Path("~/.cache/attn_portability")
DEFAULT_JSON = ROOT / "benchmarks" / "portability" / "results.json"
#: Colab's preinstalled stack, as far as the book uses it (torch is pinned separately;
#: jupyter-book and the test tools are not on Colab).
STACK = ("numpy", "matplotlib", "pandas", "seaborn", "tqdm", "joblib", "ipywidgets",
         "ipykernel", "nbclient", "nbformat")
STAMP = "portability.json"

_PROBE = """\
import json, sys
import torch
try:
    capability = torch.backends.cpu.get_cpu_capability()
except Exception as e:  # older torch
    capability = f"? ({type(e).__name__})"
try:
    import attn_core
    book = attn_core.__file__
except ImportError:
    book = None
print(json.dumps({"python": sys.version.split()[0], "prefix": sys.prefix,
                  "torch": torch.__version__, "torch_file": torch.__file__,
                  "cuda": torch.version.cuda, "capability": capability, "attn_core": book}))
"""

_VERSIONS = """\
import json, sys
import importlib.metadata as md
out = {}
for name in sys.argv[1:]:
    try:
        out[name] = md.version(name)
    except md.PackageNotFoundError:
        out[name] = None
print(json.dumps(out))
"""


class NoWheel(Exception):
    """The registry has no wheel of the wanted torch for this Python."""


def say(message: str) -> None:
    print(f"[portability] {message}", flush=True)


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)


def _check(cmd, what: str, **kw) -> subprocess.CompletedProcess:
    r = _run(cmd, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{what} failed ({r.returncode}):\n{r.stdout[-2000:]}\n"
                           f"{r.stderr[-2000:]}")
    return r


def _stream(cmd, prefix: str, *, show=None, log_path: Path | None = None, **kw):
    """Run ``cmd``, printing its output line by line (those ``show`` accepts) as it comes;
    return (exit status, every line)."""
    lines = []
    with subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace", bufsize=1,
                          **kw) as p:
        for line in p.stdout:
            line = line.rstrip("\n")
            lines.append(line)
            if show is None or show(line):
                print(f"{prefix} {line}", flush=True)
    if log_path is not None:
        log_path.write_text("\n".join(lines) + "\n")
    return p.returncode, lines


def head_commit() -> str:
    return _check(["git", "-C", ROOT, "rev-parse", "HEAD"], "git rev-parse").stdout.strip()


def install_cell(chapter: str) -> str:
    """The source of ``chapter``'s first code cell: the install cell a reader runs."""
    nb = json.loads((ROOT / "notebooks" / f"{chapter}.ipynb").read_text())
    code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    source = "".join(code["source"])
    if "ATTN_INSTALL_URL" not in source:
        raise ValueError(f"the first code cell of {chapter} is not the install cell (it does "
                         f"not read ATTN_INSTALL_URL)")
    return source


def _version_key(path: Path) -> tuple:
    return tuple(int(x) if x.isdigit() else -1 for x in re.split(r"[.]", path.parent.parent.name))


def find_python(version: str) -> tuple[Path, str] | None:
    """An interpreter of Python ``version`` ("3.12") and its full version, or None."""
    candidates = []
    roots = [Path(os.environ["PYENV_ROOT"])] if os.environ.get("PYENV_ROOT") else []
    roots.append(Path.home() / ".pyenv")
    for root in roots:
        found = [p for p in (root / "versions").glob(f"{version}*/bin/python3")
                 if re.fullmatch(rf"{re.escape(version)}\.\d+", p.parent.parent.name)]
        candidates += sorted(found, key=_version_key, reverse=True)
    for name in (f"python{version}",):
        if shutil.which(name):
            candidates.append(Path(shutil.which(name)))
    candidates += [Path(f"/usr/bin/python{version}"), Path(f"/usr/local/bin/python{version}")]
    for c in candidates:
        if not c.exists():
            continue
        r = _run([c, "-c", "import sys; print('%d.%d' % sys.version_info[:2]); "
                           "print(sys.version.split()[0])"])
        lines = r.stdout.split()
        if r.returncode == 0 and len(lines) == 2 and lines[0] == version:
            return c, lines[1]
    return None


def clean_env(python: Path, **extra: str) -> dict:
    """The environment a command of the venv of ``python`` runs with: nothing of the
    caller's ``ATTN_*`` settings, virtualenv or PYTHONPATH (which could put the checkout's
    attn_core first); the venv's ``bin`` first on PATH."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ATTN_", "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME",
                                "PYTHONSTARTUP", "CONDA_PREFIX"))}
    env.update(PATH=f"{python.parent}{os.pathsep}{env.get('PATH', '')}",
               VIRTUAL_ENV=str(python.parent.parent), PYTHONUNBUFFERED="1", **extra)
    return env


def probe(python: Path, cwd: Path) -> dict:
    r = _check([python, "-c", _PROBE], f"{python}: import torch", cwd=cwd,
               env=clean_env(python))
    return json.loads(r.stdout.strip().splitlines()[-1])


def torch_versions(python: Path) -> tuple[str, list[str]]:
    """The newest torch the registry serves for ``python``, and every version it serves."""
    r = _check([python, "-m", "pip", "index", "versions", "torch", "--only-binary=:all:"],
               "pip index versions torch", env=clean_env(python), cwd=tempfile.gettempdir())
    newest = re.search(r"^torch \(([^)]+)\)", r.stdout, re.M)
    available = re.search(r"^Available versions: (.*)$", r.stdout, re.M)
    if not newest:
        raise RuntimeError(f"could not read the newest torch from pip index:\n{r.stdout}\n"
                           f"{r.stderr[-2000:]}")
    return newest.group(1), (available.group(1).split(", ") if available else [newest.group(1)])


def _installed(python: Path, *names: str):
    """The installed versions of ``names`` in the environment of ``python`` (None: not
    installed; one name: its version)."""
    r = _run([python, "-c", _VERSIONS, *names], env=clean_env(python))
    got = json.loads(r.stdout) if r.returncode == 0 else dict.fromkeys(names)
    return got[names[0]] if len(names) == 1 else got


def _size_mb(path: Path) -> int | None:
    r = _run(["du", "-sm", path])
    return int(r.stdout.split()[0]) if r.returncode == 0 else None


def _new_venv(interpreter: Path, env_dir: Path, label: str) -> Path:
    if env_dir.exists():
        shutil.rmtree(env_dir)
    _check([interpreter, "-m", "venv", env_dir], f"{interpreter} -m venv")
    python = env_dir / "bin" / "python"
    _check([python, "-m", "pip", "install", "-q", "--upgrade", "pip"], "pip upgrade",
           env=clean_env(python), cwd=tempfile.gettempdir())
    say(f"{label}: new environment {env_dir}")
    return python


def _pip_line(line: str) -> bool:
    """The lines of pip's output shown while it installs (all of them go to the log)."""
    line = line.strip()
    big = re.match(r"Downloading \S+ \(([\d.]+) (MB|GB)\)", line)
    if big:  # the large wheels only (torch, CUDA, triton, numpy...)
        return big.group(2) == "GB" or float(big.group(1)) >= 10
    return line.startswith(("Collecting torch", "Successfully", "ERROR", "error"))


def prepare_env(interpreter: Path, full: str, env_dir: Path, wanted: str | None,
                label: str) -> tuple[Path, dict]:
    """The environment of ``interpreter`` in ``env_dir`` with the wanted torch and Colab's
    stack, built or kept from an earlier run; returns its python and its stamp."""
    python = env_dir / "bin" / "python"
    stamp_path = env_dir / STAMP
    stamp = None
    if stamp_path.exists() and python.exists():
        try:
            stamp = json.loads(stamp_path.read_text())
        except ValueError:
            stamp = None
        if stamp and (stamp.get("python") != full
                      or _installed(python, "torch") != stamp["packages"]["torch"]):
            stamp = None  # another interpreter, or a torch changed since: built again
    if stamp and wanted and stamp["torch_wanted"] == wanted:
        say(f"{label}: keeping {env_dir} (torch {wanted}, built {stamp['built']})")
        return python, {**stamp, "reused": True}
    if stamp is None:
        python = _new_venv(interpreter, env_dir, label)
    newest, available = torch_versions(python)
    want = wanted or newest
    if want not in available:
        raise NoWheel(f"no torch {want} wheel for Python {full} (the newest it has: {newest})")
    if stamp and stamp["torch_wanted"] == want:
        say(f"{label}: keeping {env_dir} (torch {want}, built {stamp['built']})")
        return python, {**stamp, "reused": True}
    if stamp is not None:
        say(f"{label}: {env_dir} has torch {stamp['torch_wanted']}, not {want}: built again")
        python = _new_venv(interpreter, env_dir, label)
    say(f"{label}: installing torch=={want} and {' '.join(STACK)} (the first time several GB: "
        f"torch's CUDA wheels; pip's full output in {env_dir / 'pip-install.log'})")
    t0 = time.perf_counter()
    rc, lines = _stream([python, "-m", "pip", "install", "--progress-bar", "off",
                         f"torch=={want}", *STACK], f"[{label} pip]", show=_pip_line,
                        log_path=env_dir / "pip-install.log", env=clean_env(python),
                        cwd=tempfile.gettempdir())
    seconds = time.perf_counter() - t0
    if rc != 0:
        hint = ""
        if any("(constraint)" in x for x in lines):
            hint = (f"\n(a pip constraint of this machine refuses torch {want}: `pip config "
                    f"debug` shows where; --no-pip-config runs pip without this machine's pip "
                    f"configuration files, as on Colab)")
        raise RuntimeError(f"pip install torch=={want} failed ({rc}):\n"
                           + "\n".join(lines[-30:]) + hint)
    versions = _installed(python, "torch", "pip", *STACK)
    stamp = {"torch_wanted": want, "python": full, "interpreter": str(interpreter),
             "built": datetime.now(timezone.utc).isoformat(timespec="seconds"),
             "install_seconds": round(seconds), "size_mb": _size_mb(env_dir),
             "packages": versions}
    stamp_path.write_text(json.dumps(stamp, indent=1) + "\n")
    say(f"{label}: environment ready in {seconds:.0f} s, {stamp['size_mb']} MB")
    return python, {**stamp, "reused": False}


def _constraint_hint(python: Path) -> str:
    """A note naming the pip constraints this machine's configuration sets, if any."""
    r = _run([python, "-m", "pip", "config", "list"], env=clean_env(python))
    found = [x for x in r.stdout.splitlines() if "constraint" in x.lower()]
    if os.environ.get("PIP_CONSTRAINT"):
        found.append(f"PIP_CONSTRAINT={os.environ['PIP_CONSTRAINT']}")
    if not found:
        return ""
    return (f" (this machine's pip configuration sets constraints: {'; '.join(found)}; "
            f"--no-pip-config runs pip without its configuration files, as on Colab)")


def install_book(python: Path, url: str, cell: str, work: Path,
                 label: str) -> tuple[dict, dict]:
    """Install attn_core as a chapter's install cell does; check that torch was left alone
    and that attn_core comes from the environment. Returns what was checked, and the
    environment's probe after the install."""
    _run([python, "-m", "pip", "uninstall", "-y", "-q", "attn_core"], env=clean_env(python),
         cwd=work)
    before = probe(python, work)
    t0 = time.perf_counter()
    rc, lines = _stream([python, "-c", cell], f"[{label} install]", cwd=work,
                        env=clean_env(python, ATTN_INSTALL_URL=url))
    seconds = time.perf_counter() - t0
    problems = []
    if rc != 0:
        problems.append(f"the install cell failed ({rc}): " + " / ".join(lines[-10:]))
        after = before
    else:
        after = probe(python, work)
        if (after["torch"], after["torch_file"]) != (before["torch"], before["torch_file"]):
            problems.append(f"the install changed torch: {before['torch']} "
                            f"({before['torch_file']}) -> {after['torch']} "
                            f"({after['torch_file']})" + _constraint_hint(python))
        prefix = os.path.realpath(after["prefix"])
        if not after["attn_core"] or not os.path.realpath(after["attn_core"]).startswith(prefix):
            problems.append(f"attn_core imported from {after['attn_core']}, not from the "
                            f"environment {after['prefix']}")
    return {"ok": not problems, "seconds": round(seconds, 1), "url": url,
            "attn_core": after.get("attn_core"), "problems": problems}, after


def _check_module(python: Path, work: Path) -> str:
    """The module that runs the live checks in the installed package: ``attn_core.chapters``
    (the chapter registry's), or ``attn_core.stored`` in a package from before it."""
    r = _run([python, "-m", "attn_core.chapters", "--help"], cwd=work, env=clean_env(python))
    return "attn_core.chapters" if r.returncode == 0 else "attn_core.stored"


def _steps_option(python: Path, work: Path, module: str = "attn_core.chapters") -> str:
    """How ``python -m <module>`` of the installed package spells "train only the first N
    steps": ``--steps`` or ``--upto``."""
    r = _run([python, "-m", module, "--help"], cwd=work, env=clean_env(python))
    for option in ("--steps", "--upto"):
        if re.search(rf"{option}\b", r.stdout):
            return option
    raise RuntimeError(f"python -m {module} of the installed package takes no --steps "
                       "(nor --upto) option:\n" + (r.stdout + r.stderr)[-1500:])


def live_checks(python: Path, work: Path, args, label: str) -> dict:
    """The live checks of chapters 4-7 (or ``--check-command``) in the environment."""
    out = work / "live-checks.json"
    env = clean_env(python, ATTN_MODE="fast", ATTN_WORKERS="1", ATTN_THREADS="1",
                    ATTN_CACHE=str(work / "cache"), ATTN_CHECK_JSON=str(out))
    if args.check_command:
        command = (args.check_command.replace("{python}", str(python))
                   .replace("{json}", str(out))
                   .replace("{steps}", "" if args.steps is None else str(args.steps)))
        cmd = ["/bin/sh", "-c", command]
    else:
        module = _check_module(python, work)
        cmd = [python, "-m", module, "--json", out]
        if args.steps is not None:
            try:
                cmd += [_steps_option(python, work, module), str(args.steps)]
            except RuntimeError as e:
                return {"ok": False, "command": " ".join(map(str, cmd)), "problems": [str(e)]}
    t0 = time.perf_counter()
    rc, lines = _stream(cmd, f"[{label} checks]", cwd=work, env=env,
                        log_path=work / "live-checks.log")
    seconds = time.perf_counter() - t0
    result = {"ok": False, "exit_status": rc, "seconds": round(seconds, 1),
              "command": " ".join(map(str, cmd)), "problems": []}
    try:
        report = json.loads(out.read_text())
        checks = report["checks"]
        # a check that could not compare at all has ratio null (infinite)
        ratios = [(math.inf if c["ratio"] is None else float(c["ratio"]), c["name"])
                  for c in checks]
    except (OSError, ValueError, KeyError, TypeError) as e:
        result["problems"].append(f"no readable JSON report at {out} ({type(e).__name__}: {e}); "
                                  f"the last lines: " + " / ".join(lines[-8:])
                                  + ("" if args.check_command else
                                     " (the environment has the committed HEAD's attn_core: "
                                     "is `python -m attn_core.chapters --json` committed?)"))
        return result
    failed = [c["name"] for c in checks if not c.get("ok")]
    largest = max(ratios, default=(math.nan, None))
    result.update(n=len(checks), failed=failed,
                  largest_ratio=largest[0] if math.isfinite(largest[0]) else None,
                  largest_check=largest[1], platform=report.get("platform", {}),
                  checks=checks)
    if rc != 0:
        result["problems"].append(f"the command exited with {rc}")
    if not report.get("ok") or failed:
        result["problems"].append(f"{len(failed)} of {len(checks)} checks failed: "
                                  f"{', '.join(failed) or '(the report says not ok)'}")
    if not checks:
        result["problems"].append("the report lists no checks")
    result["ok"] = not result["problems"]
    return result


def rehearsal(python: Path, chapter: str, label: str) -> dict:
    """scripts/colab_rehearsal.py on ``chapter``, with the environment as Colab's stack."""
    cmd = [sys.executable, ROOT / "scripts" / "colab_rehearsal.py", chapter,
           "--base-python", python]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTN_", "PYTHONPATH"))}
    t0 = time.perf_counter()
    rc, lines = _stream(cmd, f"[{label} rehearsal]", env=env, cwd=tempfile.gettempdir())
    text = "\n".join(lines)
    passed = re.search(rf"\b{re.escape(chapter)}: passed in (\d+) s", text)
    result = {"ok": rc == 0 and bool(passed), "chapter": chapter,
              "seconds": int(passed.group(1)) if passed else None,
              "wall_seconds": round(time.perf_counter() - t0, 1), "exit_status": rc}
    if not result["ok"]:
        result["problems"] = [" / ".join(x for x in lines if "FAILED" in x or "kept" in x)
                              or " / ".join(lines[-8:])]
    return result


def check_python(version: str, args, url: str, cell: str) -> dict:
    label = f"py{version}"
    row = {"python": version, "status": "failed", "problems": []}
    found = find_python(version)
    if found is None:
        say(f"{label}: no Python {version} here (pyenv, python{version} on PATH, /usr/bin)")
        return {**row, "status": "not found", "note": "not found here"}
    interpreter, full = found
    row.update(python_full=full, interpreter=str(interpreter))
    say(f"{label}: Python {full} ({interpreter})")
    try:
        python, stamp = prepare_env(interpreter, full, args.envs / label, args.torch, label)
    except NoWheel as e:
        say(f"{label}: {e}")
        return {**row, "status": "no wheel", "note": str(e)}
    except (RuntimeError, OSError) as e:
        row["problems"].append(f"the environment: {e}")
        return row
    row["environment"] = {"path": str(python.parent.parent), **stamp}
    work = Path(tempfile.mkdtemp(prefix=f"attn-portability-{label}-"))
    try:
        info = probe(python, work)
        row.update(torch=info["torch"], capability=info["capability"], cuda=info["cuda"])
        say(f"{label}: torch {info['torch']}, CPU capability {info['capability']}")
        row["install"], after = install_book(python, url, cell, work, label)
        row["problems"] += row["install"]["problems"]
        if row["install"]["ok"]:
            say(f"{label}: attn_core installed the Colab way in {row['install']['seconds']:.0f} s "
                f"({after['attn_core']}); torch untouched")
            row["live"] = live_checks(python, work, args, label)
            row["problems"] += row["live"]["problems"]
            if not args.skip_rehearsal:
                row["rehearsal"] = rehearsal(python, args.chapter, label)
                row["problems"] += row["rehearsal"].get("problems", [])
    except (RuntimeError, OSError, ValueError) as e:
        row["problems"].append(str(e))
    if not row["problems"]:
        row["status"] = "passed"
    if args.keep or row["problems"]:
        row["work"] = str(work)
        say(f"{label}: kept {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return row


def _machine() -> dict:
    model = None
    try:
        model = next((x.split(":", 1)[1].strip() for x in Path("/proc/cpuinfo").read_text()
                      .splitlines() if x.startswith("model name")), None)
    except OSError:
        pass
    return {"cpu": model or platform.processor(), "cores": os.cpu_count(),
            "platform": platform.platform()}


def _ratio(x) -> str:
    return "inf" if x is None else f"{x:.3g}"


def table(rows: list[dict]) -> str:
    out = ["| Python | torch | CPU capability | live checks | largest difference (ratio to "
           "allowed) | rehearsal |", "|---|---|---|---|---|---|"]
    for r in rows:
        if r["status"] in ("not found", "no wheel"):
            out.append(f"| {r.get('python_full', r['python'])} | {r['note']} | | | | |")
            continue
        live, reh = r.get("live"), r.get("rehearsal")
        if live is None:
            checks = "not run (" + ("the install failed" if r.get("install") else
                                   "no environment") + ")"
        elif "n" not in live:
            checks = "FAIL (no report)"
        else:
            word = "pass" if live["ok"] else "FAIL"
            checks = f"{word} ({live['n'] - len(live['failed'])} of {live['n']})"
        largest = "--"
        if live and live.get("largest_check") is not None:
            largest = f"{_ratio(live['largest_ratio'])} ({live['largest_check']})"
        if reh is None:
            rehearsed = "--" if live is None else "skipped"
        else:
            rehearsed = (f"{'pass' if reh['ok'] else 'FAIL'} ({reh['chapter']}"
                         + (f", {reh['seconds']} s)" if reh.get("seconds") is not None else ")"))
        out.append(f"| {r.get('python_full', r['python'])} | {r.get('torch', '--')} | "
                   f"{r.get('capability', '--')} | {checks} | {largest} | {rehearsed} |")
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pythons", nargs="+", default=list(DEFAULT_PYTHONS), metavar="3.X",
                        help="Python versions (default: %(default)s)")
    parser.add_argument("--torch", default=None, metavar="VERSION",
                        help="the torch to install (default: the newest the registry serves "
                             "for each Python)")
    parser.add_argument("--envs", type=Path, default=DEFAULT_ENVS, metavar="DIR",
                        help="where the environments live, kept between runs "
                             "(default: %(default)s)")
    parser.add_argument("--chapter", default=DEFAULT_CHAPTER,
                        help="the notebook the Colab rehearsal runs, and whose install cell "
                             "installs the book (default: %(default)s)")
    parser.add_argument("--steps", "--upto", type=int, default=None, metavar="N",
                        help="train only the first N steps in the live checks (passed to "
                             "python -m attn_core.stored as --steps or --upto, whichever it "
                             "takes)")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, metavar="PATH",
                        help="where the results go (default: benchmarks/portability/"
                             "results.json)")
    parser.add_argument("--skip-rehearsal", action="store_true",
                        help="run the live checks only")
    parser.add_argument("--check-command", default=None, metavar="CMD",
                        help="a shell command run instead of the live checks; {python}, "
                             "{json} and {steps} are replaced; it must write the JSON report "
                             "to {json} (also $ATTN_CHECK_JSON)")
    parser.add_argument("--no-pip-config", action="store_true",
                        help="run every pip (the environments', the install cell's) without "
                             "this machine's pip configuration files (PIP_CONFIG_FILE="
                             f"{os.devnull}): a constraints file capping torch, extra indexes; "
                             "PIP_* variables still apply")
    parser.add_argument("--keep", action="store_true",
                        help="keep each Python's temporary folder (kept anyway on failure)")
    args = parser.parse_args(argv)
    bad = [v for v in args.pythons if not re.fullmatch(r"3\.\d+", v)]
    if bad:
        parser.error(f"--pythons takes versions like 3.12; got {', '.join(bad)}")
    args.pythons = list(dict.fromkeys(args.pythons))
    if args.torch is not None and not re.fullmatch(r"\d+(\.\d+)*(\w+\d*)?(\+[\w.]+)?",
                                                   args.torch):
        parser.error(f"--torch takes a version like 2.15.0; got {args.torch!r}")
    if args.steps is not None and args.steps < 1:
        parser.error(f"--steps must be a whole number >= 1; got {args.steps}")
    if not (ROOT / "notebooks" / f"{args.chapter}.ipynb").exists():
        parser.error(f"--chapter must name a notebook in notebooks/ (e.g. {DEFAULT_CHAPTER}); "
                     f"got {args.chapter!r}")
    if args.check_command is not None and not args.check_command.strip():
        parser.error("--check-command is empty")
    args.envs = Path(os.path.abspath(args.envs.expanduser()))
    args.json = Path(os.path.abspath(args.json.expanduser()))
    try:
        cell = install_cell(args.chapter)
        commit = head_commit()
    except (ValueError, RuntimeError) as e:
        parser.error(str(e))
    url = f"git+file://{ROOT}@{commit}"
    dirty = _run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"])
    if dirty.stdout.strip():
        say("note: the working tree has uncommitted changes; the environments install the "
            "committed HEAD without them")
    args.envs.mkdir(parents=True, exist_ok=True)
    if args.no_pip_config:
        os.environ["PIP_CONFIG_FILE"] = os.devnull  # every pip below inherits it
    say(f"Pythons {' '.join(args.pythons)}; torch {args.torch or 'the newest for each'}; "
        f"environments in {args.envs}; the book from {url}")
    results = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "commit": commit, "machine": _machine(),
               "torch_requested": args.torch or "newest for each Python",
               "chapter": args.chapter, "steps": args.steps,
               "check_command": args.check_command, "skip_rehearsal": args.skip_rehearsal,
               "pip_config": "ignored" if args.no_pip_config else "this machine's",
               "rows": []}
    for version in args.pythons:
        try:
            row = check_python(version, args, url, cell)
        except Exception as e:  # one Python's surprise is its row, not the end of the run
            row = {"python": version, "status": "failed",
                   "problems": [f"{type(e).__name__}: {e}"]}
        results["rows"].append(row)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1, default=str) + "\n")
        word = {"passed": "passed", "failed": "FAILED"}.get(row["status"], row["status"])
        say(f"py{version}: {word}" + "".join(f"\n    {p}" for p in row["problems"]))
    say(f"results in {args.json}")
    print()
    print(f"Measured on {results['machine']['cpu']} ({results['machine']['cores']} cores) on "
          f"{results['date'][:10]}, commit {commit[:7]}:")
    print()
    print(table(results["rows"]))
    ran = [r for r in results["rows"] if r["status"] in ("passed", "failed")]
    failed = [r for r in ran if r["status"] == "failed"]
    return 1 if failed or not ran else 0


if __name__ == "__main__":
    sys.exit(main())
