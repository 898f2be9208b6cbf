import os

import matplotlib

matplotlib.use("Agg")  # tests draw figures without a display
# A stored run that its live members do not reproduce fails the tests (a reader's session
# explains it and goes on instead: attn_core.config.env_stored).
os.environ.setdefault("ATTN_STORED", "strict")
