"""Execute every notebook in ``notebooks/`` end to end in quick mode, on offline data.

Notebooks read ``ATTENTIVE_QUICK=1`` (small sizes), ``ATTENTIVE_OUT`` (where they write files) and
``ATTENTIVE_DATA`` (dataset and model cache, empty here so no download is attempted into the repo).
The kernel is the ``python3`` kernel of the interpreter running the tests (ipykernel's own spec,
whose ``python`` jupyter_client replaces with ``sys.executable``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

# Files each notebook must have written into ATTENTIVE_OUT (relative paths).
EXPECTED_OUTPUTS = {
    "reproduce_paper.ipynb": [
        "simulation/figure3.png",
        "simulation/decision_error.csv",
        "simulation/stopping_time.csv",
        "simulation/summary.json",
        *(
            f"{name}/{file}"
            for name in ("digits-2v5", "breast-cancer", "synthetic")
            for file in ("figure4.png", "tradeoff.csv", "pr.csv", "summary.json")
        ),
    ],
}


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_in_quick_mode(path, tmp_path, monkeypatch):
    out = tmp_path / "out"
    monkeypatch.setenv("ATTENTIVE_QUICK", "1")
    monkeypatch.setenv("ATTENTIVE_OUT", str(out))
    monkeypatch.setenv("ATTENTIVE_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    # the kernel inherits the environment: make the package importable without installing it
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    )

    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        timeout=180,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()  # raises CellExecutionError on the first failing cell

    errors = [
        o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]
    assert not errors
    # a static image, or an interactive HoloViews (Bokeh) figure
    figure_types = ("image/png", "application/vnd.holoviews_exec.v0+json")
    figures = [
        o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if any(t in o.get("data", {}) for t in figure_types)
    ]
    assert figures, "the notebook shows no figure"
    for rel in EXPECTED_OUTPUTS.get(path.name, []):
        assert (out / rel).stat().st_size > 0, rel
