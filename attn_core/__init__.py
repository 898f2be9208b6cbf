"""attn_core: the code behind the book *How Attention Learns*.

The papers: **SZKS** = Snell, Zhong, Klein & Steinhardt (2021), "Approximating How Single Head
Attention Learns"; **LMN** = Lu, Mao & Nayak (2021), "On the Dynamics of Training Attention
Models"; Luong, Pham & Manning (2015) for the attention of the seq2seq models.

The package map (shared library first, then one module per chapter):

- :mod:`attn_core.config`    ATTN_MODE (fast/full), :class:`Preset`, device, seeds, threads
- :mod:`attn_core.checks`    the argument validators every public function uses
- :mod:`attn_core.stacked`   member stacking: S independent models computed as one
- :mod:`attn_core.models`    the papers' models (attention classifier, seq2seq, LMN, proxies)
- :mod:`attn_core.data`      tasks and corpora (keyword, topic, copy, parallel, SST-2 reader)
- :mod:`attn_core.training`  the one training engine: ``train(...) -> History``
- :mod:`attn_core.cache`     results computed once, keyed by config and package source
- :mod:`attn_core.theory`    closed forms and ODEs, in chapter order
- :mod:`attn_core.metrics`   measurements, in chapter order (probes, agreement, rates, ...)
- :mod:`attn_core.claims`    a chapter's claims as data: printed as a table, asserted at once
- :mod:`attn_core.plotting`  figure style, sliders that work in the static book, shared plots
- :mod:`attn_core.chapters`  ``ch1_gated``, ``ch2_sen``, ...: each chapter's experiments,
  the chapters listed once in :mod:`attn_core.chapters.registry`
- :mod:`attn_core.exercises` ``ch1``, ``ch2``, ...: each chapter's answer checkers
"""

from .config import (Preset, describe, get_device, get_mode, report, set_seed,
                     set_threads)

__version__ = "0.1.0"

# One CPU thread unless ATTN_THREADS says otherwise (see config.set_threads).
set_threads()

__all__ = ["Preset", "describe", "get_device", "get_mode", "set_seed", "set_threads"]
