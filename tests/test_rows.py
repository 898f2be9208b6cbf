"""attn_core.rows: a family of stored rows made, written, read back and refused."""

import json
from dataclasses import replace

import numpy as np
import pytest

from attn_core import rows
from attn_core.stored import StoredMismatch
from attn_core.chapters.ch4_copy import CopyConfig

TINY = CopyConfig(length=5, embed=8, hidden=8, steps=12, eval_every=4, eval_batch_size=8,
                  batch_size=4, seeds=(0, 1))
CONFIGS = {"small": TINY, "other lr": replace(TINY, lr=2e-3)}


def _config(name: str) -> CopyConfig:
    return CONFIGS[name]


@pytest.fixture
def family(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("ATTN_MAX_STEPS", raising=False)
    return rows.RowFamily(tmp_path / "rows.json", "python make_rows.py", tuple(CONFIGS),
                          _config, CopyConfig, {"acc": "token_acc"})


@pytest.fixture
def written(family):
    made = {name: family.row(cfg, cfg.run(progress=False))
            for name, cfg in family.configs().items()}
    family.write(made, note="two tiny rows")
    return made


def test_a_row_holds_its_configuration_runs_steps_and_rounded_values(family, written):
    row = written["small"]
    h = TINY.run(progress=False)
    assert row["seeds"] == [0, 1] and row["eval_steps"] == [0, 4, 8, 12]
    assert np.array_equal(row["acc"], np.round(h.metrics["token_acc"].astype(float), 4))
    assert row["config"]["lr"] == TINY.lr
    assert written["other lr"]["config"]["lr"] == 2e-3


def _copy(family, tmp_path):
    """The family's file copied elsewhere (its own file is read only if the manifest has
    it)."""
    copy = tmp_path / "copy.json"
    copy.write_text(family.file.read_text())
    return copy


def test_written_rows_read_back_whole_with_their_note(family, written, tmp_path):
    text = family.file.read_text()
    assert "\n" not in text.rstrip("\n")                       # compact by default
    back = family.load(_copy(family, tmp_path))
    assert back["_about"] == "two tiny rows"
    assert {k: back[k] for k in CONFIGS} == written


@pytest.mark.parametrize("edit, match", [
    (lambda r: r.pop("small"), r"has no row 'small': run python make_rows.py"),
    (lambda r: r["small"]["config"].update(lr=0.5),
     r"row 'small' was computed with another configuration than _config\('small'\)"),
    (lambda r: r["small"].update(seeds=[0, 2]), r"row 'small' does not hold the seeds"),
    (lambda r: r["small"].update(eval_steps=[0, 12]), r"row 'small' was not evaluated at"),
    (lambda r: r["other lr"]["acc"].pop(), r"row 'other lr''s 'acc' has shape \(1, 4\)"),
    (lambda r: r["other lr"].pop("acc"), r"row 'other lr' has no numeric 'acc'"),
])
def test_a_row_that_is_not_its_configurations_is_refused(family, written, tmp_path, edit,
                                                          match):
    stored = json.loads(family.file.read_text())
    edit(stored)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(stored))
    with pytest.raises(ValueError, match=match):
        family.load(bad)


def test_a_file_that_is_not_rows_is_refused(family, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(ValueError, match="is not a JSON object of rows"):
        family.load(bad)
    bad.write_text("{")
    with pytest.raises(ValueError, match="is not valid JSON"):
        family.load(bad)


def test_stored_off_trains_every_row_now(family, monkeypatch):
    monkeypatch.setenv("ATTN_STORED", "off")
    made = family.load()                              # the family's file does not exist
    assert set(made) == set(CONFIGS)
    assert made["small"] == family.row(TINY, TINY.run(progress=False))


def test_extra_fields_shapes_and_other_runs_and_steps(tmp_path):
    family = rows.RowFamily(
        tmp_path / "rows.json", "make", ("small",), _config, CopyConfig, steps=None,
        runs=lambda cfg: [s + 100 for s in cfg.seeds],
        extra=lambda cfg, h: {"last": h.metrics["token_acc"][:, -1].tolist()},
        shapes=lambda cfg: {"last": (len(cfg.seeds),)})
    row = family.row(TINY, TINY.run(progress=False))
    assert set(row) == {"config", "seeds", "last"} and row["seeds"] == [100, 101]
    family.write({"small": row})
    assert family.load(_copy(family, tmp_path))["small"] == row
    row["last"] = row["last"][:1]
    family.write({"small": row})
    with pytest.raises(ValueError, match=r"'last' has shape \(1,\)"):
        family.load(_copy(family, tmp_path))


def test_the_familys_own_file_is_read_only_through_the_manifest(family, written):
    with pytest.raises(StoredMismatch, match="rows.json is not in the stored results' "
                                             "manifest"):
        family.load()


# ------------------------------------------------------------------------------ tables
def test_a_table_reads_back_only_through_the_manifest(tmp_path, monkeypatch):
    from attn_core import stored

    monkeypatch.setattr(stored, "STORE", tmp_path / "stored")
    monkeypatch.setattr(stored, "ROWS", tmp_path / "rows")
    (tmp_path / "stored").mkdir()
    (tmp_path / "rows").mkdir()
    path = tmp_path / "rows" / "table.json"
    stored.write_manifest()                                  # a manifest without the table
    rows.write_table(path, {"a": [1, 2]}, "made by a test")
    with pytest.raises(StoredMismatch, match="table.json is not in the stored results' "
                                             "manifest"):
        rows.load_table(path, "make it")
    stored.write_manifest()
    assert rows.load_table(path, "make it") == {"a": [1, 2]}
    assert json.loads(path.read_text())["_about"] == "made by a test"
    path.write_text(path.read_text().replace("2", "3"))              # a changed number
    with pytest.raises(StoredMismatch, match="was changed after it was stored"):
        rows.load_table(path, "make it")
    with pytest.raises(ValueError, match=r"the stored table .*nothing.json is missing: run "
                                         r"make it"):
        rows.load_table(tmp_path / "rows" / "nothing.json", "make it")


def test_the_chapters_tables_are_package_data_in_the_manifest():
    from attn_core.chapters import ch4_copy, ch5_multihead

    assert ch4_copy.model_ablation_fast()["authors"] == (True, True, True, 2, 20)
    assert len(ch4_copy.authors_code_fast()["permutation"]) == 20
    assert len(ch5_multihead.random_heads_alone()) == 30
    assert ch5_multihead.other_bases_fast()[1][-2:] == ((4, 6), (6, 6))
