"""One module per chapter of the book, each over the shared library of :mod:`attn_core`.

Each module holds that chapter's experiment configs (fast and full presets), its probes,
runners and the few helpers its notebook needs; a notebook imports only its own chapter::

    from attn_core.chapters import ch4_copy as ch

{chapters}

:mod:`.registry` lists them once (:data:`~.registry.CHAPTERS`): the stored configurations,
the live checks (``python -m attn_core.chapters``) and the tests' lists of chapters come
from there. Every experiment config subclasses :class:`._experiment.Experiment`
(``config.run()``). A chapter may import an earlier one (chapter 5 builds on chapter 4's
config); the shared library below (:mod:`attn_core.stored` included) imports none.
"""

from .registry import CHAPTERS

# the list of chapters above, from the registry
__doc__ = __doc__.replace("{chapters}", "\n".join(
    f"- :mod:`.{c.module}` chapter {c.number}: {c.about}" for c in CHAPTERS))
