"""Chapter 6's stored sweep: every condition of the chapter at ten seeds, trained once here
and written to ``attn_core/chapters/data/ch6_sweep.json``, which the chapter shows labelled
(its live cells re-run the first seeds of the key rows and check they match).
After a change, measure the live rows' envelopes again: ``python scripts/store_results.py
--envelopes``.

    python benchmarks/ch6_prototype/sweep.py            # every condition missing from the file
    python benchmarks/ch6_prototype/sweep.py --check    # exit 1 if a stored row's config differs
    python benchmarks/ch6_prototype/sweep.py --force    # recompute every row (a model change)

Each condition is :class:`~attn_core.chapters.ch6_transformer.TransformerCopyConfig` at the
fast settings (:data:`~attn_core.chapters.ch6_transformer.TRANSFORMER_BASE`) with the fields
of :data:`~attn_core.chapters.ch6_transformer.SWEEP_CONDITIONS`. A row is stored as soon as
it is trained (atomically: a temporary file, then a rename), with its full configuration, so
an interrupted sweep resumes and a changed configuration is trained again, never mixed up.
Uses ``ATTN_WORKERS`` worker processes (one torch thread each).
"""
import argparse
import json
import sys
import time

import torch

from attn_core.chapters import ch6_transformer as ch
from attn_core.stored import config_record, write_manifest

OUT = ch.SWEEP_FILE


def record(cfg, h) -> dict:
    return ch.sweep_row(cfg, h)


def load() -> dict:
    return json.loads(OUT.read_text()) if OUT.exists() else {}


def save(rows: dict) -> None:
    ch.SWEEP_STORED.write(rows, compact=False)      # atomic, indented
    write_manifest()    # the stored results' sha256 list covers this file


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only compare stored configs")
    ap.add_argument("--force", action="store_true", help="recompute every row")
    args = ap.parse_args()
    torch.set_num_threads(1)
    rows = load()
    stale = []
    for name in ch.SWEEP_CONDITIONS:
        cfg = ch.sweep_config(name)
        if name in rows and rows[name]["config"] == config_record(cfg) and not args.force:
            continue
        stale.append(name)
        if args.check:
            continue
        t = time.time()
        h = cfg.train(progress=False)
        rows[name] = record(cfg, h)
        save(rows)
        r = rows[name]
        print(f"{name:28s} {time.time() - t:5.0f} s  success "
              f"{sum(a > ch.SUCCESS_LEVEL for a in r['final_token_acc'])}/{len(cfg.seeds)}  "
              f"final acc {r['final_token_acc']}", flush=True)
    if args.check and stale:
        print("stale or missing rows:", ", ".join(stale))
        sys.exit(1)


if __name__ == "__main__":
    main()
