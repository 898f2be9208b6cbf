"""Stored results: seed-heavy fast-mode runs computed once, shipped with the package, shown
labelled, and re-checked live on the reader's machine.

Some statistics need many seeds (a success rate with an interval), and training them all in
every build would not fit the book's time budget on a 2-core CPU. For those, a chapter calls
:func:`stored_run` instead of ``config.run()`` (chapter 6 keeps its ten-seed sweep as JSON
rows, and stores the first seed of each condition it re-trains as an entry here, equal to
the row's first seed). What a stored run guarantees:

1. **Whole or refused.** ``stored_results/MANIFEST.json`` holds the sha256 of every stored
   file (the entries, ``envelopes.json`` and chapter 6's sweep). A file that does not match
   is refused naming the script that recomputes it, and so is an entry whose members, metrics,
   probes or evaluation steps are not what its configuration trains.
2. **Re-checked live.** The first ``live`` members are trained again now and compared with
   their stored records, per metric and evaluation step.
3. **A tolerance measured, not guessed.** Training is chaotic: another CPU's rounding (another
   ATen CPU capability, another thread count, another BLAS) changes the last bit of a float,
   and training grows that difference step by step. When an entry is stored,
   ``scripts/store_results.py --envelopes`` re-trains its live members under every such
   perturbation that this machine can produce (each ``ATEN_CPU_CAPABILITY`` it has x 1 and 2
   torch threads, and last-bit perturbations of the initial weights, :data:`INIT_JITTER`) and
   keeps, per metric and evaluation step, the largest difference from the stored record: the
   *envelope*. Metrics that count held-out tokens (accuracies) are compared in tokens.
   A live member passes when every difference is within :data:`FACTOR` times its envelope
   (at least :data:`FLOOR_VALUE` or :data:`FLOOR_TOKENS`); on a platform where the live
   members reproduced the records bitwise (``bitwise_on``) nothing but bitwise equality
   passes. A changed model -- a learning rate 1 % off, another initialisation or data seed,
   a dropped bias -- lands many envelopes away (``tests/test_stored_portable.py``).
4. **A reader never loses a chapter** (``ATTN_STORED``, :func:`attn_core.config.env_stored`).
   ``check`` (default): a mismatch prints what it means and what to do, and the chapter goes
   on with the stored numbers marked "not confirmed on this machine"; ``strict`` (the test
   command and its book build) raises :class:`StoredMismatch`; ``off`` trains every seed now.

Outside fast mode (the papers' scale, not stored) and under ``ATTN_MAX_STEPS`` (a smoke run)
:func:`stored_run` is ``config.run()``. ``python -m attn_core.chapters`` runs every live check
of the chapters with stored runs and prints a table
(:func:`attn_core.chapters.registry.main`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform as _platform
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from .cache import atomic_write, read_entry, save_history
from .checks import check_int
from .config import env_max_steps, env_stored, get_mode, report_line
from .training import History, eval_schedule

__all__ = ["STORE", "MANIFEST", "ENVELOPES", "FACTOR", "FLOOR_VALUE", "FLOOR_TOKENS",
           "TOKEN_KEYS", "PREFIX_STEPS", "StoredMismatch", "CheckReport", "LiveCheck",
           "build_envelope", "check_record", "differences", "run_check", "step_cap",
           "write_envelopes", "config_record", "load_envelope", "platform", "ROWS",
           "platform_key", "stored_path", "stored_run", "store", "verify_file",
           "write_manifest", "write_json", "load_entry", "check_path"]

_PACKAGE = Path(__file__).resolve().parent
#: Where stored entries live (inside the package, so a pip install carries them).
STORE = _PACKAGE / "stored_results"
#: Where the stored rows of the chapters' sweeps live (JSON files, :mod:`attn_core.rows`); the
#: manifest covers every ``*.json`` there.
ROWS = _PACKAGE / "chapters" / "data"
#: The file in STORE with the sha256 of every stored file (:func:`write_manifest`).
MANIFEST = "MANIFEST.json"
#: The file in STORE with each live check's measured envelope (``scripts/store_results.py``).
ENVELOPES = "envelopes.json"
SCRIPT = "python scripts/store_results.py"

#: The training steps a chapter re-runs where its live seed is only a check (chapters 4
#: and 5, and five of chapter 6's six live conditions, write ``upto=40`` out): the platform
#: matrix's prefix (``scripts/platform_matrix.py``), on which every changed model fails.
PREFIX_STEPS = 40

#: A live member passes when every difference from its record is at most FACTOR times the
#: largest difference that the perturbations of a correct install gave (the envelope). The
#: envelope is the largest of ~8 draws of training's chaos; 3 leaves room for a platform whose
#: draw lands beyond them, and every changed model of the tests lands farther (its margin is
#: printed by ``tests/test_stored_portable.py`` and ``python -m attn_core.stored``).
FACTOR = 3.0
#: The least envelope of a metric that is not a token count (a few float32 units in the last
#: place of an O(1) value), and of a token count (one held-out token): before training all
#: platforms agree, so the measured envelope there can be 0.
FLOOR_VALUE = 1e-5
FLOOR_TOKENS = 1
#: Metrics and probes that are fractions of the held-out target tokens (compared in tokens).
TOKEN_KEYS = ("token_acc", "attn_acc", "beta_align_acc")


class StoredMismatch(ValueError):
    """A stored result is refused: changed on disk, incomplete, or not reproduced now."""


# ------------------------------------------------------------------------------- platform
def platform() -> dict:
    """What the numbers a training run computes here may depend on: torch and Python
    versions, the ATen CPU capability in use, torch's thread count, the CPU and the vector
    instructions its BLAS may pick (which ignore ``ATEN_CPU_CAPABILITY``)."""
    flags: set[str] = set()
    cpu = _platform.processor() or _platform.machine()
    try:
        text = Path("/proc/cpuinfo").read_text()
        for line in text.splitlines():
            if line.startswith("model name") and cpu in ("", _platform.machine()):
                cpu = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    isa = sorted(f for f in flags if f in ("avx", "avx2", "fma", "avx512f", "avx512_bf16",
                                            "avx512_vnni", "avx512_fp16", "amx_tile",
                                            "amx_bf16"))
    blas = "mkl" if torch.backends.mkl.is_available() else "other"
    return {"torch": torch.__version__, "python": _platform.python_version(),
            "capability": torch.backends.cpu.get_cpu_capability(),
            "threads": torch.get_num_threads(), "cpu": cpu, "isa": isa, "blas": blas,
            "system": _platform.system()}


def platform_key(p: dict | None = None) -> str:
    """A platform as one string (the same numbers are expected only for the same string)."""
    p = platform() if p is None else p
    return json.dumps(p, sort_keys=True)


# ------------------------------------------------------------------------------- manifest
def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _stored_files() -> list[Path]:
    """Every file the manifest covers, discovered: the entries of :data:`STORE`, their
    envelopes, and the stored rows of :data:`ROWS` (chapter 6's sweeps, chapter 7's)."""
    files = sorted(STORE.glob("*.npz"))
    envelopes = [STORE / ENVELOPES] if (STORE / ENVELOPES).exists() else []
    return files + envelopes + sorted(ROWS.glob("*.json"))


def _relative(path: Path) -> str:
    """How the manifest names ``path``: ``stored_results/<name>`` for a file of STORE, else
    its path inside the package."""
    path = Path(path).resolve()
    if path.parent == STORE.resolve():
        return f"stored_results/{path.name}"
    try:
        return path.relative_to(_PACKAGE).as_posix()
    except ValueError:
        return path.name


def write_manifest() -> Path:
    """Write ``MANIFEST.json``: the sha256 of every stored file (atomically)."""
    files = {_relative(p): _sha256(p) for p in _stored_files()}
    write_json(STORE / MANIFEST, {"format": 1, "sha256": files,
                                  "written": time.strftime("%Y-%m-%d %H:%M:%S")})
    return STORE / MANIFEST


def _manifest() -> dict:
    path = STORE / MANIFEST
    try:
        files = json.loads(path.read_text())["sha256"]
        if not isinstance(files, dict):
            raise TypeError("sha256 is not an object")
    except FileNotFoundError:
        raise StoredMismatch(f"the stored results have no manifest ({path}); run "
                             f"{SCRIPT}") from None
    except (ValueError, TypeError, KeyError) as e:
        raise StoredMismatch(f"the manifest {path} is not readable ({e}); run "
                             f"{SCRIPT}") from None
    return files


def verify_file(path: Path) -> Path:
    """``path`` if its sha256 is the one the manifest records; :class:`StoredMismatch`
    naming the file and the script otherwise (changed after it was stored, or unknown)."""
    path = Path(path)
    name = _relative(path)
    files = _manifest()
    if name not in files:
        raise StoredMismatch(f"{name} is not in the stored results' manifest: it was not "
                             f"written by {SCRIPT}; run it to store this result")
    if not path.exists():
        raise StoredMismatch(f"the stored result {name} is missing; run {SCRIPT}")
    if _sha256(path) != files[name]:
        raise StoredMismatch(f"{name} was changed after it was stored (its sha256 is not the "
                             f"manifest's): refused; restore it (git checkout) or run {SCRIPT}")
    return path


def write_json(path: Path, data, compact: bool = False, what: str = "data") -> Path:
    """Write ``data`` as JSON to ``path`` atomically (a temporary file, then a rename),
    indented or ``compact``; returns the path. ``data`` (named ``what`` in the error) may
    hold no NaN or infinity: JSON has none (ValueError)."""
    path = check_path("path", path)
    layout = {"separators": (",", ":")} if compact else {"indent": 1}
    try:
        text = json.dumps(data, sort_keys=True, allow_nan=False, **layout) + "\n"
    except ValueError:
        raise ValueError(f"{what} must hold finite numbers only: JSON has no NaN or infinity "
                         f"(a diverged run? it cannot be stored)") from None
    atomic_write(path, lambda f: f.write(text), binary=False)
    return path


def check_path(name: str, path) -> Path:
    """``path`` (a str or os.PathLike) as a Path; TypeError naming ``name`` otherwise."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name} must be a file path (str or Path); got "
                        f"{type(path).__name__} {path!r:.40}")
    return Path(path)


