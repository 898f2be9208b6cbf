"""Chapter 7's open question, one intervention (exploratory: no claim of the chapter rests
on it): does the end step's loss do its harm in the first steps, or over the whole run?

    ATTN_MODE=fast python benchmarks/ch7_end_token/intervene.py [--only TEXT] [--smoke]

Every run is a seed of the stored sweep's row "both, L=20" (chapter 4's fast model, the end
token on both sides, 300 steps, seeds 0-39, the same data), with the end step's loss
switched at training step S:

- ``off from S``: the end step's loss trains steps 0 .. S-1 and is left out from step S on;
- ``on from S``: it is left out of steps 0 .. S-1 and trains from step S on;
- ``on from S, ramped over 40`` (S = 20 and 60): as *on from S*, but over steps S .. S + 39
  the end step's loss counts in a growing share of each batch's examples (1/41 .. 40/41).
  The control for
  the jolt a loss switched on mid-run gives Adam: its second moment averages the squared
  gradients of every step so far, so a component that appears at once takes large steps
  at first.

S = 0 and "never" are the sweep's rows "no end loss" and "both": before anything else the
script trains those rows' first two seeds through the same switch and requires every
stored number of them (copy, token and attention accuracy at every evaluation, 4 decimals)
to come out again; on a machine where the stored rows do not reproduce, ``--no-check``
skips that (and the script says so in what it writes). Every run, ``--smoke`` too, first
checks that the switch acts at the step it names (:func:`check_switch_step`).

The mechanism runs (``mechanism.json``) part the runs that fail from those that copy between
steps 20 and 40: the end step's push on the diagonal turns negative from step ~20 and the
attention accuracy tells them apart by step 40 (AUC 0.94). S = 20 and 60 bracket that.

Writes ``intervene.json`` beside this file (atomically, after every condition; a condition
already there with the same configuration is kept): each condition's final copy accuracy
per seed, its successes with a 95 % Wilson interval, and the seeds' outcomes paired with the
sweep's "both" and "no end loss" rows (the same seeds: McNemar's exact test and the paired
difference with its 95 % interval, computed again for every stored condition at each run). ``--smoke``: two seeds, 20 steps, S = 10 (one of them
ramped over 5), into a temporary folder, no check.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
from joblib import Parallel, delayed

from attn_core.chapters import ch7_end_token as ch
from attn_core.config import env_max_steps, env_workers, get_mode, set_threads
from attn_core.data import CopyTask
from attn_core.metrics import success_rate
from attn_core.stats import mcnemar, paired_difference
from attn_core.stored import write_json, config_record, platform
from attn_core.training import Trainer

HERE = Path(__file__).resolve().parent
OUT = HERE / "intervene.json"
#: The switch steps, and the conditions: name -> (end loss before S, end loss from S on, S).
SWITCH_STEPS = (20, 60)
CONDITIONS = {f"{kind} from {s}": (kind == "off", kind == "on", s)
              for s in SWITCH_STEPS for kind in ("off", "on")}
#: The Adam control: "on from 20" with the end step's loss ramped in over 40 steps
#: (name -> (before, after, S, ramp)).
RAMP = 40
CONDITIONS[f"on from 20, ramped over {RAMP}"] = (False, True, 20, RAMP)
CONDITIONS[f"on from 60, ramped over {RAMP}"] = (False, True, 60, RAMP)
#: The references the switch must reproduce: sweep row -> (before, after, S).
REFERENCES = {"both, L=20": (True, True, 10**9), "no end loss, L=20": (False, False, 0)}


@dataclass
class Switched:
    """A copy task whose end-step loss switches at training step ``at``: a member's batches
    come from ``before`` for steps 0 .. at-1 and from ``after`` from step ``at`` on. The two
    tasks draw the same tokens from a generator (they differ only in ``loss_mask``). The
    engine draws a member's held-out batch first (from ``before``), then one batch a step,
    so one instance serves one member of one fit (:func:`train_seed` makes a fresh one).

    ``ramp`` > 0 (switching on only): over steps ``at`` .. ``at + ramp - 1`` the end step's
    loss counts in the first k of the batch's examples, k rising by equal parts from
    B / (ramp + 1) to B ramp / (ramp + 1), so that the end step's gradient grows in
    gradually instead of arriving at once."""

    before: CopyTask
    after: CopyTask
    at: int
    ramp: int = 0
    calls: int = 0

    def __post_init__(self):
        if self.ramp and (self.before.end_loss or not self.after.end_loss):
            raise ValueError("ramp > 0 needs the end loss switched on: before without it, "
                             "after with it")

    def sample(self, generator, batch_size):
        step = self.calls - 1                      # the first call is the held-out batch
        self.calls += 1
        batch = (self.before if step < self.at else self.after).sample(generator, batch_size)
        if self.ramp and 0 <= step - self.at < self.ramp:
            k = round(batch_size * (step - self.at + 1) / (self.ramp + 1))
            ends = batch["tgt"] == self.after.vocab          # the end token's steps
            first = (torch.arange(batch_size) < k).unsqueeze(1)
            batch["loss_mask"] = ~ends | first
        return batch


def train_seed(cfg: ch.EndTokenConfig, seed: int, before: bool, after: bool,
               at: int, ramp: int = 0) -> dict:
    """Seed ``seed`` of ``cfg`` with the end step's loss ``before`` step ``at`` and ``after``
    it: every evaluation's copy, token and attention accuracy (4 decimals), and every
    step's training loss (``train_loss``, full precision)."""
    set_threads(1)
    task = cfg.task()
    switched = Switched(replace(task, end_loss=before), replace(task, end_loss=after), at,
                        ramp)
    h = Trainer(progress=False, **cfg.train_kwargs()).fit(
        cfg.model_fn(task), switched, [seed], probes=[ch.end_probe(task)])
    if switched.calls != cfg.steps + 1:
        raise RuntimeError(f"the engine drew {switched.calls} batches, not a held-out batch "
                           f"and {cfg.steps} training batches: Switched no longer knows "
                           f"which step it serves")
    return {"copy_acc": np.round(h.probes["copy_acc"][0].astype(float), 4).tolist(),
            "token_acc": np.round(h.metrics["token_acc"][0].astype(float), 4).tolist(),
            "attn_acc": np.round(h.metrics["attn_acc"][0].astype(float), 4).tolist(),
            "train_loss": h.train_loss[0].astype(float).tolist()}


