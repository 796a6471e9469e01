"""The project's set-up promises: pip and conda list the same packages; CI runs the README's tests."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_lists_the_same_packages_as_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    pip_names = {_name(r) for r in project["dependencies"]}
    for extra in ("test", "bench", "notebook"):  # the conda environment runs all of them
        pip_names |= {_name(r) for r in extras[extra]}
    pip_names.discard("attentive")  # an extra that names another of this project's extras
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda_names = {
        _name(d)
        for d in env["dependencies"]
        if isinstance(d, str) and _name(d) not in {"pip", "python"}
    }
    assert conda_names == pip_names, (
        f"only in pyproject: {sorted(pip_names - conda_names)}; "
        f"only in environment.yml: {sorted(conda_names - pip_names)}"
    )


def test_the_notebook_extra_brings_jupyterlab_and_make_test_installs_it():
    """``pip install -e ".[notebook]"`` is what JupyterLab needs; ``make test`` installs it too,
    since the JupyterLab browser test runs the dashboard's notebook in it."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    notebook = {_name(r) for r in extras["notebook"]}
    assert {"jupyterlab", "ipykernel", "ipywidgets"} <= notebook
    assert notebook <= {_name(r) for r in extras["test"]}
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r'pip install --quiet -e "\.\[[a-z,]*notebook[a-z,]*\]"', makefile)


def test_ci_runs_the_readme_test_command_with_the_browser_required():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in readme and "make app" in readme
    assert re.search(r"^make test$", ci, re.M)
    assert "ATTENTIVE_REQUIRE_BROWSER=1" in ci
    assert "set -euo pipefail" in ci
    assert "apt-get install -y -qq chromium" in ci


def test_makefile_serves_on_loopback_only():
    makefile = (ROOT / "Makefile").read_text()
    assert "HOST   ?= 127.0.0.1" in makefile
    assert "panel serve app.py --address $(HOST) --port $(PORT)" in makefile
    assert "*" not in re.findall(r"allow-websocket-origin=(\S+)", makefile)


def test_core_never_imports_panel():
    # The view layers: the dashboard (app/) and the figures shared by notebooks and files (plots/).
    views = ("app", "plots")
    core = [
        p for p in (ROOT / "attentive").rglob("*.py") if p.relative_to(ROOT).parts[1] not in views
    ]
    assert core
    offenders = [
        str(p.relative_to(ROOT))
        for p in core
        if p.name != "serve.py"
        and re.search(r"^\s*(import|from)\s+(panel|holoviews|bokeh)\b", p.read_text(), re.M)
    ]
    assert offenders == []


def _readme_command_lines() -> list[str]:
    """The shell lines of the README's code blocks, continuation lines joined."""
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", readme, re.S)
    joined = "\n".join(blocks).replace("\\\n", " ")
    return [line.split("#", 1)[0].strip() for line in joined.splitlines() if line.strip()]


def test_every_command_line_in_the_readme_parses():
    """Each ``.venv/bin/python -m attentive ...`` line of the README is accepted by the command
    line as written (a renamed or positional argument fails here before a reader meets it)."""
    import shlex

    from attentive.cli import build_parser

    lines = [line for line in _readme_command_lines() if ".venv/bin/python -m attentive " in line]
    assert len(lines) >= 6
    parser = build_parser()
    for line in lines:
        line = re.sub(r"\[[^\]]*\]", "", line)  # [--optional ARG] of a synopsis
        argv = shlex.split(line)[3:]
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # argparse refuses: the README is wrong
            raise AssertionError(f"README command does not parse: {line}") from exc
        assert args.command == argv[0]


def test_the_readme_runs_the_command_line_with_the_venvs_python():
    """From a fresh clone nothing is on the shell's Python: a bare ``python -m attentive`` fails
    with ModuleNotFoundError unless the venv is activated, so the README's blocks never use it
    (the text says how to activate), and every make target they name exists."""
    lines = _readme_command_lines()
    assert [line for line in lines if re.match(r"python3? -m attentive\b", line)] == []
    assert "source .venv/bin/activate" in (ROOT / "README.md").read_text()
    makefile = (ROOT / "Makefile").read_text()
    for target in {m for line in lines for m in re.findall(r"^make (\w+)", line)}:
        assert re.search(rf"^{target}:", makefile, re.M), f"README names make {target}"


def test_the_venvs_python_runs_the_command_line_without_activation():
    """What the README runs, run as written: the venv's Python from the repository, with a shell
    that has not activated it."""
    import os
    import subprocess

    python = ROOT / ".venv" / "bin" / "python"
    if not python.exists():
        pytest.skip("no .venv here (a conda environment runs the tests)")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p
    )
    for argv in (["datasets"], ["score", "--help"]):
        done = subprocess.run(
            [".venv/bin/python", "-m", "attentive", *argv],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
    assert "--zero-based" in done.stdout and "--one-based" in done.stdout
