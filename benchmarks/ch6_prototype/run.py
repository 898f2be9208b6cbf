"""One condition of chapter 6's prototype sweep (issue #17): the Transformer of
``attn_core.chapters.ch6_transformer`` on chapter 4's copy task, trained in this process
(no cache), printing each seed's final token accuracy, attention accuracy (argmax of the
head-averaged cross-attention on the diagonal) and the lexical probe's alignment accuracy.

    python benchmarks/ch6_prototype/run.py POSITIONS DISTRIBUTION SEEDS [field=value ...]

    python benchmarks/ch6_prototype/run.py learned permutation 10
    python benchmarks/ch6_prototype/run.py learned permutation 10 pos_std=0.02
    python benchmarks/ch6_prototype/run.py learned control 4 attention=uniform

DISTRIBUTION is ``permutation``, ``control`` (chapter 4's: L distinct words of 1.5 L) or
``iid``; ``field=value`` sets any other :class:`TransformerCopyConfig` field (ints, floats,
True/False, strings). The results measured with it are in ``README.md`` beside this file.
"""
import argparse
import dataclasses
import time
from dataclasses import replace

import torch

from attn_core.chapters import ch6_transformer as ch


def parse_value(text: str):
    if text in ("True", "False"):
        return text == "True"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("positions", choices=ch.POSITIONS)
    ap.add_argument("distribution", choices=("permutation", "control", "iid"))
    ap.add_argument("seeds", type=int, help="seeds 0..SEEDS-1")
    ap.add_argument("fields", nargs="*", metavar="field=value")
    args = ap.parse_args()
    names = {f.name for f in dataclasses.fields(ch.TransformerCopyConfig)}
    fields = {}
    for item in args.fields:
        key, sep, value = item.partition("=")
        if not sep or key not in names:
            ap.error(f"{item!r}: expected field=value with a TransformerCopyConfig field "
                     f"({', '.join(sorted(names))})")
        fields[key] = parse_value(value)
    torch.set_num_threads(1)
    cfg = ch.TransformerCopyConfig(positions=args.positions, seeds=tuple(range(args.seeds)),
                                   **fields)
    if args.distribution == "control":
        cfg = replace(cfg, distribution="distinct", vocab=int(1.5 * cfg.length))
    elif args.distribution == "iid":
        cfg = replace(cfg, distribution="iid")
    t = time.time()
    h = cfg.train(progress=False)
    acc, att = h.metrics["token_acc"], h.metrics["attn_acc"]
    print(args.positions, args.distribution, fields, f"{time.time() - t:.0f}s",
          "final acc", acc[:, -1].round(3), "attn", att[:, -1].round(2),
          "beta", h.probes["beta_align_acc"][:, -1].round(2))
    every = max(1, len(h.eval_steps) // 8)
    print("  at steps       ", h.eval_steps[::every])
    print("  mean token acc ", acc.mean(0)[::every].round(2))
    print("  mean attn acc  ", att.mean(0)[::every].round(2))
    print("  mean β align   ", h.probes["beta_align_acc"].mean(0)[::every].round(2))


if __name__ == "__main__":
    main()
