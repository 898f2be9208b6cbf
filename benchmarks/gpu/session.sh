#!/usr/bin/env bash
# The book's one prepared GPU check, for a session that is lent a GPU (the `device` tool):
#
#   run(command="bash benchmarks/gpu/session.sh", timeout_s=590)
#   run(command="bash benchmarks/gpu/session.sh ch5", timeout_s=590)   # a second call
#
# The device image has torch (with CUDA), numpy, matplotlib, pandas, tqdm, joblib, pytest and
# pytest-xdist, not the Jupyter stack or Dask: the tests that need those are skipped or fail to
# collect, and pytest goes on (--continue-on-collection-errors). Each step has its own time
# limit so that the whole fits one call; what each wrote comes back from $OUT:
#
#   1. env.txt     the machine: nvidia-smi, Python, torch and its CUDA, the GPU torch sees
#   2. unit.log    the unit tests with CUDA visible (every run that does not name its device
#                  trains on the GPU: ``config.get_device``), 8 processes, their summary
#   3. ch7_full.log, ch7_results.json, ch7_rows.json
#                  chapter 7's four end-token variants at the papers' scale (issue #36 item
#                  1: benchmarks/full_ch7/run.py, 20 seeds each, batched on the GPU)
#
# With the argument ``ch5`` it runs only chapter 5 at the papers' scale instead
# (benchmarks/full_ch5/run.py: the screen, then the K = 8 combinations; ~4 h on 2 vCPUs),
# bringing back ch5_full.log and ch5_results.json (copy it over benchmarks/full_ch5/).
#
# Then put what it measured, naming the GPU, on the setup page (book/setup.md), and copy
# ch7_results.json / ch7_rows.json over benchmarks/full_ch7/ if the run finished.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/gpu_session_out}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1 ATTN_CACHE=/tmp/attn_cache ATTN_THREADS=1
PY=python3
UNIT_S="${UNIT_S:-240}" CH7_S="${CH7_S:-240}"   # each step's limit (a dry run here: 5 each)
start=$SECONDS
step() { echo "[gpu] $* (at $((SECONDS - start)) s)"; }

if [ "${1:-}" = ch5 ]; then
    step "chapter 5 at the papers' scale (at most ${CH5_S:-560} s; run again for the rest)"
    ATTN_MODE=full timeout "${CH5_S:-560}" "$PY" benchmarks/full_ch5/run.py \
        > "$OUT/ch5_full.log" 2>&1
    echo "[gpu] chapter 5 full: exit $?"
    grep "^\[full_ch5\]" "$OUT/ch5_full.log" | tail -20
    cp benchmarks/full_ch5/results.json "$OUT/ch5_results.json" 2>/dev/null
    step "done"
    exit 0
fi

step "1/3 the machine"
{ nvidia-smi || true
  "$PY" -c "import sys, torch; print(sys.version); print('torch', torch.__version__, 'cuda', \
torch.version.cuda, 'available', torch.cuda.is_available()); \
print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU')"
  "$PY" -c "import attn_core; print(attn_core.describe())"
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

step "2/3 the unit tests with CUDA visible (at most $UNIT_S s)"
ATTN_MODE=fast ATTN_STORED=strict timeout "$UNIT_S" "$PY" -m pytest -q -n 8 -p no:cacheprovider \
    --continue-on-collection-errors -m "not browser and not colab and not book and not jupyterlab" \
    -o addopts="" tests > "$OUT/unit.log" 2>&1
echo "[gpu] unit tests: exit $? -- $(tail -1 "$OUT/unit.log")"
grep -E "^(FAILED|ERROR)" "$OUT/unit.log" | head -40

step "3/3 chapter 7 at the papers' scale (at most $CH7_S s; run again on the warm machine for the rest)"
ATTN_MODE=full timeout "$CH7_S" "$PY" benchmarks/full_ch7/run.py > "$OUT/ch7_full.log" 2>&1
echo "[gpu] chapter 7 full: exit $?"
grep "^\[full_ch7\]" "$OUT/ch7_full.log"
cp benchmarks/full_ch7/results.json "$OUT/ch7_results.json" 2>/dev/null
cp benchmarks/full_ch7/rows.json "$OUT/ch7_rows.json" 2>/dev/null
step "done"
