"""``python -m attn_core.chapters [--upto N] [--json PATH]``: every live check trained now
(:func:`attn_core.chapters.registry.main`)."""

import sys

from .registry import main

sys.exit(main())