# ------------------------------------------------------------------------------- entries
def config_record(config) -> dict:
    """``config``'s fields as the plain JSON a stored result records and is compared by."""
    return json.loads(json.dumps(config.cache_config(), sort_keys=True, default=str))


def stored_path(config) -> Path:
    """The stored entry of ``config`` (an :class:`~attn_core.chapters._experiment.Experiment`):
    its cache name and a hash of its fields."""
    if not hasattr(config, "cache_config") or not hasattr(config, "cache_name"):
        raise TypeError(f"config must be an experiment config (with cache_name and "
                        f"cache_config); got {type(config).__name__}")
    digest = hashlib.sha256(json.dumps(config_record(config), sort_keys=True).encode())
    return STORE / f"{config.cache_name()}-{digest.hexdigest()[:16]}.npz"


def store(config, progress: bool = True) -> Path:
    """Train ``config`` now (no cache) and write its stored entry, recording this platform;
    returns the path. The manifest and envelopes are written by ``scripts/store_results.py``."""
    if get_mode() != "fast":
        raise ValueError("stored results are fast-mode results: run with ATTN_MODE=fast")
    h = config.train(progress)
    path = stored_path(config)
    save_history(h, path, meta={"stored_config": config_record(config),
                                "platform": platform()})
    return path


