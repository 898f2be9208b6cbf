# shellcheck shell=bash
# Source me: `source scripts/env.sh`. Creates/updates .venv and activates it.
#
# - creates .venv with `python3 -m venv` if it is missing;
# - installs requirements.txt only when it changed (its sha256 is stamped in .venv);
# - installs attn_core in editable mode (no dependencies, no build isolation: offline-safe);
# - exports ATTN_THREADS (default 1) and PYTHONUNBUFFERED=1. It does NOT set MPLBACKEND:
#   an Agg backend in the environment would stop notebook kernels from displaying figures.
#
# Respects PYTHON (default python3) for the interpreter that creates the venv.

# _attn_drop_stderr PATTERN CMD...: run CMD with the lines of its stderr that match PATTERN
# (grep -E) left out, the rest passed on; returns CMD's exit status. The build and the
# installs use it for notices that say nothing about this project: ipykernel's "Kernel is
# running over TCP without encryption" (every local kernel, a dozen a build) and pip's
# "Location ... is ignored" (an index folder of this machine's pip configuration).
_attn_drop_stderr() {
    local pattern="$1"
    shift
    { "$@" 2>&1 1>&3 3>&- | { grep -Ev --line-buffered "$pattern" || true; } 1>&2; } 3>&1
    return "${PIPESTATUS[0]}"
}
_ATTN_PIP_NOISE="^WARNING: Location '[^']*' is ignored"

_attn_env_main() {
    local root venv req stamp want have
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    venv="$root/.venv"
    req="$root/requirements.txt"
    stamp="$venv/.requirements.sha256"

    if [ ! -x "$venv/bin/python" ]; then
        echo "[env] creating $venv" >&2
        "${PYTHON:-python3}" -m venv "$venv" || { echo "[env] ERROR: could not create $venv" >&2; return 1; }
        _attn_drop_stderr "$_ATTN_PIP_NOISE" "$venv/bin/python" -m pip install -q --upgrade pip \
            || { echo "[env] ERROR: pip upgrade failed" >&2; return 1; }
    fi

    want="$(sha256sum "$req" | cut -d' ' -f1)"
    have="$(cat "$stamp" 2>/dev/null || true)"
    if [ "$want" != "$have" ]; then
        echo "[env] installing requirements.txt (changed or first run; this can take a while)" >&2
        _attn_drop_stderr "$_ATTN_PIP_NOISE" "$venv/bin/python" -m pip install -q -r "$req" \
            || { echo "[env] ERROR: pip install -r requirements.txt failed" >&2; return 1; }
        echo "$want" > "$stamp"
    fi

    # Checked from / : from the repository root the package would import from the cwd even
    # when it is not installed, and notebook kernels (cwd notebooks/) would then fail to import it.
    if ! (cd / && "$venv/bin/python" -c "import attn_core, sys; sys.exit(0 if attn_core.__file__.startswith('$root/') else 1)") >/dev/null 2>&1; then
        echo "[env] installing attn_core (editable)" >&2
        _attn_drop_stderr "$_ATTN_PIP_NOISE" \
            "$venv/bin/python" -m pip install -q --no-deps --no-build-isolation -e "$root" \
            || { echo "[env] ERROR: pip install -e . failed" >&2; return 1; }
    fi

    # shellcheck disable=SC1091
    source "$venv/bin/activate"
    export ATTN_THREADS="${ATTN_THREADS:-1}"
    export PYTHONUNBUFFERED=1
}

_attn_env_main || { unset -f _attn_env_main; return 1 2>/dev/null || exit 1; }
unset -f _attn_env_main
