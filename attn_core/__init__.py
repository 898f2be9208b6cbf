"""attn_core: the code behind the book *How Attention Learns*.

One module per idea:

- :mod:`attn_core.config`   fast/full mode, device, seeds, CPU threads
- :mod:`attn_core.data`     data generators (keyword task, topic task, permutation copy, ...)
- :mod:`attn_core.models`   model-stacked ("seed-batched") attention models
- :mod:`attn_core.training` the one training engine every chapter uses
- :mod:`attn_core.theory`   closed-form and ODE results (gated classifier, SEN curve, IBM Model 1)
- :mod:`attn_core.metrics`  attention accuracy, agreement, confidence intervals
- :mod:`attn_core.plotting` figure style and sliders that work in the static book
- :mod:`attn_core.cache`    results computed once, saved atomically keyed by their config
"""

from .config import Preset, describe, get_device, get_mode, pick, set_seed, set_threads

__version__ = "0.1.0"

# One CPU thread unless ATTN_THREADS says otherwise (see config.set_threads).
set_threads()

__all__ = ["Preset", "describe", "get_device", "get_mode", "pick", "set_seed", "set_threads"]
