"""What a reader, a re-user and a contributor find first (issue #32): the licenses, the
citation, the workflows that publish the book and run its tests, the README and
CONTRIBUTING.md.

- ``LICENSE`` (MIT, the code) and ``LICENSE-text`` (CC BY 4.0, the prose and figures, and
  which file is under which) exist, and ``pyproject.toml`` and the book's footer name them;
- ``CITATION.cff`` is valid against the CFF 1.2.0 schema (the copy ``check-jsonschema``
  ships: offline) and agrees with ``_config.yml`` (the repository), ``pyproject.toml``
  (the version) and the intro page's "How to cite";
- ``.github/workflows/*.yml`` are valid against the GitHub workflow schema that
  ``check-jsonschema`` ships (``--builtin-schema vendor.github-workflows``, offline), and the
  commands they run are exactly the README's two commands: ``book.yml`` builds with the
  first on pushes to the configured branch and deploys ``_build/html`` to Pages,
  ``tests.yml`` runs the second on every push and pull request;
- the README is short, its links and layout name files that exist, it keeps one dated
  performance table, and the timing history in ``benchmarks/README.md`` is newest first;
- every command and repository path that ``CONTRIBUTING.md`` names exists, and so does
  every option it passes to the project's own scripts.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import textwrap
import time
from datetime import date
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
BOOK_WF, TESTS_WF = WORKFLOWS / "book.yml", WORKFLOWS / "tests.yml"
README = ROOT / "README.md"
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
CITATION = ROOT / "CITATION.cff"
MIT_URL = "https://opensource.org/license/mit"
CC_BY = "https://creativecommons.org/licenses/by/4.0/"
YEARS = "2025-2026"
HOLDER = "How Attention Learns contributors"
#: The most lines a README a newcomer reads to the end may have (issue #32: ~150).
README_MAX_LINES = 150


# ----------------------------------------------------------------------------- helpers
def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _pyproject() -> dict:
    try:
        import tomllib                          # Python >= 3.11
    except ModuleNotFoundError:                 # Python 3.10
        tomllib = pytest.importorskip("tomli")
    return tomllib.loads(_text(ROOT / "pyproject.toml"))


def _config() -> dict:
    return yaml.safe_load(_text(ROOT / "_config.yml"))


def _repository() -> tuple[str, str]:
    repo = _config()["repository"]
    return repo["url"].rstrip("/"), repo.get("branch", "main")


def _pages_url() -> str:
    """Where GitHub Pages serves the repository's book: https://<owner>.github.io/<name>/."""
    m = re.fullmatch(r"https://github\.com/([^/]+)/([^/]+)", _repository()[0])
    assert m, f"_config.yml's repository.url is not a GitHub address: {_repository()[0]}"
    return f"https://{m.group(1).lower()}.github.io/{m.group(2)}/"


def _check_jsonschema(schema: str, *paths: Path) -> subprocess.CompletedProcess:
    """check-jsonschema against one of the schemas it ships (no network)."""
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema",
                           schema, *map(str, paths)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)


def _workflow(path: Path) -> dict:
    wf = yaml.safe_load(_text(path))
    if True in wf:                      # YAML 1.1 reads the key `on` as the boolean True
        wf["on"] = wf.pop(True)
    return wf


def _run_lines(wf: dict) -> list[str]:
    """Every command line of every ``run:`` step (comments and blank lines dropped)."""
    out = []
    for job in wf["jobs"].values():
        for step in job.get("steps", []):
            for line in str(step.get("run", "")).splitlines():
                line = line.split(" #")[0].strip()
                if line and not line.startswith("#"):
                    out.append(line)
    return out


def _fenced_blocks(text: str, lang: str | None = None) -> list[str]:
    """The bodies of the ```-fenced blocks of a Markdown text (of one language if given)."""
    blocks = re.findall(r"^```([\w-]*)[^\n]*\n(.*?)^```\s*$", text, flags=re.M | re.S)
    return [body for info, body in blocks if lang is None or info == lang]


def _section(text: str, heading: str) -> str:
    """The body of the Markdown section ``## heading`` (up to the next ``## ``)."""
    m = re.search(rf"^## {re.escape(heading)}\s*\n(.*?)(?=^## |\Z)", text, flags=re.M | re.S)
    assert m, f"no section '## {heading}'"
    return m.group(1)


def _commands(block: str) -> list[str]:
    """The commands of a shell code block: comments dropped, continuations joined."""
    block = re.sub(r"\\\n\s*", " ", block)
    out = []
    for line in block.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        if line:
            out.append(line)
    return out