def _expected_schedule(config) -> np.ndarray:
    kw = config.train_kwargs()
    return np.asarray(eval_schedule(kw["steps"], kw["eval_every"]))


def _check_whole(h: History, config, name: str) -> None:
    """StoredMismatch unless entry ``h`` holds every member and evaluation step that
    ``config`` trains, and some metrics."""
    members = len(config.seeds_and_members()[0])
    steps = _expected_schedule(config)
    fix = f"run {SCRIPT} to store it again"
    if h.n_members != members:
        raise StoredMismatch(f"{name} holds {h.n_members} members; its configuration trains "
                             f"{members}: refused; {fix}")
    if not np.array_equal(h.eval_steps, steps):
        raise StoredMismatch(f"{name} was evaluated at steps {h.eval_steps.tolist()}; its "
                             f"configuration evaluates at {steps.tolist()}: refused; {fix}")
    if not h.metrics:
        raise StoredMismatch(f"{name} holds no metrics: refused; {fix}")
    for group in ("metrics", "probes"):
        for k, v in getattr(h, group).items():
            if v.shape[:2] != (members, len(steps)):
                raise StoredMismatch(f"{name}: {group}[{k!r}] has shape {v.shape}; it must "
                                     f"start ({members}, {len(steps)}): refused; {fix}")


