"""Writing an experiment's results: its frames as CSV, its summary as JSON, its figure as PNG.

The PNG is the HoloViews figure of :mod:`attentive.plots` rendered by HoloViews' matplotlib
backend (:func:`attentive.plots.save_png`), the same element a notebook shows interactively with Bokeh.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from attentive.experiments.compute import DatasetResult, SimulationResult

__all__ = ["write_dataset_result", "write_json", "write_simulation_result"]

PNG_DPI = 110


def _json_default(value):
    if isinstance(value, np.integer | np.floating | np.bool_):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def _clean(value):
    """JSON has no NaN: write ``null``."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_json(path, data: dict) -> None:
    """``data`` as indented JSON, NaN and infinities as ``null``."""
    Path(path).write_text(json.dumps(_clean(data), indent=2, default=_json_default) + "\n")


def _write(out_dir, frames: dict, summary: dict, figure, figure_name: str) -> dict[str, Path]:
    """Every file written into a hidden folder of its own inside ``out_dir`` first (the folder
    ``reproduce`` has checked it can write in), then each moved over its earlier version
    (``os.replace``): a run stopped or failing while it writes leaves the earlier results as
    they were, not some of them replaced (a summary of one run beside a table of another)."""
    from attentive.plots import save_png  # the view layer: HoloViews through matplotlib

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".writing-", dir=out))
    try:
        names = {}
        for name, frame in frames.items():
            names[name] = f"{name}.csv"
            frame.to_csv(staging / names[name], index=False)
        names["summary"] = "summary.json"
        write_json(staging / names["summary"], summary)
        names["figure"] = save_png(figure, staging / figure_name, dpi=PNG_DPI).name
        for name in names.values():
            os.replace(staging / name, out / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return {key: out / name for key, name in names.items()}


def write_dataset_result(result: DatasetResult, out_dir) -> dict[str, Path]:
    """Write ``tradeoff.csv``, ``pr.csv``, ``summary.json`` and ``figure4.png`` into ``out_dir``."""
    from attentive.plots import figure4

    frames = {"tradeoff": result.tradeoff, "pr": result.pr}
    figure = figure4(result.tradeoff, result.pr, result.summary)
    return _write(out_dir, frames, result.summary, figure, "figure4.png")


def write_simulation_result(result: SimulationResult, out_dir) -> dict[str, Path]:
    """Write ``decision_error.csv``, ``stopping_time.csv``, ``summary.json``, ``figure3.png``."""
    from attentive.plots import figure3

    frames = {"decision_error": result.decision_error, "stopping_time": result.stopping_time}
    figure = figure3(result.decision_error, result.stopping_time)
    return _write(out_dir, frames, result.summary, figure, "figure3.png")