def readme_commands() -> list[str]:
    """The README's two commands: the bash block of its section "The two commands"."""
    blocks = _fenced_blocks(_section(_text(README), "The two commands"), "bash")
    assert len(blocks) == 1, "the README's 'The two commands' section needs one bash block"
    return _commands(blocks[0])


# ----------------------------------------------------------------------------- licenses
def test_license_is_mit_for_the_code():
    text = _text(ROOT / "LICENSE")
    assert text.startswith("MIT License\n")
    assert f"Copyright (c) {YEARS} {HOLDER}" in text
    assert "Permission is hereby granted, free of charge" in text
    assert 'THE SOFTWARE IS PROVIDED "AS IS"' in text


def test_license_text_is_cc_by_and_says_what_each_license_covers():
    text = _text(ROOT / "LICENSE-text")
    assert "Creative Commons Attribution 4.0 International (CC BY 4.0)" in text
    assert CC_BY + "legalcode" in text
    code = re.search(r"^Code: MIT License.*?\n(.*?)^Prose and figures", text, re.M | re.S)
    prose = re.search(r"^Prose and figures: CC BY 4\.0.*?\n(.*?)^Not ours", text, re.M | re.S)
    assert code and prose, "LICENSE-text needs its 'Code: MIT' and 'Prose and figures' parts"
    for part in ("attn_core/", "scripts/", "tests/", "benchmarks/", "code cells"):
        assert part in code.group(1), f"LICENSE-text does not put {part} under MIT"
    for part in ("book/", "text) cells", "figure"):
        assert part in prose.group(1), f"LICENSE-text does not put {part} under CC BY 4.0"
    # every repository path it names exists (so the split stays true as files move)
    paths = set(re.findall(r"(?<![\w/.])((?:attn_core|scripts|tests|benchmarks|book|notebooks)"
                           r"/[\w./-]*)", text))
    missing = sorted(p for p in paths if not (ROOT / p.rstrip(".,)")).exists())
    assert not missing, f"LICENSE-text names paths that do not exist: {missing}"


def test_pyproject_names_the_license():
    meta = _pyproject()
    assert meta["project"]["license"] == "MIT"
    assert meta["project"]["license-files"] == ["LICENSE"]
    # an SPDX `license` string needs setuptools >= 77 (PEP 639); older ones refuse it
    req = [r for r in meta["build-system"]["requires"] if r.startswith("setuptools")]
    m = re.fullmatch(r"setuptools>=(\d+)(?:\.\d+)*", req[0]) if req else None
    assert m and int(m.group(1)) >= 77, f"build-system needs setuptools>=77; got {req}"


def test_book_footer_names_both_licenses():
    cfg = _config()
    footer = cfg["html"]["extra_footer"]
    assert f'<a href="{CC_BY}">CC BY 4.0</a>' in footer
    assert f'<a href="{MIT_URL}">MIT License</a>' in footer
    assert str(cfg["copyright"]) == YEARS and cfg["author"] == HOLDER


# ----------------------------------------------------------------------------- citation
def test_citation_cff_is_valid_against_the_cff_1_2_schema():
    r = _check_jsonschema("vendor.citation-file-format", CITATION)
    assert r.returncode == 0, f"CITATION.cff is not valid CFF 1.2.0:\n{r.stdout}{r.stderr}"


def test_citation_cff_agrees_with_the_repository():
    cff = yaml.safe_load(_text(CITATION))
    version = _pyproject()["project"]["version"]
    url, pages = _repository()[0], _pages_url()
    fix = ("CITATION.cff, README.md and book/intro.md name the book's address: keep them in "
           "line with _config.yml's repository.url")
    assert cff["cff-version"] == "1.2.0"
    assert cff["title"] == "How Attention Learns"
    assert cff["authors"] == [{"name": HOLDER}]
    assert str(cff["version"]) == version, "CITATION.cff's version is not pyproject.toml's"
    assert sorted(cff["license"]) == ["CC-BY-4.0", "MIT"]
    pref = cff["preferred-citation"]
    assert (cff["repository-code"], pref["repository-code"]) == (url, url), fix
    assert (cff["url"], pref["url"]) == (pages, pages), fix
    assert pages in _text(README), fix


