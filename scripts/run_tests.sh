#!/usr/bin/env bash
# Everything CI checks, in order; stops at the first failure (non-zero exit).
#
#   1. unit tests            pytest -m "not browser" tests
#   2. notebooks run         pytest --nbval-lax notebooks/        (ATTN_MODE=fast)
#   3. strict book build     jupyter-book build -W -n --keep-going --all .  (warnings = errors)
#   4. browser check         pytest -m browser tests/test_browser.py   (needs step 3's HTML)
#
# Step 4 needs Chromium; run as root, this script installs it with apt-get when missing,
# otherwise the browser test is skipped with the reason shown in pytest's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
export ATTN_MODE=fast
# A fresh results cache for this run: the notebooks under nbval compute every experiment,
# and the strict book build right after reuses exactly those results (labelled as loaded).
ATTN_CACHE="$(mktemp -d -t attn_cache.XXXXXX)"
export ATTN_CACHE
trap 'rm -rf "$ATTN_CACHE"' EXIT

stage() { printf '\n==================== %s ====================\n' "$*"; }
t0=$SECONDS

if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        stage "installing chromium (apt-get) for the browser test"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -qq chromium >/dev/null 2>&1 \
            || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1; } \
            || echo "[tests] could not install chromium: the browser test will be skipped"
    else
        echo "[tests] chromium is not installed and we are not root: the browser test will be skipped"
    fi
fi

stage "1/4 unit tests"
python -m pytest -ra -m "not browser" tests

stage "2/4 notebooks (nbval-lax, ATTN_MODE=$ATTN_MODE)"
python -m pytest -ra --nbval-lax notebooks/

stage "3/4 strict book build (-W -n --keep-going)"
bash scripts/build_book.sh -W -n --keep-going --all

stage "4/4 browser check of the built book"
python -m pytest -ra -m browser tests/test_browser.py

stage "all checks passed in $((SECONDS - t0)) s"