def load_entry(config) -> History:
    """The stored entry of ``config``: present, matching the manifest, stored for exactly
    this configuration and whole (:func:`_check_whole`); StoredMismatch naming the script
    otherwise."""
    path = stored_path(config)
    if not path.exists():
        raise StoredMismatch(f"no stored result for this configuration ({path.name}); run "
                             f"{SCRIPT} to compute it")
    verify_file(path)
    h, info = read_entry(path)
    if info["meta"].get("stored_config") != config_record(config):
        raise StoredMismatch(f"{path} was stored for another configuration; run {SCRIPT}")
    _check_whole(h, config, path.name)
    return h


def _live_record(h: History, live: int) -> dict:
    """Every metric and probe of the first ``live`` members of entry ``h``."""
    return {k: v[:live] for g in ("metrics", "probes") for k, v in getattr(h, g).items()}


def _same_keys(stored: dict, now: dict, name: str) -> None:
    if sorted(stored) != sorted(now):
        raise StoredMismatch(f"{name} records {sorted(stored)}; the members trained now "
                             f"record {sorted(now)}: refused; run {SCRIPT} to store it again")


# ------------------------------------------------------------------------------ envelopes
def load_envelope(name: str) -> dict:
    """The measured envelope of live check ``name`` (see the module docstring)."""
    path = STORE / ENVELOPES
    if not path.exists():
        raise StoredMismatch(f"no measured envelopes ({path}); run {SCRIPT} --envelopes")
    data = json.loads(verify_file(path).read_text())
    if name not in data.get("checks", {}):
        raise StoredMismatch(f"no measured envelope for {name}; run {SCRIPT} --envelopes")
    return data["checks"][name]


def build_envelope(name: str, record: dict, eval_steps, live: int, tokens: int,
                   runs: list[dict]) -> dict:
    """The envelope of live check ``name`` from re-runs of its ``live`` members: ``runs``, each
    ``{"run": what was perturbed, "platform": platform_key() of its process, "jitter": the
    INIT_JITTER seed or None, "now": key -> array like record}``. Per key and evaluation step
    the largest difference from ``record`` over the runs (in tokens for :data:`TOKEN_KEYS`,
    each a count of ``tokens`` held-out tokens -- ValueError if the record is not); the
    platforms of unperturbed runs that matched the record bitwise go in ``bitwise_on``."""
    eval_steps = np.asarray(eval_steps)
    keys = {k: {"tokens": int(tokens) if k in TOKEN_KEYS else None} for k in record}
    for k, meta in keys.items():
        if meta["tokens"]:
            counted = np.asarray(record[k], dtype=np.float64) * tokens
            off = float(np.abs(counted - np.rint(counted)).max())
            if off > 1e-3:
                raise ValueError(f"{name}: {k!r} is not a count of {tokens} held-out tokens "
                                 f"(off by {off:.3g} tokens)")
    spec = {"eval_steps": eval_steps.tolist(), "live": int(live),
            "keys": {k: {**v, "envelope": np.zeros(len(eval_steps)).tolist()}
                     for k, v in keys.items()}}
    bitwise, per_run = set(), []
    for run in runs:
        diffs = differences(record, run["now"], spec)
        for k, d in diffs.items():
            env = spec["keys"][k]["envelope"]
            spec["keys"][k]["envelope"] = np.maximum(env, d).tolist()
        largest = {k: float(d.max()) for k, d in diffs.items()}
        per_run.append({"run": run["run"], "platform": run["platform"], "largest": largest})
        if run.get("jitter") is None and not any(largest.values()):
            bitwise.add(run["platform"])
    spec["bitwise_on"] = sorted(bitwise)
    spec["runs"] = per_run
    return spec


def write_envelopes(checks: dict, note: dict | None = None) -> Path:
    """Write ``envelopes.json`` (``checks``: name -> :func:`build_envelope`) and the manifest."""
    write_json(STORE / ENVELOPES, {"format": 1, "factor": FACTOR, **(note or {}),
                                   "checks": checks})
    write_manifest()
    return STORE / ENVELOPES


