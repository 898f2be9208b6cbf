"""Compute the book's stored results (attn_core/stored_results/): the seed-heavy fast-mode runs
that the chapters load with attn_core.stored.stored_run and re-check live (see that module),
their measured envelopes and the manifest of their sha256.

    python scripts/store_results.py               # every missing entry, then the manifest
    python scripts/store_results.py --check       # exit 1 if an entry is missing or changed
    python scripts/store_results.py --force       # recompute every entry (a model change),
                                                  # then measure their envelopes again
    python scripts/store_results.py --envelopes   # measure every live check's envelope
    python scripts/store_results.py --manifest    # only rewrite MANIFEST.json

Runs with ATTN_MODE=fast and uses ATTN_WORKERS worker processes (one torch thread each); the
numbers are the same for any worker count. Each entry is written atomically when it is done.
Chapter 6's sweep is stored by benchmarks/ch6_prototype/sweep.py; its live rows' envelopes
are measured here with the rest.

The envelope (see attn_core.stored): every live check's members are re-trained, each time in
a fresh process, under every perturbation a correct install can produce on this machine --
each ATEN_CPU_CAPABILITY the CPU has (default = no vector code, avx2, avx512) x 1 and 2 torch
threads, and last-bit perturbations of the initial weights (INIT_JITTER) -- two processes at
a time. Per metric and evaluation step the largest difference from the stored record is kept
(in held-out tokens for accuracies). The platforms whose runs reproduced the records bitwise
are kept too: there the check is bitwise.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

os.environ.setdefault("ATTN_MODE", "fast")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from attn_core import stored, training  # noqa: E402
from attn_core.chapters import registry  # noqa: E402

#: Last-bit perturbations of the initial weights measured per check (INIT_JITTER seeds).
JITTERS = (1, 2, 3)


def configs() -> list:
    """Every stored configuration of every registered chapter."""
    return registry.stored_configs()


def capabilities() -> list[str]:
    """The ATEN_CPU_CAPABILITY values this CPU can run (torch falls back silently to a lower
    one when asked for more than the CPU has, which would measure nothing new)."""
    flags = set(stored.platform()["isa"])
    caps = ["default"]
    if "avx2" in flags:
        caps.append("avx2")
    if "avx512f" in flags:
        caps.append("avx512")
    return caps


def perturbations() -> list[dict]:
    """(name, environment, jitter) of every run an envelope is measured from: the native
    platform first (the one a reader gets), then every capability x threads, then jitters."""
    runs = [{"name": "native, 1 thread", "env": {}, "jitter": None}]
    native = torch.backends.cpu.get_cpu_capability().lower()
    for cap in capabilities():
        for threads in (1, 2):
            if cap == native and threads == 1:
                continue                         # the native run already
            runs.append({"name": f"ATEN_CPU_CAPABILITY={cap}, {threads} thread"
                                 + ("s" if threads > 1 else ""),
                         "env": {"ATEN_CPU_CAPABILITY": cap, "ATTN_THREADS": str(threads)},
                         "jitter": None})
    runs += [{"name": f"initial weights x (1 ± 2^-23), draw {k}", "env": {}, "jitter": k}
             for k in JITTERS]
    return runs


def token_counts(check: stored.LiveCheck) -> int:
    """Held-out target tokens a token metric of ``check`` counts: eval batch x target length."""
    cfg = check.config
    batch = cfg.task().sample(torch.Generator().manual_seed(0), 1)
    return int(cfg.train_kwargs()["eval_batch_size"] * batch["tgt"].shape[-1])


def _checks(only: list[str] | None = None) -> list:
    """The live checks, or those named in ``only``, in the order of registry.live_checks()."""
    checks = registry.live_checks()
    return checks if only is None else [c for c in checks if c.name in only]


def worker(out: str, jitter: int | None, only: list[str] | None = None) -> None:
    """In a fresh process (its platform set by the environment): train every live check's
    members (or those of the checks named in ``only``) and save what they recorded to
    ``out`` (npz), with this process's platform."""
    arrays = {}
    token = training.INIT_JITTER.set(jitter)
    try:
        for i, check in enumerate(_checks(only)):
            h = check.train()
            for k, v in check.now(h).items():
                arrays[f"{i}/{k}"] = np.asarray(v)
            arrays[f"{i}/eval_steps"] = h.eval_steps
    finally:
        training.INIT_JITTER.reset(token)
    arrays["platform"] = np.array(stored.platform_key())
    np.savez(out, **arrays)


