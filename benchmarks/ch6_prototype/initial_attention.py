"""The cross-attention of chapter 6's Transformer at initialisation, before any training:
for each position setting, over 10 seeds and one held-out batch of 64, its entropy (as a
fraction of log L), its largest weight, L times its diagonal, and the share of its variance
that is the same for every sentence (the variance of the batch-mean pattern over the total).

    python benchmarks/ch6_prototype/initial_attention.py
"""
import math

import torch

from attn_core.chapters import ch6_transformer as ch

SETTINGS = [  # (positions, pos_std, shared_positions)
    ("learned", 1.0, True), ("learned", 1.0, False), ("learned", 0.5, True),
    ("learned", 0.3, True), ("learned", 0.1, True), ("learned", 0.02, True),
    ("sinusoidal", 1.0, True), ("qk", 1.0, True), ("relative", 1.0, True),
    ("none", 1.0, True),
]


def main():
    torch.set_num_threads(1)
    for positions, std, shared in SETTINGS:
        cfg = ch.TransformerCopyConfig(positions=positions, pos_std=std,
                                       shared_positions=shared)
        task = cfg.task()
        batch = task.sample(torch.Generator().manual_seed(0), 64)
        rows = []
        for seed in range(10):
            model = cfg.model_fn(task)(seeds=[seed])
            with torch.no_grad():
                a = model(batch["src"][None], batch["tgt_in"][None])["alpha"][0]  # K,B,T,L
            L = a.shape[-1]
            entropy = -(a * a.clamp_min(1e-12).log()).sum(-1).mean().item() / math.log(L)
            fixed = a.mean(1, keepdim=True).var().item() / max(a.var().item(), 1e-12)
            rows.append((entropy, a.max(-1).values.mean().item(),
                         a.diagonal(dim1=-2, dim2=-1).mean().item() * L, fixed))
        m = [sum(col) / len(col) for col in zip(*rows)]
        print(f"{positions:10s} pos_std={std:<5} shared={shared!s:5}: entropy/log L "
              f"{m[0]:.2f}  max α {m[1]:.2f}  L·α_tt {m[2]:.2f}  "
              f"sentence-independent share {m[3]:.2f}")


if __name__ == "__main__":
    main()