def test_intro_page_says_how_to_cite():
    intro = _text(ROOT / "book" / "intro.md")
    body = _section(intro, "How to cite")
    assert "CITATION.cff" in body
    bib = _fenced_blocks(body, "bibtex")
    assert len(bib) == 1, "the intro's 'How to cite' needs one BibTeX block"
    assert "title  = {How Attention Learns}" in bib[0]
    assert f"url    = {{{_pages_url()}}}" in bib[0], "the BibTeX url is not the book's address"
    assert all(len(line) <= 88 for line in bib[0].splitlines()), "a BibTeX line is too wide"


# ----------------------------------------------------------------------------- workflows
def test_workflows_are_valid_against_the_github_workflow_schema():
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert [f.name for f in files] == ["book.yml", "tests.yml"]
    r = _check_jsonschema("vendor.github-workflows", *files)
    assert r.returncode == 0, f"a workflow is not valid:\n{r.stdout}{r.stderr}"


def test_readme_names_the_two_commands():
    assert readme_commands() == ["bash scripts/build_book.sh", "bash scripts/run_tests.sh"]


def test_workflows_run_exactly_the_readme_commands():
    build, check = readme_commands()
    book, tests = _run_lines(_workflow(BOOK_WF)), _run_lines(_workflow(TESTS_WF))
    # the project's own commands (anything but the runner's setup) are the README's, verbatim
    own = re.compile(r"scripts/|jupyter|pytest|python|pip |\.ci/")
    assert [c for c in book if own.search(c)] == [build], f"book.yml runs {book}"
    assert [c for c in tests if own.search(c)] == [check], f"tests.yml runs {tests}"


def _steps(wf: dict, uses: str) -> list[dict]:
    return [s for job in wf["jobs"].values() for s in job.get("steps", [])
            if str(s.get("uses", "")).split("@")[0] == uses]


def _setup_python_is_cached_on_requirements(wf: dict) -> None:
    (setup,) = _steps(wf, "actions/setup-python")
    w = setup["with"]
    assert w["cache"] == "pip" and w["cache-dependency-path"] == "requirements.txt"
    requires = _pyproject()["project"]["requires-python"]
    low = tuple(int(x) for x in requires.removeprefix(">=").split("."))
    assert tuple(int(x) for x in str(w["python-version"]).split(".")) >= low


def test_book_workflow_builds_and_deploys_to_pages_on_pushes_to_main():
    wf = _workflow(BOOK_WF)
    branch = _repository()[1]
    assert set(wf["on"]) <= {"push", "workflow_dispatch"}
    assert wf["on"]["push"]["branches"] == [branch]
    _setup_python_is_cached_on_requirements(wf)
    (upload,) = _steps(wf, "actions/upload-pages-artifact")
    assert upload["with"]["path"] == "_build/html"
    deploy_jobs = [(name, job) for name, job in wf["jobs"].items()
                   if any(str(s.get("uses", "")).startswith("actions/deploy-pages@")
                          for s in job.get("steps", []))]
    assert len(deploy_jobs) == 1
    name, job = deploy_jobs[0]
    build_job = next(n for n, j in wf["jobs"].items() if upload in j.get("steps", []))
    assert job["needs"] == build_job
    # actions/deploy-pages refuses a job without the github-pages environment and the token
    assert job["environment"]["name"] == "github-pages"
    assert job["permissions"] == {"pages": "write", "id-token": "write"}


def test_tests_workflow_runs_on_every_push_and_pull_request():
    wf = _workflow(TESTS_WF)
    assert {"push", "pull_request"} <= set(wf["on"])
    for event in ("push", "pull_request"):
        assert not (wf["on"][event] or {}), f"tests.yml filters its {event} events"
    _setup_python_is_cached_on_requirements(wf)
    # the browser checks need a Chromium that scripts/run_tests.sh finds as `chromium`
    runs = "\n".join(_run_lines(wf))
    assert "command -v chromium" in runs and "apt-get install -y chromium" in runs


# ----------------------------------------------------------------------------- README
def test_readme_is_short():
    n = len(_text(README).splitlines())
    assert n <= README_MAX_LINES, (f"README.md has {n} lines (at most {README_MAX_LINES}): "
                                   f"move measurements to benchmarks/README.md")


def test_readme_links_and_figure_exist():
    text = _text(README)
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [link.split("#")[0] for link in links if not re.match(r"[a-z]+:", link)]
    assert {"LICENSE", "LICENSE-text", "CITATION.cff", "CONTRIBUTING.md",
            "benchmarks/README.md"} <= set(local)
    figures = [link for link in local if link.startswith("book/figures/")]
    assert figures, "the README shows no figure of the book"
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"
    assert re.search(r"^Measured on a fresh clone: \S", text, re.M), \
        "README.md lost its 'Measured on a fresh clone:' line under the two commands"


