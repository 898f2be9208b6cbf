"""scripts/execute_notebooks.py: how many engine workers each notebook of the parallel
execution gets (cores are not shared twice)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "execute_notebooks", Path(__file__).resolve().parents[1] / "scripts" / "execute_notebooks.py")
execute_notebooks = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(execute_notebooks)


@pytest.mark.parametrize("n, cores, cpus, expected", [
    (5, 2, 2, 1),    # the CI machine: two notebooks at a time, one worker each
    (1, 2, 2, 2),    # a single notebook left: both cores for its engine
    (5, 8, 8, 1),    # all five at once on 8 cores
    (2, 8, 8, 4),
    (5, 16, 16, 3),
    (5, 2, 8, 1),    # fewer usable cores than CPUs (affinity): never below one
])
def test_workers_per_notebook_divides_the_cores(n, cores, cpus, expected):
    assert execute_notebooks.workers_per_notebook(n, cores, cpus) == expected


@pytest.mark.parametrize("kwargs, name, error", [
    (dict(n_notebooks=0, cores=2, cpu_count=2), "n_notebooks", ValueError),
    (dict(n_notebooks=3, cores=0, cpu_count=2), "cores", ValueError),
    (dict(n_notebooks=3, cores=2, cpu_count=True), "cpu_count", TypeError),
    (dict(n_notebooks=3, cores=2.0, cpu_count=2), "cores", TypeError),
])
def test_workers_per_notebook_rejects_bad_counts(kwargs, name, error):
    with pytest.raises(error, match=rf"^{name} must be an int >= 1; got"):
        execute_notebooks.workers_per_notebook(**kwargs)
