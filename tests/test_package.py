"""The package installs: a wheel holds toyviz/ only, and an installed toyviz finds checkpoints where it says.

The wheel is built from a copy of the tree (pip builds in place and would leave build/ and
toyviz.egg-info/ in the checkout), with the installed setuptools (`--no-build-isolation`, no network).
"""
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:                                   # Python 3.10
    tomllib = None

ROOT = Path(__file__).resolve().parent.parent
GPT_TOTAL = 4_208_128
shipped_gpt = pytest.mark.skipif(not (ROOT / "checkpoints" / "gpt" / "config.json").is_file(),
                                 reason="checkpoints/gpt is missing: run `python -m toyviz.train gpt`")


def _python(code: str, cwd: Path, **env) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in ("TOYVIZ_CHECKPOINTS", "PYTHONPATH")}
    environ.update(env)
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=environ, capture_output=True, text=True,
                          timeout=300)


def _requirement_lines(path: Path) -> list[str]:
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("-")]


@pytest.mark.skipif(tomllib is None, reason="tomllib needs Python 3.11")
def test_pyproject_dependencies_are_requirements_txt():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["dependencies"] == _requirement_lines(ROOT / "requirements.txt")


def test_a_checkout_uses_its_own_checkpoints(tmp_path):
    """From anywhere, a toyviz imported from the checkout looks next to the package, unless told otherwise."""
    show = "import toyviz.models.checkpoint as c; print(c.CHECKPOINTS)"
    done = _python(show, tmp_path, PYTHONPATH=str(ROOT))
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == ROOT / "checkpoints"
    done = _python(show, tmp_path, PYTHONPATH=str(ROOT), TOYVIZ_CHECKPOINTS=str(tmp_path / "mine"))
    assert Path(done.stdout.strip()) == tmp_path / "mine"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md", "app.py"):
        shutil.copy2(ROOT / name, src / name)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.safetensors", "*.egg-info")
    for name in ("toyviz", "tests", "checkpoints", "benchmarks"):   # the last three must stay out of the wheel
        shutil.copytree(ROOT / name, src / name, ignore=skip)
    out = tmp_path_factory.mktemp("wheels")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                           "--no-index", "-w", str(out), str(src)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    (built,) = out.glob("toyviz-*.whl")
    return built


@pytest.mark.slow
def test_the_wheel_holds_the_package_and_nothing_else(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {n.split("/")[0] for n in names} == {"toyviz", wheel.name.split("-py3")[0] + ".dist-info"}
    # every module and data file of the package (page.css and circuit_panel.js included); not caches or Gradio's generated .pyi
    files = {p.relative_to(ROOT).as_posix() for p in (ROOT / "toyviz").rglob("*")
             if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyi")}
    assert files <= names, sorted(files - names)
    assert {"toyviz/__init__.py", "toyviz/models/checkpoint.py", "toyviz/training/variants.py",
            "toyviz/app/figures/__init__.py", "toyviz/data/__init__.py", "toyviz/app/page.css",
            "toyviz/app/circuit_panel.js"} <= names
    assert not [n for n in names if n.startswith(("checkpoints/", "tests/", "benchmarks/", "app.py"))]
    # what `toyviz serve` needs: the command, the page and its start-up, its style sheet, the phones' page,
    # the shipped lessons, the worker processes' module
    assert {"toyviz/cli.py", "toyviz/app/serve.py", "toyviz/app/page.py", "toyviz/classroom/phone.html",
            "toyviz/serving/workers.py", "toyviz/lessons/shipped/sampling.md"} <= names
    dist_info = wheel.name.split("-py3")[0] + ".dist-info"
    entry_points = zipfile.ZipFile(wheel).read(f"{dist_info}/entry_points.txt").decode()
    assert "[console_scripts]" in entry_points and "toyviz = toyviz.cli:main" in entry_points


@pytest.mark.slow
def test_installed_into_a_fresh_environment_toyviz_serve_answers_from_another_folder(wheel, tmp_path):
    """`pip install` of the wheel into a fresh venv (this environment's libraries seen through a .pth file, the
    project itself not installed there), then the installed `toyviz` script, run from another folder, knows its
    subcommands and serve's options, and imports toyviz from the venv, not from this checkout."""
    import site
    import sysconfig
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    packages = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   capture_output=True, text=True, check=True).stdout.strip())
    (packages / "parent.pth").write_text("\n".join([sysconfig.get_paths()["purelib"], *site.getsitepackages()]))
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                           "--no-index", str(wheel)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("TOYVIZ_CHECKPOINTS", "PYTHONPATH")}
    for argv, said in ((["--help"], "  serve "), (["serve", "--help"], "usage: toyviz serve")):
        shown = subprocess.run([str(venv / "bin" / "toyviz"), *argv], capture_output=True, text=True, cwd=elsewhere,
                               env=env, timeout=300)
        assert shown.returncode == 0 and said in shown.stdout, shown.stdout + shown.stderr
    where = subprocess.run([str(python), "-c", "import toyviz.app.serve as s; print(s.__file__)"],
                           capture_output=True, text=True, cwd=elsewhere, env=env, timeout=300)
    assert Path(where.stdout.strip()).is_relative_to(packages), where.stdout + where.stderr


LOAD = "import toyviz; print(toyviz.__file__); print(toyviz.count_parameters(toyviz.load({!r}, device='cpu'))['total'])"


@pytest.mark.slow
@shipped_gpt
def test_an_installed_wheel_finds_checkpoints_where_it_says(wheel, tmp_path):
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target",
                           str(site), str(wheel)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    outside = tmp_path / "elsewhere"
    outside.mkdir()

    # a folder path works anywhere; "gpt" with nothing to find names every place it looked
    done = _python(LOAD.format(str(ROOT / "checkpoints" / "gpt")), outside, PYTHONPATH=str(site))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split("\n")                       # toyviz's path first, the count last
    where, total = lines[0], done.stdout.split()[-1]
    assert Path(where).is_relative_to(site) and int(total) == GPT_TOTAL
    done = _python(LOAD.format("gpt"), outside, PYTHONPATH=str(site))
    assert done.returncode != 0
    message = done.stderr.strip().splitlines()[-1]
    assert message.startswith("toyviz.errors.CheckpointError")
    for said in (str(site / "checkpoints"), str(outside / "checkpoints"), "TOYVIZ_CHECKPOINTS",
                 "toyviz train gpt"):
        assert said in message, (said, message)

    # TOYVIZ_CHECKPOINTS first
    done = _python(LOAD.format("gpt"), outside, PYTHONPATH=str(site), TOYVIZ_CHECKPOINTS=str(ROOT / "checkpoints"))
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) == GPT_TOTAL

    # else ./checkpoints in the current directory
    (outside / "checkpoints").mkdir()
    (outside / "checkpoints" / "gpt").symlink_to(ROOT / "checkpoints" / "gpt")
    done = _python(LOAD.format("gpt"), outside, PYTHONPATH=str(site))
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) == GPT_TOTAL