def run_all(cfg, jobs: list[tuple[int, bool, bool, int]], workers: int) -> list[dict]:
    """``train_seed`` for each (seed, before, after, at[, ramp]), on ``workers``
    processes."""
    return Parallel(n_jobs=workers, backend="loky")(
        delayed(train_seed)(cfg, *j) for j in jobs)


def check_switch_step(cfg, workers: int, at: int = 5) -> None:
    """Exit unless the switch acts at step ``at`` exactly: seed 0, ``at`` + 3 steps, with
    the end step's loss switched off at ``at`` has the training losses of the run with it
    throughout up to step ``at`` - 1, and differs from step ``at`` on (the loss there
    leaves the end step out); switched on at ``at``, ramped or not, likewise against the
    run without; and the ramp's first two steps differ from the unramped switch's."""
    short = replace(cfg, steps=at + 3, seeds=cfg.seeds[:1])
    s = short.seeds[0]
    runs = run_all(short, [(s, True, True, at), (s, True, False, at),
                           (s, False, False, at), (s, False, True, at),
                           (s, False, True, at, 2)], workers)
    loss = [np.asarray(r["train_loss"]) for r in runs]
    for a, b in ((loss[0], loss[1]), (loss[2], loss[3]), (loss[2], loss[4])):
        if not (np.array_equal(a[:at], b[:at]) and (a[at:] != b[at:]).all()):
            raise SystemExit(f"the switch does not act at step {at}: training losses "
                             f"{a.round(5).tolist()} against {b.round(5).tolist()}")
    if (loss[4][at:at + 2] == loss[3][at:at + 2]).any():
        raise SystemExit("the ramp does not change the steps it ramps")


def check_references(cfg, sweep: dict, workers: int) -> None:
    """Exit unless the switch reproduces the first two seeds of both reference rows."""
    jobs, where = [], []
    for row, (before, after, at) in REFERENCES.items():
        for i in range(2):
            jobs.append((cfg.seeds[i], before, after, at))
            where.append((row, i))
    worst = 0.0
    for (row, i), got in zip(where, run_all(cfg, jobs, workers)):
        for key in ("copy_acc", "token_acc", "attn_acc"):
            values = got[key]
            d = np.abs(np.asarray(values) - np.asarray(sweep[row][key][i])).max()
            worst = max(worst, float(d))
            if d > 0:
                print(f"[intervene] {row}, seed {i}, {key}: differs from the stored row "
                      f"by up to {d:.4f}")
    if worst > 0:
        raise SystemExit("the switch does not reproduce the stored rows here (see above); "
                         "--no-check runs anyway")
    print("[intervene] the switch reproduces the stored rows 'both' and 'no end loss' "
          "(seeds 0-1, every evaluation, 4 decimals)", flush=True)


