#!/usr/bin/env bash
# Build the book: execute the notebooks (cached) and write the HTML to _build/html.
#
#   bash scripts/build_book.sh                  # fast mode (default): a 2-core CPU is enough
#   ATTN_MODE=full bash scripts/build_book.sh   # the papers' scale (meant for a GPU)
#
# Extra arguments go to `jupyter-book build`, e.g. `bash scripts/build_book.sh -W -n`.
#
# Executed notebooks are cached (execute_notebooks: cache, in _build/.jupyter_cache) keyed by
# the notebooks' own code only. So that the book never shows stale outputs:
# - each mode keeps its own cache: switching mode swaps the cache in and rebuilds all pages;
# - when attn_core/ or requirements.txt change, every cached execution is dropped (expensive
#   experiment results survive: they are cached separately, see attn_core.cache/ATTN_CACHE).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

export ATTN_MODE="${ATTN_MODE:-fast}"
# ATTN_BUILD_STEPS: which steps run -- "execute render" (the default), "execute" (the
# notebooks into the execution cache) or "render" (the HTML from that cache). The test
# command runs them apart, the render beside its last stage.
steps="${ATTN_BUILD_STEPS:-execute render}"
case "$steps" in
    "execute render"|execute|render) ;;
    *) echo "ATTN_BUILD_STEPS must be 'execute render', 'execute' or 'render'; got '$steps'" >&2
       exit 2 ;;
esac
mode="$(python -c 'from attn_core.config import get_mode; print(get_mode())')"

extra=()
mkdir -p _build
last="$(cat _build/.attn_mode 2>/dev/null || true)"
if [ -n "$last" ] && [ "$last" != "$mode" ]; then
    echo "[build] mode changed ($last -> $mode): swapping the execution cache, rebuilding all pages"
    [ -d _build/.jupyter_cache ] && mv _build/.jupyter_cache "_build/.jupyter_cache-$last"
    [ -d "_build/.jupyter_cache-$mode" ] && mv "_build/.jupyter_cache-$mode" _build/.jupyter_cache
    extra+=(--all)
fi

code_stamp="$(find attn_core -name '*.py' | LC_ALL=C sort | xargs cat requirements.txt | sha256sum | cut -d' ' -f1)"
if [ "$(cat _build/.attn_code_stamp 2>/dev/null || true)" != "$code_stamp" ]; then
    if [ -d _build/.jupyter_cache ] || compgen -G "_build/.jupyter_cache-*" >/dev/null; then
        echo "[build] attn_core/ or requirements.txt changed: re-executing all notebooks"
        rm -rf _build/.jupyter_cache _build/.jupyter_cache-*
        extra+=(--all)
    fi
fi

echo "[build] ATTN_MODE=$ATTN_MODE (resolved: $mode) ATTN_THREADS=$ATTN_THREADS" \
     "ATTN_WORKERS=${ATTN_WORKERS:-unset (each notebook executed gets cores / notebooks at a time)}"
start=$SECONDS
# Stage 1: execute every notebook whose code has no cached execution, two or more at a time
# (one per core; jupyter-cache's parallel executor), into the cache jupyter-book reads next.
# The longest chapters go first so the cores finish together. A notebook that fails here is
# not cached: stage 2 executes it again and reports the error.
kernel_noise="Kernel is running over TCP without encryption"   # ipykernel's, per kernel
if [ "$steps" != render ]; then
    _attn_drop_stderr "$kernel_noise" python scripts/execute_notebooks.py _build/.jupyter_cache
fi
executed=$SECONDS
# Stage 2: render the book (notebooks come from the cache). Quiet (-q): Sphinx's warnings
# and errors, not its per-page progress; ATTN_BUILD_VERBOSE=1 shows that too.
quiet=(-q)
[ "${ATTN_BUILD_VERBOSE:-0}" = 1 ] && quiet=()
# jupyter-book's closing banner (where the HTML is) is left out: the last line says it.
esc=$'\033'
banner="^($esc\\[[0-9;]*m)*(=+($esc\\[[0-9;]*m)*|Finished generating HTML for book\\.|Your book.s"
banner+=" HTML pages are here:|You can look at your book by opening this file in a browser:|Or"
banner+=" paste this line directly into your browser bar:|    (_build/html/(index\\.html)?|file://"
banner+=".*)|)[[:space:]]*$"
if [ "$steps" != execute ]; then
    _attn_drop_stderr "$kernel_noise" jupyter-book build . "${quiet[@]}" "${extra[@]}" "$@" \
        | { grep -Ev "$banner" || true; }
fi
echo "$mode" > _build/.attn_mode
echo "$code_stamp" > _build/.attn_code_stamp
case "$steps" in
    execute) echo "[build] stage times: execute notebooks $((executed - start)) s (render: next)" ;;
    render) echo "[build] stage times: render $((SECONDS - executed)) s" ;;
    *) echo "[build] stage times: execute notebooks $((executed - start)) s," \
            "render $((SECONDS - executed)) s; done in $((SECONDS - start)) s" ;;
esac
# the core's speed, which the times above depend on; not after a render alone: the test
# command renders beside its last stage, so the reading would be that stage's contention
# (56 GFLOP/s printed on a 92 GFLOP/s core), and its ~3 s of CPU taken from that stage
[ "$steps" = render ] || python scripts/core_speed.py | sed 's/^/[build] /'
[ "$steps" = execute ] || echo "[build] open: $(pwd)/_build/html/index.html"
