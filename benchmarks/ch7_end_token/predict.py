"""Chapter 7, issue #36 item 3: does a quantity measured at initialisation predict which runs
copy? For each condition of ``ch7_end_token.PUSH_ROWS`` (the eight conditions at L = 20 of
the mechanism runs), the step-0 push on the diagonal margin from the copied words' loss
(``push_diag_copy`` of ``push_probe``: how much one plain gradient step on that loss, at
initialisation, raises the attention score of the aligned position above the source mean),
and the area under the ROC curve of that push against the run's outcome in the stored sweep
(copy accuracy above 0.95 at step 300), with a permutation p-value
(``ch7_end_token.outcome_auc``: 20,000 shuffles of the outcomes, two-sided around 0.5).

    python benchmarks/ch7_end_token/predict.py           # the table, from the stored pushes
    ATTN_MODE=fast python benchmarks/ch7_end_token/predict.py --write
        # computes the pushes (each seed's model at initialisation, one step) and writes the
        # chapter's stored file (ch7_end_token.PUSH_FILE) and the manifest
    ATTN_MODE=fast ATTN_WORKERS=2 python benchmarks/ch7_end_token/predict.py --held-out
        # the test on fresh seeds: trains the six conditions where seeds 0-39 found the
        # prediction (ch7_end_token.HELD_OUT_ROWS) on seeds 40-79, 300 steps, and their
        # pushes; writes ch7_end_token.HELD_OUT_FILE and the manifest

The stored pushes are the mechanism runs' step-0 evaluations (``mechanism.json``, the same
models and evaluation batch): ``--write`` checks that they agree.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from attn_core.chapters import ch7_end_token as ch
from attn_core.stored import platform, write_manifest

from _common import require_fast, train_rows

MECHANISM = Path(__file__).resolve().parent / "mechanism.json"


def write() -> None:
    require_fast()
    mech = json.loads(MECHANISM.read_text())["rows"]
    out = {}
    note = (f"Trained by {Path(__file__).name} --write on {time.strftime('%Y-%m-%d')} "
            f"({platform()['cpu']}): each seed's step-0 push of push_probe.")
    for name in ch.PUSH_ROWS:
        cfg = ch.push_config(name)
        t = time.time()
        out[name] = ch.push_row(cfg, cfg.run(progress=False))
        gap = np.abs(np.array(out[name]["push_diag_copy"])
                     - np.asarray(mech[name]["push_diag_copy"], dtype=float)[:, 0]).max()
        print(f"[ch7 push] {name}: {time.time() - t:.1f} s; largest difference from the "
              f"mechanism run's step 0: {gap:.2g}", flush=True)
    ch.PUSH_STORED.write(out, note=note)
    write_manifest()


def held_out() -> None:
    require_fast()
    train_rows(ch.HELD_OUT_STORED, f"{Path(__file__).name} --held-out",
               "seeds 40-79, chosen after seeds 0-39 were analysed", resume=False)


def adam() -> None:
    require_fast()
    train_rows(ch.ADAM_PUSH_STORED, f"{Path(__file__).name} --adam",
               "the plain gradient's push and Adam's first step's, seeds 0-39 and 40-79")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="compute and store the pushes")
    ap.add_argument("--held-out", action="store_true", help="train and store seeds 40-79")
    ap.add_argument("--adam", action="store_true", help="store Adam's first step's pushes")
    args = ap.parse_args()
    if args.adam:
        adam()
    if args.write:
        write()
    if args.held_out:
        held_out()
    pred = ch.push_prediction(ch.load_push(), ch.load_sweep())
    print(f"{'condition':24s} {'copy':>5s}  {'AUC, step-0 push':>16s}  {'p':>6s}")
    for name, r in pred.items():
        auc, p = ("-", "-") if r["auc"] is None else (f"{r['auc']:.2f}", f"{r['p']:.2g}")
        print(f"{name:24s} {r['k']:2d}/{r['n']:<2d} {auc:>16s}  {p:>6s}")
    if ch.HELD_OUT_FILE.exists():
        test = ch.held_out_auc(ch.load_held_out())
        print("held out, seeds 40-79:")
        for name, r in test["rows"].items():
            auc = "-" if r["auc"] is None else f"{r['auc']:.2f}"
            print(f"{name:24s} {r['k']:2d}/{r['n']:<2d} {auc:>16s}")
        print(f"mean AUC {test['mean_auc']:.3f}, one-sided p {test['p']:.2g}")
    if ch.ADAM_PUSH_FILE.exists():
        print(ch.adam_push_table(ch.load_adam_push(), ch.load_sweep(), ch.load_held_out()))


if __name__ == "__main__":
    main()
