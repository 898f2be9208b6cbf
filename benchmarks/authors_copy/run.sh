#!/bin/bash
# Chapter 4's comparison with the authors' own code at the book's fast settings.
#
#   bash benchmarks/authors_copy/run.sh PATH/TO/AttentionDynamics   # a checkout of
#        https://github.com/Sea-Snell/AttentionDynamics (measured at commit 45774617)
#
# Applies seq2seq.patch to a copy of SequenceCopying/seq2seq.py (see README.md for what the
# patch changes and why), then trains the authors' model on permutations of 20 tokens and on
# 20 of 30 distinct tokens: L = 20, hidden 64, batch 32, 300 steps, Adam 1e-3, 20 seeds each,
# one torch thread. Writes perm_L20.json and ctrl_L20.json here and prints the success counts
# (final accuracy > 0.95, the book's rule). About 3 minutes on one core of the 2-core CI machine.
set -euo pipefail
src="${1:?usage: run.sh PATH/TO/AttentionDynamics}"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
cp "$src/SequenceCopying/seq2seq.py" "$src/SequenceCopying/seq2seq_model.py" "$work/"
(cd "$work" && patch -s seq2seq.py < "$here/seq2seq.patch")
for cfg in "perm 20" "ctrl 30"; do
    set -- $cfg
    (cd "$work" && python seq2seq.py --no_rep --num_vocab "$2" --seq_length 20 --hidden_dim 64 \
        --bsize 32 --steps_s1 300 --n_seeds 20 --exp_name "$1" --out "$here/$1_L20.json")
done
python - "$here" <<'PY'
import json, sys
for name in ("perm", "ctrl"):
    d = json.load(open(f"{sys.argv[1]}/{name}_L20.json"))
    acc = [h[-1]["acc"] for h in d["histories"]]
    print(f"{name}: {sum(a > 0.95 for a in acc)}/{len(acc)} runs end above 0.95;",
          "final accuracies", [round(a, 4) for a in acc])
PY
