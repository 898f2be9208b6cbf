"""Count what the public API does with bad input (issue #35 item 7).

Draws, for every parameter of every entry point that ``tests/test_properties.py`` lists,
the same deterministic bad values its property test draws, calls the entry point with each
(a fresh call, everything else valid) and sorts the outcome:

- clear:   a ValueError/TypeError raised by attn_core that names the parameter;
- unclear: a ValueError/TypeError that does not name it, or raised by another package;
- crash:   any other exception (RuntimeError, IndexError, ... from torch, NumPy, Python);
- silent:  no exception: the bad value was taken;
- hang:    still running after ``--timeout`` seconds (then stopped).

    python scripts/api_probe.py [--examples 14] [--timeout 10] [--show silent,crash]

The package probed is whichever ``attn_core`` Python imports: set ``PYTHONPATH`` to another
checkout to probe that one (an entry point it lacks is counted as missing).
"""

from __future__ import annotations

import argparse
import collections
import functools
import importlib.util
import inspect
import re
import signal
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def _load_test_module(name: str):
    """tests/<name>.py as a module, loaded once (tests/ on the path for what it imports)."""
    if str(ROOT / "tests") not in sys.path:
        sys.path.insert(0, str(ROOT / "tests"))
    spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang


def classify(fn, valid: dict, name: str, value, timeout: float,
             match: str | None = None) -> tuple[str, str]:
    """(outcome, detail) of ``fn(**valid, name=value)``; with ``match`` (a hand-written
    case's regular expression for its message) a clear error must match it instead of
    naming ``name``."""
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        fn(**{**valid, name: value})
    except _Hang:
        return "hang", f"still running after {timeout:g} s"
    except (ValueError, TypeError) as e:
        tb = e.__traceback__
        while tb.tb_next is not None:
            tb = tb.tb_next
        where = tb.tb_frame.f_code.co_filename
        named = (re.search(match, str(e)) if match is not None else
                 _load_test_module("test_properties").names(name, str(e)))
        if named and "attn_core" in Path(where).parts:
            return "clear", ""
        return "unclear", f"{type(e).__name__}: {str(e)[:100]}"
    except Exception as e:  # noqa: BLE001 -- every other exception is what is counted
        return "crash", f"{type(e).__name__}: {str(e)[:100]}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return "silent", "accepted"


#: tests/test_api_probe.py's lists of hand-written cases (call, message pattern)
HAND_LISTS = ("DATA", "THEORY", "METRICS", "PLOTTING", "MODELS", "STACKED", "TRAINING",
              "CONFIG", "CACHE", "CLAIMS", "CHAPTERS")


def hand_cases():
    """The hand-written cases of tests/test_api_probe.py: (id, call, match), or an error
    message when that file cannot be loaded against this checkout."""
    try:
        module = _load_test_module("test_api_probe")
    except Exception as e:  # noqa: BLE001 -- an older checkout lacks what it builds
        return f"{type(e).__name__}: {str(e)[:120]}"
    return [(p.id, *p.values) for name in HAND_LISTS for p in getattr(module, name)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=14, help="bad values per parameter")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds before a hang")
    ap.add_argument("--show", default="silent,crash,unclear,hang",
                    help="outcomes to list one by one (comma-separated)")
    args = ap.parse_args()
    if args.examples < 1 or args.timeout <= 0:
        raise SystemExit("--examples must be >= 1 and --timeout > 0")
    reg = _load_test_module("test_properties")
    import attn_core
    from hypothesis import given, settings

    print(f"probing {Path(attn_core.__file__).parent}")
    counts = collections.Counter()
    listed = []
    for label, fn, valid, params in reg.API:
        if fn is None:                      # this checkout lacks it
            counts["missing"] += len(params) * args.examples
            listed.append(f"  missing {label}: not in this checkout")
            continue
        try:
            fn(**valid)
        except Exception as e:  # noqa: BLE001 -- an older signature: not probed
            counts["missing"] += len(params) * args.examples
            listed.append(f"  missing {label}: its valid call fails here "
                          f"({type(e).__name__}: {str(e)[:60]})")
            continue
        for name, kind in params.items():
            sig = inspect.signature(fn).parameters
            if name not in sig and not any(q.kind is q.VAR_KEYWORD for q in sig.values()):
                counts["missing"] += args.examples
                listed.append(f"  missing {label}({name}=...): no such parameter here")
                continue
            seen = []

            @settings(max_examples=args.examples, derandomize=True, database=None,
                      deadline=None)
            @given(value=reg.bad_values(kind))
            def draw(value):
                seen.append(value)

            draw()
            for value in seen:
                outcome, detail = classify(fn, valid, name, value, args.timeout)
                counts[outcome] += 1
                if outcome in args.show.split(","):
                    listed.append(f"  {outcome:7s} {label}({name}={value!r:.40}): {detail}")
    hand = hand_cases()
    hand_counts = collections.Counter()
    if isinstance(hand, str):
        listed.append(f"  tests/test_api_probe.py's cases not loaded here: {hand}")
    else:
        import matplotlib.pyplot as plt
        for id_, call, match in hand:
            outcome, detail = classify(lambda value: call(), {}, "value", None,
                                       args.timeout, match=match)
            if (outcome == "crash" and re.match(r"AttributeError: module 'attn_core[\w.]*' "
                                                r"has no attribute", detail)) or (
                    outcome == "unclear" and "got an unexpected keyword argument" in detail):
                outcome = "missing"     # an older checkout lacks the function or argument
            hand_counts[outcome] += 1
            plt.close("all")
            if outcome in args.show.split(","):
                listed.append(f"  {outcome:7s} [hand] {id_}: {detail}")
    total = sum(v for k, v in counts.items() if k != "missing")
    print("\n".join(listed))
    print(f"{total} bad inputs over {len(reg.API)} entry points: " + ", ".join(
        f"{k} {counts[k]} ({counts[k] / max(total, 1):.0%})"
        for k in ("clear", "unclear", "crash", "silent", "hang"))
        + (f"; {counts['missing']} not probed (missing here)" if counts["missing"] else ""))
    if hand_counts:
        n = sum(v for k, v in hand_counts.items() if k != "missing")
        print(f"{n} hand-written cases (tests/test_api_probe.py): " + ", ".join(
            f"{k} {hand_counts[k]}" for k in ("clear", "unclear", "crash", "silent", "hang"))
            + (f"; {hand_counts['missing']} not probed (missing here)"
               if hand_counts["missing"] else ""))
        both = counts + hand_counts
        n_all = total + n
        print(f"all {n_all} bad inputs: " + ", ".join(
            f"{k} {both[k]} ({both[k] / n_all:.1%})"
            for k in ("clear", "unclear", "crash", "silent", "hang")))


if __name__ == "__main__":
    main()
