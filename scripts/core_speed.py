"""Print this core's float32 matmul rate (one thread, 1024^3, best of 5 rounds of 10):
the stage times beside it can then be read against the machine's speed, which varies
between runs of this project's 2-vCPU machines (59-122 GFLOP/s measured)."""
import time

import torch

torch.set_num_threads(1)
a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
a @ b
best = float("inf")
for _ in range(5):
    t = time.perf_counter()
    for _ in range(10):
        a @ b
    best = min(best, (time.perf_counter() - t) / 10)
print(f"core speed: {2 * 1024 ** 3 / best / 1e9:.0f} GFLOP/s (float32 matmul, one thread)")