@dataclass
class CheckReport:
    """How the members trained now compare with their stored records (:func:`check_record`).

    ``ratio``: the largest difference over what is allowed (<= 1 passes; bitwise: 0 or inf);
    ``where``: the (key, step, difference, allowed, unit) of that largest ratio; ``bitwise``:
    whether this platform is one the records were reproduced on bitwise."""

    name: str
    ratio: float
    where: tuple
    bitwise: bool
    differences: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return bool(self.ratio <= 1.0)

    def describe(self) -> str:
        key, step, diff, allowed, unit = self.where
        if self.bitwise:
            how = "bitwise (on this platform they were reproduced bitwise when stored)"
            return how if self.ok else f"{how}: {key!r} differs at step {step} by " + _fmt(
                diff, unit)
        return (f"largest difference / allowed = {self.ratio:.2g} ({key!r} at step {step}: "
                f"{_fmt(diff, unit)} of {_fmt(allowed, unit)} allowed = {FACTOR:g} x "
                f"the measured envelope)")


def _fmt(x: float, unit: str) -> str:
    return f"{x:.0f} tokens" if unit == "tokens" else f"{x:.2g}"


def differences(record: dict, now: dict, spec: dict) -> dict:
    """Per key: the largest |now - record| at each evaluation point (over members and the
    key's other axes), in tokens for a token key (``spec['keys'][k]['tokens']`` held-out
    tokens)."""
    out = {}
    for k, want in record.items():
        got = np.asarray(now[k], dtype=np.float64)
        want = np.asarray(want, dtype=np.float64)
        if got.shape != want.shape:
            raise StoredMismatch(f"the members trained now recorded {k!r} of shape "
                                 f"{got.shape}; the stored record has {want.shape}")
        d = np.abs(got - want)
        d = d.reshape(d.shape[0], d.shape[1], -1).max(axis=(0, 2))
        tokens = spec["keys"][k].get("tokens")
        if tokens:
            d = np.rint(d * tokens)
        out[k] = d
    return out


def check_record(name: str, record: dict, now: dict, eval_steps, spec: dict | None = None,
                 upto: int | None = None, bitwise: bool | None = None) -> CheckReport:
    """Compare the members trained now (``now``: key -> (members, evals, ...)) with their
    stored ``record`` (the same keys and shapes), evaluated at ``eval_steps``, against the
    measured envelope ``spec`` (default: :func:`load_envelope` of ``name``). ``upto``: only
    the evaluations up to that step (a prefix run). ``bitwise``: None -- bitwise on the
    platforms the envelope lists as reproducing the records bitwise, within the envelope
    elsewhere; False -- within the envelope on any platform. Returns a :class:`CheckReport`;
    it does not raise for a difference (see :func:`_enforce`)."""
    spec = load_envelope(name) if spec is None else spec
    eval_steps = np.asarray(eval_steps)
    want_steps = np.asarray(spec["eval_steps"])
    n = len(eval_steps) if upto is None else int((eval_steps <= upto).sum())
    if not np.array_equal(eval_steps[:n], want_steps[:n]) or n == 0:
        raise StoredMismatch(f"{name}: trained now at evaluation steps "
                             f"{eval_steps.tolist()}; the record has {want_steps.tolist()}")
    _same_keys(record, now, name)
    if sorted(spec["keys"]) != sorted(record):
        raise StoredMismatch(f"{name}: the record holds {sorted(record)}; its envelope was "
                             f"measured for {sorted(spec['keys'])}: run {SCRIPT} --envelopes")
    record = {k: np.asarray(v)[:, :n] for k, v in record.items()}
    now = {k: np.asarray(v)[:, :n] for k, v in now.items()}
    diffs = differences(record, now, spec)
    if bitwise is None:
        bitwise = platform_key() in spec.get("bitwise_on", [])
    ratio, where = -1.0, None
    for k, d in diffs.items():
        meta = spec["keys"][k]
        unit = "tokens" if meta.get("tokens") else "value"
        env = np.asarray(meta["envelope"], dtype=np.float64)[:n]
        allowed = FACTOR * np.maximum(env, FLOOR_TOKENS if unit == "tokens" else FLOOR_VALUE)
        if bitwise:
            allowed = np.zeros_like(allowed)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(d == 0, 0.0, d / allowed)
        i = int(np.argmax(r))
        if r[i] > ratio:
            ratio, where = float(r[i]), (k, int(eval_steps[i]), float(d[i]),
                                         float(allowed[i]), unit)
    return CheckReport(name, ratio, where, bitwise, diffs)


