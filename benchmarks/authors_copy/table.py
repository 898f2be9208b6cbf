"""Store the authors' runs as chapter 4's table (after ``run.sh``).

    python benchmarks/authors_copy/table.py

Reads ``perm_L20.json`` and ``ctrl_L20.json`` (written by ``run.sh``: the authors' own code,
patched, at chapter 4's fast settings) and writes each run's final token accuracy, to 4
decimals, to ``attn_core/chapters/data/ch4_authors_code.json``
(``ch4_copy.authors_code_fast()`` reads it; ``tests/test_ch4.py`` checks the two agree),
then the stored results' manifest.
"""

import json
from pathlib import Path

from attn_core.chapters import ch4_copy as ch
from attn_core.rows import write_table
from attn_core.stored import write_manifest

HERE = Path(__file__).resolve().parent
ABOUT = ("The authors' own code at chapter 4's fast settings: Sea-Snell/AttentionDynamics at "
         "commit 45774617, SequenceCopying/seq2seq.py with benchmarks/authors_copy/"
         "seq2seq.patch, L = 20, hidden 64, batch 32, 300 steps, Adam 1e-3, seeds 0-19 "
         "(benchmarks/authors_copy/run.sh, then table.py). Each run's final token accuracy "
         "(their metric: 50 fresh sequences, EOS included), to 4 decimals, from "
         "perm_L20.json and ctrl_L20.json.")


def main() -> None:
    rows = {}
    for task, file in (("permutation", "perm_L20.json"), ("control", "ctrl_L20.json")):
        runs = json.loads((HERE / file).read_text())
        rows[task] = [round(h[-1]["acc"], 4) for h in runs["histories"]]
    print("wrote", write_table(ch.AUTHORS_CODE_FILE, rows, ABOUT))
    write_manifest()


if __name__ == "__main__":
    main()