def _run_worker(run: dict, folder: Path, only: list[str] | None = None) -> dict:
    out = folder / (run["name"].replace(" ", "_").replace(",", "").replace("/", "_")
                    .replace("=", "-") + ".npz")
    if out.exists():                             # --runs DIR: measured before, reused
        with np.load(out, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    env = {**os.environ, "ATTN_MODE": "fast", "ATTN_WORKERS": "1", "ATTN_THREADS": "1",
           **run["env"]}
    cmd = [sys.executable, __file__, "--worker", str(out)]
    if run["jitter"] is not None:
        cmd += ["--jitter", str(run["jitter"])]
    if only is not None:
        cmd += ["--only", ",".join(only)]
    t = time.time()
    subprocess.run(cmd, env=env, check=True)
    with np.load(out, allow_pickle=False) as z:
        data = {k: z[k] for k in z.files}
    print(f"[envelope] {run['name']}: {time.time() - t:.0f} s", flush=True)
    return data


def measure_envelopes(folder: str | None = None, missing: bool = False) -> None:
    """Measure and write ``envelopes.json`` (then the manifest). Each run's records are kept
    in ``folder`` (default: a new temporary folder, printed), and reused from there.
    ``missing``: only the live checks that have no envelope yet (a new chapter's); the
    others keep theirs as measured (on another machine their perturbations would differ)."""
    stored.write_manifest()                      # the entries as they are now
    old, kept, only = {}, {}, None
    if missing:
        old = json.loads((stored.STORE / stored.ENVELOPES).read_text())
        kept = old["checks"]
        only = [c.name for c in registry.live_checks() if c.name not in kept]
        if not only:
            print("[envelope] every live check has its envelope")
            return
    checks = _checks(only)
    runs = perturbations()
    folder = Path(folder or tempfile.mkdtemp(prefix="attn_envelope_runs_"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"[envelope] {len(runs)} runs of {len(checks)} live checks; records in {folder}")
    # One-thread runs two at a time (one per core); two-thread runs alone: two of them side
    # by side put four threads on two cores, which slows torch down many times over.
    alone = [r for r in runs if r["env"].get("ATTN_THREADS", "1") != "1"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = dict(zip([r["name"] for r in runs if r not in alone],
                        pool.map(lambda r: _run_worker(r, folder, only),
                                 [r for r in runs if r not in alone])))
    done.update({r["name"]: _run_worker(r, folder, only) for r in alone})
    results = [done[r["name"]] for r in runs]
    out = dict(kept)
    for i, check in enumerate(checks):
        record, steps = check.record()
        for run, data in zip(runs, results):
            if not np.array_equal(data[f"{i}/eval_steps"], steps):
                raise SystemExit(f"{check.name}: {run['name']} evaluated at other steps")
        spec = stored.build_envelope(
            check.name, record, steps, check.live, token_counts(check),
            [{"run": run["name"], "platform": str(data["platform"]), "jitter": run["jitter"],
              "now": {k: data[f"{i}/{k}"] for k in record}}
             for run, data in zip(runs, results)])
        out[check.name] = spec
        env_last = {k: v["envelope"][-1] for k, v in spec["keys"].items()}
        print(f"[envelope] {check.name}: bitwise on {len(spec['bitwise_on'])} platform(s); "
              f"envelope at the last step {env_last}")
    note = {"measured": time.strftime("%Y-%m-%d"), "measured_on": stored.platform_key(),
            "perturbations": [r["name"] for r in runs]}
    if missing:          # the others' note stays; what was added, when and where, is kept
        added = old.get("added", []) + [{**note, "checks": only}]
        note = {k: old[k] for k in ("measured", "measured_on", "perturbations") if k in old}
        note["added"] = added
    path = stored.write_envelopes(out, note)
    print(f"[envelope] wrote {path} and the manifest")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only list missing entries")
    ap.add_argument("--force", action="store_true", help="recompute every entry")
    ap.add_argument("--envelopes", action="store_true", help="measure the envelopes")
    ap.add_argument("--manifest", action="store_true", help="only rewrite the manifest")
    ap.add_argument("--runs", help="keep (and reuse) the envelope runs' records here")
    ap.add_argument("--missing", action="store_true",
                    help="with --envelopes: only the live checks without an envelope")
    ap.add_argument("--only", help=argparse.SUPPRESS)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--jitter", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker, args.jitter,
                      args.only.split(",") if args.only else None)
    if args.manifest:
        print(f"[store] wrote {stored.write_manifest()}")
        return
    missing, seen = [], set()
    while True:  # again after storing: chapter 5's combinations follow from its stored screen
        todo = [cfg for cfg in configs() if stored.stored_path(cfg).name not in seen]
        if not todo:
            break
        stored_now = False
        for cfg in todo:
            path = stored.stored_path(cfg)
            seen.add(path.name)
            if path.exists() and not args.force:
                continue
            missing.append(path.name)
            if args.check:
                continue
            t = time.time()
            stored.store(cfg)
            stored_now = True
            print(f"[store] {path.name}: {time.time() - t:.0f} s", flush=True)
        if stored_now:
            # what the next pass's configs() read (chapter 5's screen) is read through the
            # manifest: it must list the entries just stored
            stored.write_manifest()
    if args.check:
        problems = [f"missing: {m}" for m in missing]
        for cfg in configs():
            try:
                stored.verify_file(stored.stored_path(cfg))
            except stored.StoredMismatch as e:
                problems.append(str(e))
        if problems:
            print("\n".join(problems))
            sys.exit(1)
        return
    if missing or args.envelopes:
        # new entries need their spread measured (and the manifest); the others keep theirs
        # unless every entry was trained again (--force) or every envelope asked for
        measure_envelopes(args.runs, missing=args.missing or not (args.force or args.envelopes))
    else:
        stored.write_manifest()


if __name__ == "__main__":
    main()
