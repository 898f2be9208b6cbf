"""One module per chapter of the book, each over the shared library of :mod:`attn_core`.

Each module holds that chapter's experiment configs (fast and full presets), its probes,
runners and the few helpers its notebook needs; a notebook imports only its own chapter::

    from attn_core.chapters import ch4_copy as ch

- :mod:`.ch1_gated`     chapter 1: the keyword task and the attention LSTM classifier
- :mod:`.ch2_sen`       chapter 2: Lu, Mao & Nayak's topic model, SEN, purity, the CNN variant
- :mod:`.ch3_ibm1`      chapter 3: translation with a hidden dictionary, proxy, KTIW probes
- :mod:`.ch4_copy`      chapter 4: the permutation-copy failure
- :mod:`.ch5_multihead` chapter 5: good and bad heads, and the multi-head rescue
- :mod:`.ch6_transformer` chapter 6: does a Transformer fail too? An encoder-decoder
  Transformer on chapter 4's tasks
- :mod:`.ch7_end_token` chapter 7: why one end token makes permutations hard

:mod:`.registry` lists them once (:data:`~.registry.CHAPTERS`): the stored configurations,
the live checks (``python -m attn_core.chapters``) and the tests' lists of chapters come
from there. Every experiment config subclasses :class:`._experiment.Experiment`
(``config.run()``). A chapter may import an earlier one (chapter 5 builds on chapter 4's
config); the shared library below (:mod:`attn_core.stored` included) imports none.
"""
