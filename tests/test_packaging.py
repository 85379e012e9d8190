"""Packaging: kernel sources are found, the wheel maps cl_kernels into the package, the
console script and extras are declared, and the README/CI commands agree.

The wheel itself is built and installed into a fresh venv by .ci/run (step 4), which runs a
reduction from outside the repository; these tests check the configuration that makes it so.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from clreduce import kernels

ROOT = Path(__file__).resolve().parents[1]
KERNEL_FILES = sorted(p.name for p in (ROOT / "cl_kernels").glob("*.cl"))
# headers the kernel files share (not the two dialect headers)
SHARED_HEADERS = sorted(p.name for p in (ROOT / "cl_kernels").glob("*.h") if not p.name.startswith("cl_dialect"))

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")


@pytest.fixture(scope="module")
def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_there_are_kernel_files():
    assert "reduce_rows.cl" in KERNEL_FILES


@pytest.mark.parametrize("api", ["opencl", "cuda"])
@pytest.mark.parametrize("name", KERNEL_FILES)
def test_read_source_finds_every_kernel_file(name, api):
    text = kernels.read_source(name, api)
    own = (ROOT / "cl_kernels" / name).read_text(encoding="utf-8")
    header = (ROOT / "cl_kernels" / kernels.DIALECT_HEADERS[api]).read_text(encoding="utf-8")
    # the program is the API's dialect header, then the kernel file with its quoted includes
    # of this folder's headers spliced in (row_common.h), as one string
    spliced = kernels.kernel_text(name)
    assert text.startswith(header) and text.endswith(spliced)
    assert "__kernel" in own
    for included in re.findall(r'^\s*#\s*include\s*"([^"]+)"', own, re.M):
        assert included.endswith(".h") and (ROOT / "cl_kernels" / included).is_file(), f"{name}: {included}"
        assert kernels.kernel_text(included) in spliced  # (itself spliced: headers may include headers)
    # nothing is left for a compiler's include path (an installed wheel has none)
    assert not re.search(r"^\s*#\s*include", spliced, re.M), f"{name} #includes a file"


@pytest.mark.parametrize("name", KERNEL_FILES + SHARED_HEADERS)
def test_kernels_hold_no_api_conditionals(name):
    # one source for both APIs: divergence lives in the dialect headers, not in a kernel
    own = (ROOT / "cl_kernels" / name).read_text(encoding="utf-8")
    assert not re.search(r"__CUDA|__OPENCL|CL_DIALECT|#\s*pragma", own), name


def test_no_cuda_twins_remain():
    assert not list((ROOT / "clreduce").rglob("*.cu"))


def test_unknown_api_is_refused():
    with pytest.raises(ValueError, match="metal"):
        kernels.read_source("reduce_rows.cl", "metal")
    with pytest.raises(ValueError, match="metal"):
        kernels.build_options({"A": 1}, api="metal")


def test_kernel_dirs_search_the_package_copy_first():
    dirs = kernels.kernel_dirs()
    package = Path(kernels.__file__).resolve().parent
    assert dirs[0] == package / "cl_kernels"  # where the wheel puts them
    assert dirs[1] == package.parent / "cl_kernels"  # the repository (editable installs)
    with pytest.raises(FileNotFoundError, match="no_such_kernel.cl"):
        kernels.read_source("no_such_kernel.cl")


def test_wheel_force_includes_cl_kernels_into_the_package(pyproject):
    wheel = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["force-include"] == {"cl_kernels": "clreduce/cl_kernels"}
    assert wheel["packages"] == ["clreduce"]
    assert (ROOT / "cl_kernels" / kernels.DIALECT_HEADERS["cuda"]).is_file()  # shipped by the force-include
    # the destination is exactly where kernels.kernel_dirs() looks first
    package = Path(kernels.__file__).resolve().parent
    assert kernels.kernel_dirs()[0].relative_to(package.parent).as_posix() == wheel["force-include"]["cl_kernels"]


def test_build_system_and_metadata(pyproject):
    assert pyproject["build-system"]["build-backend"] == "hatchling.build"
    assert any(r.startswith("hatchling") for r in pyproject["build-system"]["requires"])
    project = pyproject["project"]
    assert project["name"] == "clreduce"
    assert project["requires-python"] == ">=3.10"
    deps = {re.split(r"[<>=\[ ;]", d)[0] for d in project["dependencies"]}
    assert deps == {"numpy", "pyopencl"}
    assert project["scripts"] == {"clreduce": "clreduce.cli:main"}
    assert "version" in project["dynamic"]
    assert pyproject["tool"]["hatch"]["version"]["path"] == "clreduce/__init__.py"


def test_extras(pyproject):
    extras = pyproject["project"]["optional-dependencies"]
    assert set(extras) >= {"pocl", "intel-cpu", "cuda", "plot", "test"}

    def names(extra):
        return {re.split(r"[<>=; ]", d)[0] for d in extras[extra]}

    assert "pyopencl[pocl]" in names("pocl")
    assert names("intel-cpu") == {"intel-opencl-rt", "intel-cmplr-lib-rt"}
    assert names("cuda") == {"cupy-cuda12x"}
    assert names("plot") == {"matplotlib"}
    # tests need devices: both CPU runtimes come with the test extra
    assert {"pytest", "hypothesis", "pyopencl[pocl]", "intel-opencl-rt", "intel-cmplr-lib-rt"} <= names("test")


def test_console_script_target_is_callable():
    from clreduce import cli

    assert callable(cli.main)
    assert cli.main(["plan", "--caps", str(ROOT / "tests" / "data" / "mobile_gpus.json")]) == 0


def test_installed_metadata_matches_the_package():
    from importlib import metadata

    import clreduce

    try:
        dist = metadata.distribution("clreduce")
    except metadata.PackageNotFoundError:
        pytest.skip("clreduce is not installed (pip install -e .[test])")
    assert dist.version == clreduce.__version__
    scripts = [ep for ep in dist.entry_points if ep.group == "console_scripts"]
    assert [(ep.name, ep.value) for ep in scripts] == [("clreduce", "clreduce.cli:main")]


def test_ci_and_readme_run_the_same_test_command():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "set -euo pipefail" in ci
    assert 'pip install -q -e ".[test]"' in ci and "python -m pytest -q" in ci
    assert "OCL_ICD_VENDORS" in ci and "intel-cpu.icd" in ci and "libintelocl.so" in ci
    # the four runtimes are required where apt-get could install the Debian two
    assert "REQUIRED=pocl,pocl-debian,intel-cpu,rusticl" in ci and "CLREDUCE_REQUIRE_DEVICES=$REQUIRED" in ci
    assert "python -m clreduce probe" in ci
    # README quick start: the two commands a newcomer runs
    assert 'pip install ".[pocl]" && clreduce demo' in readme
    assert "bash .ci/run" in readme
    assert "python -m pytest -q" in readme


def test_readme_documents_every_environment_variable():
    config = (ROOT / "clreduce" / "config.py").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    variables = set(re.findall(r"CLREDUCE_[A-Z_]+", config))
    assert variables, "config.py names no CLREDUCE_* variable?"
    missing = sorted(v for v in variables if v not in readme)
    assert not missing, f"README.md does not document {missing}"


def test_readme_has_the_benchmark_markers():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme.count("<!-- BENCH TABLE -->") >= 1
