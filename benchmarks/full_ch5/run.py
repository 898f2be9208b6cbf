"""Chapter 5 at the papers' scale (issue #33 item 4): the screen, the combinations and the
control at ``RESCUE.full`` (L = 40, GRUs of hidden 256, batch 128, 200 steps, K = 8), cut
to what decides the chapter's claims, resumable across sessions.

Where full mode's steps go (``--accounting``, from the configs, no training): ~110,000
model-steps with one screen round, ~206,000 at the screen's cap of three rounds. This script
trains the same runs as the chapter's full mode, under the same cache keys, with three cuts
that decide no claim:

1. **A head's verdict that is settled is not trained again.** A head is "bad" only if it
   ends below 0.6 on *every* data stream, "good" only if above 0.95 on every one. After the
   first stream, a head that ended in between is inconsistent whatever the others show, so
   streams 1-2 train only the heads that were bad on stream 0 and the first ``GOOD_CHECKED``
   good ones (the combinations need a few good heads, not all of them). Each head's numbers
   do not depend on which other heads train beside it (the engine's members are
   independent), so they are the ones the chapter's full screen would give.
2. **Rounds only while heads are missing**: another 80 candidates (the chapter's round 2:
   same seeds, same cache entry) only while fewer than ``k_combo`` = 8 heads are bad on
   every stream -- up to ``MAX_CANDIDATES`` (400, five rounds: at this size round 1 found
   2 such heads of 80, so the chapter's cap of 240 looked too few; measured 2026-11-27,
   round 2 brought them to 8, and the screen finished at 160, within the chapter's cap).
3. **Combinations only as many as the intervals need**: ``N_RUNS`` = 20 runs of each kind
   (95 % Wilson half-width at most 0.20) instead of 50; the first 20 of the chapter's 50.

Stages (``--until``): ``screen`` (rounds as above), ``combos`` (all bad, one good, random,
all bad summed at K = 8; random heads at K = 2 and 4; the bad heads alone on the control
task). ``results.json`` is rewritten after every run (atomically), so an interrupted session
leaves what it measured; every finished candidate or run is in the results cache
(``ATTN_CACHE``: keep it on a disk that survives the session), so a run started again trains
only what is missing. The cache key includes the package's source: run every stage with the
same ``attn_core`` (``results.json`` records which commit's).

    ATTN_MODE=full ATTN_CLUSTER=local:2 ATTN_CACHE=/persistent/attn_cache \\
        python benchmarks/full_ch5/run.py [--accounting] [--until screen|combos]
        [--kinds NAME ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

import attn_core
from attn_core.chapters import ch5_multihead as ch
from attn_core.config import env_max_steps, get_mode
from attn_core.metrics import classify_heads
from attn_core.stored import write_json, platform

OUT = Path(__file__).resolve().parent / "results.json"
#: Good heads (good on stream 0) checked on the other streams, in seed order.
GOOD_CHECKED = 10
#: Runs of each kind of combination (the chapter's full mode: 50).
N_RUNS = 20
#: The screen's cap (the chapter's full mode: 240, three rounds). Measured in round 1 at
#: this size: 2 of 80 heads bad on all three streams (8 on the first, 4 of them on the
#: second too), so the 8 bad heads of the combinations seemed to need about four rounds;
#: round 2 found the other 6 (2026-11-27: the screen finished at 160 candidates).
MAX_CANDIDATES = 400


def accounting(cfg: ch.RescueConfig) -> dict:
    """Model-steps of every part of the chapter in full mode (a K-head model counted once;
    the screen at one round and at its cap of rounds)."""
    steps = cfg.copy.steps
    rounds = len(cfg.screen_sizes())
    screen = cfg.n_candidates * len(cfg.data_seeds) * steps
    combos = (len(ch.COMBINATION_KINDS) + 1) * cfg.n_combinations * steps
    random = {f"random K={k}": cfg.n_random * steps for k in cfg.ks
              if k > 1 and k != cfg.k_combo}
    control = cfg.k_combo * (cfg.control_steps or steps)
    parts = {"screen, one round": screen, f"screen, {rounds} rounds (cap)": screen * rounds,
             f"K={cfg.k_combo} combinations (3 kinds + summed)": combos, **random,
             "control runs (bad heads, K=1)": control}
    total = screen + combos + sum(random.values()) + control
    return {"parts": parts, "total, one screen round": total,
            "total, screen at its cap": total + screen * (rounds - 1)}


def _commit() -> str:
    root = Path(attn_core.__file__).resolve().parents[1]
    try:
        return subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


class Results:
    """results.json, rewritten atomically after every run."""

    def __init__(self, cfg):
        self.data = {"accounting": accounting(cfg),
                     "machine": f"{platform()['cpu']}, {os.cpu_count()} cores",
                     "attn_core": f"{Path(attn_core.__file__).resolve().parent} at {_commit()}",
                     "cuts": {"good_checked": GOOD_CHECKED, "n_runs": N_RUNS},
                     "runs": {}}
        if OUT.exists():
            import json
            old = json.loads(OUT.read_text())
            self.data["runs"] = old.get("runs", {})
            if "screen" in old:
                self.data["screen"] = old["screen"]
            for run in self.data["runs"].values():      # the sessions before this field
                run.setdefault("attn_core", old.get("attn_core"))
            if "screen, stream 0" in old:   # the first stage's record (570d42a)
                self.data["runs"].setdefault("screen round 1, stream 0", {
                    "seconds": old["screen, stream 0"]["seconds"]})

    def recorded(self, name: str, config: ch.HeadsRun) -> bool:
        """Whether ``name`` is already recorded for exactly ``config``'s heads, data and
        steps (a later session whose results cache is gone trains only what is missing)."""
        old = self.data["runs"].get(name)
        if not old or "final_token_acc" not in old:
            return False
        same = (old["head_seeds"] == [list(s) if isinstance(s, tuple) else s
                                      for s in config.head_seeds]
                and old["data_seeds"] == list(config.data_seeds)
                and old["steps"] == config.copy.steps and old["tag"] == config.tag)
        if not same:
            raise SystemExit(f"results.json records {name!r} for other heads, data or steps "
                             f"than this run: move it aside to train it again")
        print(f"[full_ch5] {name}: recorded ({old['seconds']:.0f} s), not trained again")
        return True

    def run(self, name: str, config: ch.HeadsRun):
        """Train (or read back) one run; record its final accuracies and curves."""
        if self.recorded(name, config):
            return None
        t = time.time()
        h = config.run()
        seconds = round(time.time() - t, 1)
        before = self.data["runs"].get(name, {})
        if h.cached and before.get("seconds") is not None:
            seconds = before["seconds"]            # the training's time, not the read's
        self.data["runs"][name] = {
            "head_seeds": [list(s) if isinstance(s, tuple) else s for s in config.head_seeds],
            "data_seeds": list(config.data_seeds),
            "steps": config.copy.steps, "tag": config.tag,
            "eval_steps": h.eval_steps.tolist(),
            "final_token_acc": np.round(h.metrics["token_acc"][:, -1], 4).tolist(),
            "token_acc": np.round(h.metrics["token_acc"], 4).tolist(),
            # each head's attention accuracy (runs, evaluations, K): is it diagonal?
            "head_attn_acc": np.round(h.probes["head_attn_acc"], 4).tolist(),
            "seconds": seconds, "cached": bool(h.cached),
            "attn_core": self.data["attn_core"]}
        self.save()
        print(f"[full_ch5] {name}: {len(config.head_seeds)} runs, {seconds:.0f} s"
              + (" (read back)" if h.cached else ""))
        return h

    def save(self):
        write_json(OUT, self.data)


def recorded_screen(cfg, res: Results) -> dict | None:
    """The screen's labels as ``results.json`` recorded them when it finished (enough good
    and bad heads), or None. Its runs' final accuracies are recorded beside them, so a
    session whose results cache is gone does not train the screen again for its labels."""
    rec = res.data.get("screen")
    if not rec or rec["counts"]["good"] < 1 or rec["counts"]["bad"] < cfg.k_combo:
        return None
    labels = {int(k): v for k, v in rec["labels"].items()}
    print(f"[full_ch5] the screen as recorded ({rec['candidates']} candidates): "
          f"{rec['counts']}")
    return labels


def screen(cfg, res: Results) -> dict:
    """Rounds of ``n_candidates`` until ``k_combo`` heads are bad on every stream (and one
    is good), streams after the first trained only for heads still undecided."""
    good, bad = cfg.good, cfg.bad
    final: dict[int, dict[int, float]] = {}          # head -> {stream: final accuracy}
    drawn, checked = 0, 0                            # good heads sent to the other streams
    first = cfg.data_seeds[0]
    for r, size in enumerate(cfg.screen_sizes(), start=1):
        cands = cfg.candidates(size)[drawn:]
        for i, d in enumerate(cfg.data_seeds):
            if i == 0:
                todo = cands
            else:   # run on every stream so far, and still all bad or all good
                alive = [s for s in cands if len(final[s]) == i]
                todo = [s for s in alive if all(a < bad for a in final[s].values())]
                goods = [s for s in alive if all(a > good for a in final[s].values())]
                if i == 1:
                    goods = goods[:max(0, GOOD_CHECKED - checked)]
                    checked += len(goods)
                todo = sorted(todo + goods)
            if not todo:
                continue
            h = res.run(f"screen round {r}, stream {d}",
                        cfg.heads_run(todo, [d] * len(todo), "heads-screen"))
            for s, a in zip(todo, h.metrics["token_acc"][:, -1]):
                final.setdefault(s, {})[d] = float(a)
        drawn = size
        labels = _labels(cfg, final)
        n = {k: sum(v == k for v in labels.values())
             for k in ("good", "bad", "inconsistent", "unchecked")}
        print(f"[full_ch5] after round {r} ({drawn} candidates): {n}")
        res.data["screen"] = {"candidates": drawn, "counts": n,
                              "labels": {str(k): v for k, v in labels.items()},
                              "first stream": first}
        res.save()
        if n["good"] >= 1 and n["bad"] >= cfg.k_combo:
            return labels
    raise SystemExit(f"the screen drew its cap of {drawn} candidates: {n}")


def _labels(cfg, final) -> dict[int, str]:
    """The chapter's labels (``classify_heads``: good / bad on every stream, else
    inconsistent) of the heads run on every stream; of the others, inconsistent (settled by
    the streams they ran on) or unchecked (good on those streams, not run on the rest)."""
    out = {}
    for s, by_stream in final.items():
        acc = np.array([list(by_stream.values())])
        if acc.shape[1] == len(cfg.data_seeds):
            out[s] = str(classify_heads(acc, cfg.good, cfg.bad)[0])
        else:
            out[s] = "unchecked" if (acc > cfg.good).all() else "inconsistent"
    return out


def combo_runs(cfg, labels: dict) -> dict:
    """name -> run of §3-5 at ``N_RUNS`` each: the chapter's ``combination_configs`` from the
    screen's labels, then its control (the bad heads alone on the control task)."""
    cfg = replace(cfg, n_combinations=N_RUNS, n_random=N_RUNS)
    drawn = np.array([labels[s] for s in cfg.candidates(len(labels))])
    K = cfg.k_combo
    out = {}
    for key, run in ch.combination_configs(cfg, drawn).items():
        name = f"K={key[len('random K='):]} random" if key.startswith("random K=") else \
            f"K={K} {key}"
        out[name] = run
    bad = cfg.pools(drawn)["bad"]
    # = cfg.control_run(bad) (ch5_multihead, later than d1c1a11): written out so that the
    # run also resumes on d1c1a11's attn_core, whose cache keys the first sessions' results
    out["control, bad heads"] = cfg.heads_run(bad, [0] * len(bad), "heads-control",
                                              copy=cfg.control_copy())
    return out


