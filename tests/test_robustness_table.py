"""The bad-input table in docs/robustness.md names tests that exist, so it cannot rot."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "robustness.md"
NODE_ID = re.compile(r"(tests/[\w/]+\.py)::(test_\w+)")
# Every bad input the robustness issue lists must have a row (matched on the row's first cell).
REQUIRED_ROWS = (
    "δ outside (0, 1)",
    "δ NaN",
    "θ not finite",
    "θ out of range",
    "seed not finite",
    "seed out of range",
    "unknown dataset",
    "missing file",
    "empty file",
    "truncated file",
    "malformed LIBSVM/CSV",
    "non-numeric cells",
    "NaN/inf features",
    "labels not binary",
    "a single class",
    "file over the upload limit",
    "feature count does not match",
    "unsupported model type",
    "multiclass model",
    "pickle or joblib file",
    "untrusted types",
    "failed download",
    "corrupt download",
)
# File and model cases are also tried in the browser.
BROWSER_ROWS = (
    "malformed LIBSVM/CSV",
    "labels not binary",
    "file over the upload limit",
    "feature count does not match",
    "pickle or joblib file",
    "untrusted types",
)


def table_rows() -> list[list[str]]:
    """The cells of the bad-input table (header and separator dropped)."""
    rows = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    assert rows and rows[0][:2] == ["Bad input", "Library test"], "table header changed"
    return rows[1:]


def _row(rows, name):
    found = [r for r in rows if name in r[0]]
    assert found, f"docs/robustness.md has no row for {name!r}"
    return found[0]


def test_every_listed_bad_input_has_a_row_with_a_library_test_and_a_message():
    rows = table_rows()
    for name in REQUIRED_ROWS:
        row = _row(rows, name)
        assert len(row) == 4, row
        assert NODE_ID.search(row[1]), f"{name!r}: no library test"
        assert len(row[3]) > 20, f"{name!r}: no message"
    for name in BROWSER_ROWS:
        assert NODE_ID.search(_row(rows, name)[2]), f"{name!r}: no browser test"


def _node_ids():
    rows = table_rows() if DOC.exists() else []
    return sorted({m for row in rows for cell in row[1:3] for m in NODE_ID.findall(cell)})


@pytest.mark.parametrize(("path", "name"), _node_ids())
def test_named_test_exists(path, name):
    file = ROOT / path
    assert file.is_file(), f"{path} does not exist"
    assert re.search(rf"^def {name}\(", file.read_text(encoding="utf-8"), re.M), (
        f"{path} has no test {name}"
    )