def summary(finals: list[float], sweep: dict) -> dict:
    """Successes, Wilson interval, and the seeds paired with the reference rows (the same
    seeds, initialisations and data): McNemar's exact test on the discordant seeds and
    the paired difference of the rates with its 95 % interval (this row minus the
    reference's)."""
    ok = np.asarray(finals) > ch.SUCCESS_LEVEL
    k, n = int(ok.sum()), ok.size
    out = {"success": [k, n], "rate": list(success_rate(ok)), "paired": {}}
    for row in REFERENCES:
        ref = np.asarray(sweep[row]["copy_acc"])[:n, -1] > ch.SUCCESS_LEVEL
        d, lo, hi = paired_difference(ok, ref)
        out["paired"][row] = {"both copy": int((ok & ref).sum()),
                              "only this": int((ok & ~ref).sum()),
                              "only the row": int((~ok & ref).sum()),
                              "p (McNemar)": mcnemar(ok, ref)["p"],
                              "difference": [d, lo, hi]}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="run the conditions whose name has TEXT")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--no-check", action="store_true",
                    help="skip reproducing the stored rows first")
    args = ap.parse_args()
    if get_mode() != "fast":
        raise SystemExit("set ATTN_MODE=fast: the interventions are on the fast sweep's runs")
    if env_max_steps() is not None:
        raise SystemExit("unset ATTN_MAX_STEPS (--smoke runs a short check)")
    workers = env_workers()
    sweep = ch.load_sweep()
    cfg = ch.sweep_config("both, L=20")
    conditions = CONDITIONS
    out_path = OUT
    if args.smoke:
        cfg = replace(cfg, steps=20, seeds=cfg.seeds[:2])
        conditions = {"off from 10": (True, False, 10), "on from 10": (False, True, 10),
                      "on from 10, ramped over 5": (False, True, 10, 5)}
        out_path = Path(tempfile.mkdtemp(prefix="intervene_smoke_")) / "intervene.json"
    elif not args.no_check:
        check_references(cfg, sweep, workers)
    check_switch_step(cfg, workers)
    out = json.loads(out_path.read_text()) if out_path.exists() else {}
    record = config_record(cfg)
    for name, stored in out.items():        # the paired summaries, computed again
        stored.update(summary(stored["final copy_acc"], sweep))
    for name, (before, after, at, *ramp) in conditions.items():
        if args.only not in name:
            continue
        if out.get(name, {}).get("config") == record:
            print(f"[intervene] {name}: kept from {out_path.name}")
            continue
        t = time.time()
        runs = run_all(cfg, [(s, before, after, at, *ramp) for s in cfg.seeds], workers)
        finals = [r["copy_acc"][-1] for r in runs]
        out[name] = {"config": record, "end loss before": before, "end loss after": after,
                     "switch step": at, "ramp steps": ramp[0] if ramp else 0,
                     "final copy_acc": finals,
                     "attn_acc": [r["attn_acc"] for r in runs],
                     "copy_acc": [r["copy_acc"] for r in runs],
                     "checked against the stored rows": not (args.no_check or args.smoke),
                     "machine": f"{platform()['cpu']}, {os.cpu_count()} cores",
                     "seconds": round(time.time() - t, 1),
                     **summary(finals, sweep)}
        write_json(out_path, out)
        s = out[name]
        k, n = s["success"]
        _, lo, hi = s["rate"]
        pb = s["paired"]["both, L=20"]["p (McNemar)"]
        pn = s["paired"]["no end loss, L=20"]["p (McNemar)"]
        print(f"[intervene] {name}: {k}/{n} copy [{lo:.2f}, {hi:.2f}]; p vs both "
              f"{pb:.2g}, vs no end loss {pn:.2g} ({s['seconds']:.0f} s)", flush=True)
    write_json(out_path, out)
    print(f"[intervene] {out_path}")


if __name__ == "__main__":
    sys.exit(main())
