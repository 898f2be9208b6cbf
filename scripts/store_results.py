"""Compute the book's stored results (attn_core/stored_results/): the seed-heavy fast-mode runs that
the chapters load with attn_core.stored.stored_run and re-check live (see that module).

    python scripts/store_results.py            # every stored run that is missing
    python scripts/store_results.py --check    # exit 1 if one is missing (nothing trained)
    python scripts/store_results.py --force    # recompute them all (after a model change)

Runs with ATTN_MODE=fast and uses ATTN_WORKERS worker processes (one torch thread each); the
numbers are the same for any worker count. Each entry is written atomically when it is done.
"""
import argparse
import os
import sys
import time

os.environ.setdefault("ATTN_MODE", "fast")

from attn_core import stored  # noqa: E402
from attn_core.chapters import ch4_copy, ch5_multihead  # noqa: E402


def configs() -> list:
    return ch4_copy.stored_configs() + ch5_multihead.stored_configs()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only list missing entries")
    ap.add_argument("--force", action="store_true", help="recompute every entry")
    args = ap.parse_args()
    missing, seen = [], set()
    while True:  # again after storing: chapter 5's combinations follow from its stored screen
        todo = [cfg for cfg in configs() if stored.stored_path(cfg).name not in seen]
        if not todo:
            break
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
            print(f"[store] {path.name}: {time.time() - t:.0f} s", flush=True)
    if args.check and missing:
        print("missing stored results:", ", ".join(missing))
        sys.exit(1)


if __name__ == "__main__":
    main()
