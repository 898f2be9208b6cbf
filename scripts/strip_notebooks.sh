#!/usr/bin/env bash
# Remove outputs and execution counts from every notebook (run before committing).
# tests/test_notebooks_stripped.py checks that this has been done.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
shopt -s nullglob
nbs=(notebooks/*.ipynb)
if [ ${#nbs[@]} -eq 0 ]; then
    echo "[strip] no notebooks"
    exit 0
fi
nbstripout "${nbs[@]}"
echo "[strip] stripped ${#nbs[@]} notebook(s)"