def worst_live_check(live: dict, known, what: str = "condition") -> CheckReport | None:
    """The worst of the live checks of ``live`` (a chapter's ``what`` -> the History that
    :func:`stored_run` returned for it): the report with the largest ratio of difference to
    allowed, with ``confirmed`` whether every one was confirmed on this machine. Each was
    already enforced by :func:`stored_run` (raised under ``ATTN_STORED=strict``, explained
    otherwise). None under ``ATTN_STORED=off``, where nothing stored is used. ``known``:
    the names the chapter's stored sweep has."""
    if not isinstance(live, dict) or not live:
        raise TypeError(f"live must be a non-empty dict ({what} -> History of stored_run); "
                        f"got {type(live).__name__}")
    if env_stored() == "off":
        return None
    reports = []
    for name, h in live.items():
        if name not in known:
            raise ValueError(f"live has a {what} the sweep does not: {name!r}")
        if getattr(h, "check", None) is None:
            raise ValueError(f"live[{name!r}] was not loaded by stored_run (fast mode), so "
                             f"it was not checked against a stored record")
        reports.append(h.check)
    worst = max(reports, key=lambda r: r.ratio)
    worst.confirmed = all(getattr(h, "confirmed", False) for h in live.values())
    return worst


def _time_to_train_all(seconds_live: float, live: int, members: int) -> str:
    s = seconds_live * members / max(live, 1)
    return f"~{s / 60:.0f} min" if s >= 90 else f"~{s:.0f} s"


def _enforce(report: CheckReport, label: str, retrain_estimate: str) -> bool:
    """What a mismatch does (``ATTN_STORED``): raise (strict), or explain and go on (check).
    Returns whether the stored numbers are confirmed on this machine."""
    if report.ok:
        return True
    what = (f"{label}: the seeds trained now do not reproduce their stored records "
            f"({report.describe()}).")
    if env_stored() == "strict":
        raise StoredMismatch(f"{what} The code no longer computes what was stored, or this "
                             f"platform's rounding goes beyond the spread measured for it: "
                             f"run {SCRIPT} to recompute the stored results (--envelopes to "
                             f"measure their spread again)")
    print(f"[stored] NOT CONFIRMED ON THIS MACHINE -- {what}\n"
          f"[stored] What it means: this machine's arithmetic (or this copy of the code) "
          f"trains these seeds differently from the machine that stored them, by more than "
          f"any platform the book was checked on. The numbers shown below are the stored "
          f"ones, not confirmed here.\n"
          f"[stored] What to do: set ATTN_STORED=off (in a notebook: "
          f"os.environ['ATTN_STORED'] = 'off') and run the chapter again to train every seed "
          f"now ({retrain_estimate} here); and please report your platform: {platform_key()}")
    return False


