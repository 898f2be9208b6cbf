"""What the scripts of this folder share: the fast-mode guard, and the table of rows that
come in pairs with and without the end token ("<name>, end token" / "<name>, none")."""

from __future__ import annotations

import numpy as np

from attn_core.chapters import ch7_end_token as ch7
from attn_core.config import env_max_steps, get_mode
from attn_core.metrics import fisher_exact, wilson_interval


def require_fast() -> None:
    """Exit unless this is a fast-mode run with no step cap (the stored rows are results)."""
    if get_mode() != "fast":
        raise SystemExit("set ATTN_MODE=fast")
    if env_max_steps() is not None:
        raise SystemExit("unset ATTN_MAX_STEPS: a smoke run's numbers are not results")


def print_pairs(rows: dict, label: str = "row") -> None:
    """Each row's successes (copy accuracy above the chapter's level at the last
    evaluation), their 95 % Wilson interval, and Fisher's p against the row of the same
    name with the other end-token setting."""
    print(f"{label:20s} {'copy':>6s}  {'95% CI':12s} {'p vs the other end token':>24s}")
    for name, row in rows.items():
        if name.startswith("_"):
            continue
        ok = np.asarray(row["copy_acc"])[:, -1] > ch7.SUCCESS_LEVEL
        k, n = int(ok.sum()), ok.size
        lo, hi = wilson_interval(k, n)
        other = name.replace("end token", "none") if "end token" in name else \
            name.replace("none", "end token")
        o = np.asarray(rows[other]["copy_acc"])[:, -1] > ch7.SUCCESS_LEVEL
        p = fisher_exact(k, n, int(o.sum()), o.size)
        print(f"{name:20s} {k:>2d}/{n:<3d} [{lo:.2f}, {hi:.2f}] {p:>24.2g}")


def train_rows(family, script: str, what: str = "", resume: bool = True) -> dict:
    """Train each row of ``family`` (a :class:`attn_core.rows.RowFamily`: its
    ``config(name).run()``), make its stored row (``family.row``) and write all rows so far
    to the family's file with the manifest after each (atomically). ``resume``: keep the
    rows already in the file that were computed with their row's configuration (and the
    file's note) and train only the others; otherwise write a fresh file. The note names
    ``script`` and ``what``."""
    import json
    import time

    from attn_core.stored import platform, write_manifest

    path = family.file
    out = json.loads(path.read_text()) if resume and path.exists() else {}
    note = out.pop("_about", f"Trained by {script} on {time.strftime('%Y-%m-%d')} "
                   f"({platform()['cpu']}){': ' + what if what else ''}.")
    from attn_core.stored import config_record

    for name in family.names:
        cfg = family.config(name)
        if name in out and out[name].get("config") == config_record(cfg):
            print(f"[{path.stem}] {name}: stored already", flush=True)
            continue                     # resumed: this row is in the file, of its config
        t = time.time()
        out[name] = family.row(cfg, cfg.run())
        family.write(out, note=note)
        write_manifest()
        row = out[name]
        done = ""
        if "copy_acc" in row:
            ok = np.asarray(row["copy_acc"], dtype=float)[:, -1] > ch7.SUCCESS_LEVEL
            done = f"{int(ok.sum())}/{ok.size}, "
        print(f"[{path.stem}] {name}: {done}{time.time() - t:.0f} s", flush=True)
    return out
