"""Which of the authors' model details make permutation copying hard? (chapter 4, §1)

    ATTN_WORKERS=2 python benchmarks/authors_copy/ablate.py     # ~5 min on the 2-core machine

Trains chapter 4's fast configuration (permutations, L = 20, hidden 64, batch 32, 300 steps,
seeds 0-19) with each combination of the three details in which the authors' code differs
from plain Luong attention -- the context projection P c + b (``head_proj``), the biases
(``bias``) and the end-of-sequence token (``eos``) -- plus the control for the two ends, and
writes ablation.json next to this file and the counts the chapter quotes to
``attn_core/chapters/data/ch4_model_ablation.json`` (``ch4_copy.model_ablation_fast()``;
tests/test_ch4.py checks the two agree).
"""

import json
from dataclasses import replace
from pathlib import Path

from attn_core.chapters import ch4_copy as ch
from attn_core.rows import write_table
from attn_core.stored import write_manifest

ABOUT = ("Which detail of the authors' model makes permutations hard at chapter 4's fast "
         "settings (20 seeds, 300 steps, CopyConfig with three switches), by "
         "benchmarks/authors_copy/ablate.py (its ablation.json holds every run's final "
         "accuracy): name -> [head_proj, bias, eos, runs above 0.95, runs].")

VARIANTS = {"luong": (False, False, False), "proj": (True, False, False),
            "bias": (False, True, False), "eos": (False, False, True),
            "proj+bias": (True, True, False), "authors": (True, True, True)}


def main() -> None:
    base = replace(ch.COPY_BASE.fast, seeds=tuple(range(20)))
    out = {"settings": "permutations, L = 20, hidden 64, batch 32, 300 steps, Adam 1e-3, "
                       "seeds 0-19, fast-mode CopyConfig", "variants": {}, "control": {}}
    for name, (proj, bias, eos) in VARIANTS.items():
        cfg = replace(base, head_proj=proj, bias=bias, eos=eos)
        h = cfg.run(progress=False)
        out["variants"][name] = {"head_proj": proj, "bias": bias, "eos": eos,
                                 "final_acc": h.metrics["token_acc"][:, -1].round(4).tolist()}
        if name in ("luong", "authors"):
            hc = ch.control(cfg).run(progress=False)
            out["control"][name] = hc.metrics["token_acc"][:, -1].round(4).tolist()
        n_ok = int(ch.succeeded(h).sum())
        print(f"{name:10s} proj={proj!s:5} bias={bias!s:5} eos={eos!s:5}: {n_ok}/20 succeed")
    path = Path(__file__).with_name("ablation.json")
    path.write_text(json.dumps(out, indent=1))
    print("wrote", path)
    table = {name: [v["head_proj"], v["bias"], v["eos"],
                    sum(a > ch.SUCCESS_LEVEL for a in v["final_acc"]), len(v["final_acc"])]
             for name, v in out["variants"].items()}
    print("wrote", write_table(ch.MODEL_ABLATION_FILE, table, ABOUT))
    write_manifest()


if __name__ == "__main__":
    main()