def test_readme_layout_names_what_exists():
    (block,) = _fenced_blocks(_section(_text(README), "Layout"))
    names = [line.split()[0] for line in block.splitlines() if line and not line[0].isspace()]
    names += [f"attn_core/{line.split()[0]}" for line in block.splitlines()
              if line.startswith("  ") and line.split()[0].endswith("/")]
    names = [n for n in names if not n.endswith("...")]
    missing = [n for n in names if not (ROOT / n).exists()]
    assert len(names) >= 10 and not missing, f"README's layout names missing files: {missing}"


def test_readme_keeps_one_dated_performance_table():
    perf = _section(_text(README), "Performance")
    tables = re.findall(r"(?:^\|.*\|\s*\n)+", perf, flags=re.M)
    assert len(tables) == 1, "README's Performance section keeps one table (the rest: benchmarks/)"
    before = perf[:perf.index(tables[0])]
    assert re.search(r"\b20\d\d-\d\d-\d\d\b", before) and "GFLOP/s" in before, \
        "the README's table must say when and on which core speed it was measured"
    assert "benchmarks/README.md" in perf


def test_benchmark_history_is_newest_first():
    text = _text(ROOT / "benchmarks" / "README.md")
    dates = [date.fromisoformat(d) for d in
             re.findall(r"^## (\d{4}-\d\d-\d\d)", text, flags=re.M)]
    assert len(dates) >= 5
    assert dates == sorted(dates, reverse=True), f"benchmarks/README.md is not newest first: {dates}"


# ----------------------------------------------------------------------------- CONTRIBUTING
#: Programs a CONTRIBUTING.md command may start with.
PROGRAMS = {"bash", "source", "python", "jupyter", "git", "nbstripout"}
#: A repository path as CONTRIBUTING.md writes it (a placeholder like chN_<topic> is not one).
REPO_PATH = re.compile(r"^(?:attn_core|scripts|tests|notebooks|benchmarks|book|\.github|\.ci)"
                       r"(?:/[\w.-]*)*$")
PLACEHOLDER = re.compile(r"<|chN|0N_|_chN|test_chN")


def _venv_has(program: str) -> bool:
    return (Path(sys.executable).parent / program).exists()


def _own_script(words: list[str]) -> Path | None:
    """The project's script or module a ``python`` command runs, if it is one."""
    if len(words) > 2 and words[1] == "-m" and words[2].startswith("attn_core"):
        return ROOT / (words[2].replace(".", "/") + ".py")
    if len(words) > 1 and words[1].endswith(".py") and REPO_PATH.match(words[1]):
        return ROOT / words[1]
    return None


def command_problems(command: str) -> list[str]:
    """What is not real in one shell command of CONTRIBUTING.md: a program that is not
    one of PROGRAMS, a repository path that does not exist, a module that does not import,
    a jupyter subcommand that is not installed, an option the project's script lacks."""
    words = shlex.split(command)
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0]):
        words = words[1:]                                     # ATTN_MODE=full ...
    if not words:
        return []
    problems = []
    if words[0] not in PROGRAMS:
        problems.append(f"unknown program {words[0]!r}")
    for w in words[1:]:
        path = w.split("::")[0]
        if REPO_PATH.match(path) and not PLACEHOLDER.search(path) and not (ROOT / path).exists():
            problems.append(f"no file {path}")
    if words[0] == "python" and len(words) > 2 and words[1] == "-m":
        import importlib.util
        if importlib.util.find_spec(words[2]) is None:
            problems.append(f"no module {words[2]}")
    if words[0] == "jupyter" and len(words) > 1 and not _venv_has(f"jupyter-{words[1]}"):
        problems.append(f"no jupyter {words[1]}")
    script = _own_script(words) if words[0] == "python" else None
    if script is not None and script.exists():
        source = _text(script)
        for opt in (w.split("=")[0] for w in words[2:] if w.startswith("--")):
            if f'"{opt}"' not in source:
                problems.append(f"{script.relative_to(ROOT)} has no option {opt}")
    return problems


def contributing_commands() -> list[str]:
    return [c for block in _fenced_blocks(_text(CONTRIBUTING)) for c in _commands(block)]


