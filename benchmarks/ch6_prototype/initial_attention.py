"""The cross-attention of chapter 6's Transformer at initialisation, before any training:
for each position setting, over 10 seeds and one held-out batch of 64, its entropy (as a
fraction of log L), its largest weight, L times its diagonal, and the share of its variance
that is the same for every sentence (the variance of the batch-mean pattern over the total).

    python benchmarks/ch6_prototype/initial_attention.py
"""
import torch, math
from attn_core.chapters import ch6_transformer as ch
torch.set_num_threads(1)
for pos, std, shared in [("learned", 1.0, True), ("learned", 1.0, False), ("learned", 0.5, True), ("learned", 0.3, True),
                 ("learned", 0.1, True), ("learned", 0.02, True), ("sinusoidal", 1.0, True), ("qk", 1.0, True), ("relative", 1.0, True), ("none", 1.0, True)]:
    cfg = ch.TransformerCopyConfig(positions=pos, pos_std=std, shared_positions=shared)
    task = cfg.task()
    ent, mx, diag, fixed = [], [], [], []
    for s in range(10):
        m = cfg.model_fn(task)(seeds=[s])
        b = task.sample(torch.Generator().manual_seed(0), 64)
        with torch.no_grad():
            a = m(b["src"][None], b["tgt_in"][None])["alpha"][0]   # (K,B,T,L)
        L = a.shape[-1]
        ent.append((-(a * a.clamp_min(1e-12).log()).sum(-1)).mean().item() / math.log(L))
        mx.append(a.max(-1).values.mean().item())
        # how much of the attention pattern is the same for every sentence: var over sentences vs total
        mean_pat = a.mean(1, keepdim=True)
        fixed.append((mean_pat.var().item()) / max(a.var().item(), 1e-12))
        diag.append(a.diagonal(dim1=-2, dim2=-1).mean().item() * L)
    f = lambda v: f"{sum(v)/len(v):.2f}"
    print(f"{pos:10s} std={std:<5} shared={shared!s:5}: entropy/logL {f(ent)}  max α {f(mx)}  L·α_tt {f(diag)}  sentence-independent share {f(fixed)}")