def combos(cfg, labels: dict, res: Results, kinds: list[str] | None = None) -> None:
    """Train :func:`combo_runs`, those named in ``kinds`` first, in that order (None: all,
    in the chapter's order); a name that is not one of them is refused, naming them."""
    runs = combo_runs(cfg, labels)
    unknown = [k for k in kinds or [] if k not in runs]
    if unknown:
        raise SystemExit(f"--kinds: {unknown} not among {list(runs)}")
    for name in (kinds or list(runs)):
        res.run(name, runs[name])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--accounting", action="store_true", help="print the steps, train nothing")
    ap.add_argument("--until", choices=("screen", "combos"), default="combos")
    ap.add_argument("--kinds", nargs="+", metavar="NAME",
                    help="train only these runs of the combos stage, in this order (e.g. "
                         "'K=2 random' 'control, bad heads'); default: all")
    args = ap.parse_args()
    if get_mode() != "full":
        raise SystemExit("set ATTN_MODE=full: this script runs the papers' scale")
    cfg = replace(ch.RESCUE.full, max_candidates=MAX_CANDIDATES)
    acc = accounting(cfg)
    for name, n in acc["parts"].items():
        print(f"{name:42s} {n:>8,d} model-steps")
    print(f"{'total (one screen round)':42s} {acc['total, one screen round']:>8,d}")
    print(f"{'total (screen at its cap)':42s} {acc['total, screen at its cap']:>8,d}")
    if args.accounting:
        return
    if env_max_steps() is not None:
        raise SystemExit("unset ATTN_MAX_STEPS: a smoke run's numbers are not results")
    res = Results(cfg)
    labels = recorded_screen(cfg, res) if args.until == "combos" else None
    labels = screen(cfg, res) if labels is None else labels
    if args.until == "combos":
        combos(cfg, labels, res, args.kinds)
    print(f"[full_ch5] done; {OUT}")


if __name__ == "__main__":
    main()