def test_contributing_commands_are_real():
    commands = contributing_commands()
    assert len(commands) >= 15, commands
    problems = [f"{c!r}: {p}" for c in commands for p in command_problems(c)]
    assert not problems, "CONTRIBUTING.md names commands that are not real:\n" + \
        "\n".join(problems)


def test_contributing_paths_in_the_text_exist():
    """The repository paths CONTRIBUTING.md writes as `code` in its text exist too
    (placeholders for a new chapter's files, like attn_core/chapters/chN_<topic>.py, aside)."""
    text = re.sub(r"^```.*?^```", "", _text(CONTRIBUTING), flags=re.M | re.S)
    spans = re.findall(r"`([^`\n]+)`", text)
    paths = {w.split("::")[0] for s in spans for w in s.split() if REPO_PATH.match(w)}
    assert len(paths) >= 20, paths
    missing = sorted(p for p in paths if not PLACEHOLDER.search(p) and not (ROOT / p).exists())
    assert not missing, f"CONTRIBUTING.md names paths that do not exist: {missing}"


@pytest.mark.parametrize("command, problem", [
    ("python scripts/no_such_script.py", "no file scripts/no_such_script.py"),
    ("python -m pytest -q tests/test_ch99.py", "no file tests/test_ch99.py"),
    ("python scripts/store_results.py --no-such-option", "has no option --no-such-option"),
    ("python -m attn_core.no_such_module", "no module attn_core.no_such_module"),
    ("make book", "unknown program 'make'"),
])
def test_a_command_that_is_not_real_is_caught(command, problem):
    assert any(problem in p for p in command_problems(command)), command_problems(command)


def _run_tests_on_exit():
    text = (ROOT / "scripts" / "run_tests.sh").read_text()
    m = re.search(r"# >>> on_exit.*?\n(.*?)# <<< on_exit", text, re.S)
    assert m, "scripts/run_tests.sh lost its on_exit block"
    return m.group(1)


@pytest.mark.parametrize("render, last, want", [
    ("finished", "true", 0), ("running", "true", 0), ("none", "true", 0),
    ("finished", "false", 1), ("running", "(exit 3)", 3)])
def test_the_test_commands_exit_keeps_its_status_and_cleans_up(tmp_path, render, last,
                                                               want):
    """scripts/run_tests.sh's EXIT trap, run under the script's own `set -euo pipefail`:
    the exit status is the script's (a pass stays a pass when the render finished long
    before -- CI once read exit 1 after "all checks passed"), a running render is stopped,
    the results cache is removed."""
    cache = tmp_path / "cache"
    cache.mkdir()
    start = {"finished": "(true) & render_pid=$!; wait $render_pid",
             "running": "sleep 30 & render_pid=$!; echo $render_pid > pid",
             "none": ""}[render]
    script = ("set -euo pipefail\n" + _run_tests_on_exit() + "trap on_exit EXIT\n"
              f"ATTN_CACHE={cache}\n{start}\n{last}\n")
    r = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True,
                       text=True, timeout=20)
    assert r.returncode == want, (r.returncode, r.stderr)
    assert not cache.exists()
    if render == "running":
        pid = int((tmp_path / "pid").read_text())
        assert _gone(pid), f"the render stand-in (pid {pid}) still runs"


def _gone(pid, wait=5.0):
    """True once `pid` has ended (no such process, or a zombie nobody reaped yet)."""
    end = time.monotonic() + wait
    while time.monotonic() < end:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def test_the_quiet_filter_drops_only_its_lines_and_keeps_the_exit_status():
    """scripts/env.sh's _attn_drop_stderr (the build's and the installs' filter): the
    matching stderr lines go, every other line and stdout stay, the status is the
    command's."""
    script = textwrap.dedent("""
        source scripts/env.sh >/dev/null 2>&1 || true
        noisy() { echo kept-out; echo "Kernel is running over TCP without encryption." >&2
                  echo kept-err >&2; return 7; }
        _attn_drop_stderr "Kernel is running over TCP" noisy
        echo "status=$?"
        _attn_drop_stderr "nothing matches" true
        echo "status=$?"
    """)
    r = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True)
    assert r.stdout.split() == ["kept-out", "status=7", "status=0"], r.stdout + r.stderr
    assert "kept-err" in r.stderr and "Kernel is running" not in r.stderr, r.stderr