def stored_run(config, live: int = 1, upto: int | None = None) -> History:
    """The stored History of ``config``, its first ``live`` members re-run now and checked
    against their measured envelope (see the module docstring).

    ``upto``: re-run only the live members' first ``upto`` training steps and check the
    record's evaluations up to that step (None: the whole run). Every step runs the same code
    on the same batches, so a prefix checks the model, data and optimiser as the whole run
    does: on the first :data:`PREFIX_STEPS` steps every changed model of the platform matrix
    lands 22 or more times beyond what is allowed (``book/setup.md``). A chapter uses it
    where its live seed is only a check, not a curve it shows.

    StoredMismatch naming the file and the script if there is no stored entry for this exact
    configuration, or it is changed, partial or recorded other keys; a live difference beyond
    the envelope raises under ``ATTN_STORED=strict`` and is reported otherwise (the History
    then has ``confirmed=False``). ``ATTN_STORED=off``, full mode, smoke runs and a
    reader's variant of the config (a subclass defined outside the package, e.g. in a
    notebook, which may compute something else with the same fields) train every member now
    (``config.run()``).
    """
    live = check_int("live", live, 1)
    if upto is not None:
        upto = check_int("upto", upto, 1)
    if get_mode() != "fast" or env_max_steps() is not None or env_stored() == "off":
        return config.run()
    from .cache import code_identity
    variant, unreadable = code_identity(type(config))
    if variant is not None or unreadable is not None:
        # a reader's variant (a subclass defined outside the package) is not what was
        # stored, whatever its fields: it trains every member now (cached by its own code)
        return config.run()
    path = stored_path(config)
    h = load_entry(config)
    n = h.n_members
    if live > n:
        raise ValueError(f"live must be at most the {n} stored members; got {live}")
    spec = load_envelope(path.name)
    if spec.get("live") != live:
        raise StoredMismatch(f"{path.name}'s envelope was measured for {spec.get('live')} "
                             f"live members; asked for {live}: run {SCRIPT} --envelopes")
    total = int(h.eval_steps[-1])
    if upto is not None and upto >= total:
        upto = None                                  # the whole run
    if upto is None:
        now = config.first_members(live).run()
    else:
        if h.eval_steps[1] > upto:
            raise ValueError(f"upto must reach the first evaluation after step 0 "
                             f"(step {int(h.eval_steps[1])}) to check any training; "
                             f"got {upto}")
        now = _train_now(config, live, upto)         # short: trained now, not cached
    record = _live_record(h, live)
    report = check_record(path.name, record, {**now.metrics, **now.probes}, now.eval_steps,
                          spec, upto)
    label = f"{config.cache_name()} ({path.name})"
    seconds_whole = now.seconds * total / (upto or total)
    h.confirmed = _enforce(report, label, _time_to_train_all(seconds_whole, live, n))
    h.check = report
    which = "member 0" if live == 1 else f"members 0..{live - 1}"
    part = "" if upto is None else (f" for {'its' if live == 1 else 'their'} first {upto} "
                                    f"of {total} steps")
    if h.confirmed:
        # One short line for the reader; how close (report.describe()) is on h.check, and
        # the setup page explains the check.
        how = "bitwise" if report.bitwise else "within the spread"
        report_line(f"[stored] {config.display_name()}: {which} of {n} retrained"
                    f"{part}, match {how}")
    h.stored = True
    h.live = now
    return h


# ---------------------------------------------------------------------------- live checks
@dataclass
class LiveCheck:
    """One stored entry and how many of its members the book re-trains live (``chapter``
    shows it); the chapters' list is :func:`attn_core.chapters.registry.live_checks`."""

    name: str
    config: object
    live: int
    chapter: int

    def record(self):
        """(key -> stored array of the live members (live, evals, ...), eval steps): the
        entry, verified whole."""
        h = load_entry(self.config)
        return _live_record(h, self.live), h.eval_steps

    def now(self, h: History) -> dict:
        return {**h.metrics, **h.probes}

    def train(self, progress: bool = False) -> History:
        return self.config.first_members(self.live).train(progress)


def run_check(check: LiveCheck, upto: int | None = None, spec: dict | None = None,
              history: History | None = None, bitwise: bool | None = None) -> CheckReport:
    """Train ``check``'s live members now (the first ``upto`` steps only when given) and
    compare them with their records (no cache); ``history``: compare that instead."""
    record, _ = check.record()
    if history is None:
        history = _train_now(check.config, check.live, upto)
    return check_record(check.name, record, check.now(history), history.eval_steps, spec,
                        upto, bitwise)


def _train_now(config, live: int, upto: int | None) -> History:
    """``config``'s first ``live`` members trained now, the first ``upto`` steps only when
    given (None: the whole run), without the results cache."""
    with step_cap(upto):
        return config.first_members(live).train(False)


@contextlib.contextmanager
def step_cap(upto: int | None):
    """Train at most ``upto`` steps inside (None: no cap). The evaluations up to there are the
    full run's (a constant learning rate, the same batches), so a prefix of the run can be
    checked against a prefix of its record."""
    if upto is None:
        yield
        return
    upto = check_int("upto", upto, 1)
    # the step cap of a smoke run, at the configured batches (ATTN_SMOKE_BATCH=off)
    old = {k: os.environ.get(k) for k in ("ATTN_MAX_STEPS", "ATTN_SMOKE_BATCH")}
    os.environ.update(ATTN_MAX_STEPS=str(upto), ATTN_SMOKE_BATCH="off")
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                del os.environ[k]
            else:
                os.environ[k] = v