def test_the_executor_reports_each_notebooks_claims_summary(tmp_path):
    """execute_notebooks.report: one line per notebook executed, with its claims summary
    (or 'no claims summary printed'), read back from the execution cache."""
    import importlib.util

    import nbformat
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    spec = importlib.util.spec_from_file_location(
        "execute_notebooks", ROOT / "scripts" / "execute_notebooks.py")
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    cache = get_cache(str(tmp_path / "cache"))
    uris = []
    for name, printed in [("a", "all 3 claims of Chapter 9 hold: 3 findings"),
                          ("b", "smoke run (ATTN_MAX_STEPS=2): the 4 claims of Chapter 8 "
                                "were not checked -- plumbing"),
                          ("c", "all good, no table")]:
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(f"print({name!r})", outputs=[
            nbformat.v4.new_output("stream", name="stdout", text=f"x\n{printed}\n")])]
        path = tmp_path / f"{name}.ipynb"
        nbformat.write(nb, path)
        cache.cache_notebook_bundle(CacheBundleIn(nb, str(path),
                                                  data={"execution_seconds": 12.4}),
                                    check_validity=False)
        uris.append(str(path))
    lines = ex.report(cache, uris)
    assert lines == ["a: 12 s; all 3 claims of Chapter 9 hold: 3 findings",
                     "b: 12 s; smoke run (ATTN_MAX_STEPS=2): the 4 claims of Chapter 8 were "
                     "not checked -- plumbing",
                     "c: 12 s; no claims summary printed"]


def test_the_footers_cite_link_reaches_the_intros_how_to_cite_from_every_page():
    """The footer is the same HTML on every page: its link is written from the book's root
    (book/intro.html#how-to-cite) and book/_ext/offline_assets.py makes it relative to each
    page -- the chapters one folder down, the search and index pages at the root (the link
    404'd from those until #51), the intro itself. tests/test_built_book.py crawls the
    built pages' links too."""
    import importlib.util

    from sphinx.util.osutil import relative_uri

    footer = _config()["html"]["extra_footer"]
    href = re.search(r'href="([^"]*how-to-cite)"', footer).group(1)
    assert href == "book/intro.html#how-to-cite", href
    assert re.search(r"^## How to cite\s*$", (ROOT / "book" / "intro.md").read_text(), re.M)
    spec = importlib.util.spec_from_file_location("offline_assets",
                                                  ROOT / "book" / "_ext" / "offline_assets.py")
    ext = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ext)
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = [toc["root"]] + [e["file"] for e in toc.get("chapters", [])] + ["search",
                                                                              "genindex"]
    for page in pages:
        def pathto(doc, resource=0, page=page):    # Sphinx's, for the HTML builder
            uri = relative_uri(f"{page}.html", f"{doc}.html")
            return "#" if doc == page else uri
        context = {"theme_extra_footer": footer, "pathto": pathto}
        ext._footer_links(None, page, "page.html", context, None)
        got = re.search(r'href="([^"]*how-to-cite)"', context["theme_extra_footer"]).group(1)
        target, anchor = got.split("#")
        resolved = (ROOT / page).parent / target if target else ROOT / f"{page}.html"
        assert resolved.with_suffix(".md").resolve() == (ROOT / "book" / "intro.md").resolve(), \
            (page, got)
        assert anchor == "how-to-cite"


def test_the_html_tests_wait_for_the_render_beside_them_and_fail_when_it_failed(
        tmp_path, monkeypatch):
    from conftest import wait_for_render

    status = tmp_path / "render_status"
    monkeypatch.delenv("ATTN_RENDER_STATUS", raising=False)
    wait_for_render(timeout_s=0.1)                   # no render beside this run: no wait
    monkeypatch.setenv("ATTN_RENDER_STATUS", str(status))
    with pytest.raises(pytest.fail.Exception, match=r"^ATTN_RENDER_STATUS: .* was not "
                                                    r"written within 0 s"):
        wait_for_render(timeout_s=0.1)
    status.write_text("2\n")
    with pytest.raises(pytest.fail.Exception, match=r"^the book's render failed \(exit "
                                                    r"status 2"):
        wait_for_render()
    status.write_text("0\n")
    wait_for_render()


def test_build_steps_are_checked_by_name():
    env = {**os.environ, "ATTN_BUILD_STEPS": "render execute"}
    r = subprocess.run(["bash", str(ROOT / "scripts" / "build_book.sh")], env=env,
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2
    assert r.stderr.strip().endswith("ATTN_BUILD_STEPS must be 'execute render', 'execute' "
                                     "or 'render'; got 'render execute'")
