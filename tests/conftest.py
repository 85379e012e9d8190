"""Shared test machinery: OpenCL device discovery, plan variants, sampling, tolerances, timing.

Devices
    Every OpenCL device pyopencl can see is discovered once (``pytest_configure``) and
    probed with ``probe_device``. Tests that take ``cl_device`` (a ``pyopencl.Device``) run
    once per device. Device ids name the OpenCL implementation, never the host CPU's maker
    (``device_id``): ``intel-cpu`` (Intel's CPU runtime), ``pocl`` (PoCL from pip),
    ``pocl-debian`` (Debian's pocl-opencl-icd), ``rusticl`` (Mesa, e.g. on llvmpipe). The
    report header and a warning say which runtimes were found and which known ones are
    missing. ``CLREDUCE_REQUIRE_DEVICES=pocl,pocl-debian,intel-cpu,rusticl`` (CI) ends the
    session with a non-zero status when a listed runtime is missing, instead of silently
    skipping its tests; a name there is a device id, or an implementation name that is
    not itself a device id (``intel`` = any device of Intel's runtimes).

Plan variants
    ``plan_variants(caps)`` lists every forced plan the device can run: on a sub-group
    device sg_mode builtin/shuffle x every width in ``caps.subgroup_sizes`` x the four
    strategies, plus local x strategies; a few vector-width and work-group-size variants
    on top (CPU plans otherwise load 16-wide vectors wherever K allows). ``auto`` (no force, the
    planner's own choice) comes first.

Sampling (``--slow`` / ``CLREDUCE_SLOW=1`` runs everything)
    Tests marked ``variant_cases(...)`` are expanded here into (device, variant, shape,
    dtype, op) cases. The default run keeps a deterministic subset:

    * variants: ``auto`` plus a greedy cover, in a seeded shuffle, of the pairs
      (sg_mode x sg_size) and (sg_mode x strategy) and of every vec / wg_size value;
    * per kept forced variant, a few (shape, dtype x op) cells on a diagonal walk whose
      start moves with the variant, so across variants every shape (each hits one kernel
      branch) and every dtype x op meets every strategy; ``auto`` (the plan users get)
      runs more cells: by default every dtype x op once, main shapes all twice.

    Everything else is generated too but marked ``slow`` and deselected by default.

Devices that cannot run a case (``pytest_runtest_makereport``)
    A case that fails only with ``UnsupportedOnDevice`` is reported as skipped, with the
    error as the reason, when (a) its device lacks fp64 and the error names fp64 (float64
    input on rusticl), or (b) it runs a forced plan variant the device refuses for this
    problem (a forced work-group larger than the compiled kernel allows, a vector width a
    driver bug rules out). The ``auto`` plan of a supported dtype never skips this way.
    The summary counts passed / skipped / failed per device.

Tolerances
    One place: ``TOLERANCE`` and ``assert_reduction`` below (fixture ``assert_reduction``).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import os
import random
import time
import zlib
from collections import defaultdict
from typing import Callable, NamedTuple

import numpy as np
import pytest

from clreduce.plan import CPU_STRATEGY, STRATEGIES, Force, Problem, plan

# ---- runtimes ----------------------------------------------------------------------------

# Runtimes the suite expects on a developer/CI machine, and how to get each one.
# Keys are device ids (``device_id``).
KNOWN_RUNTIMES = {
    "pocl": "pip install 'pyopencl[pocl]' (found by pyopencl's bundled ICD loader)",
    "intel-cpu": (
        "pip install intel-opencl-rt intel-cmplr-lib-rt; then write a folder holding "
        "intel-cpu.icd whose content is the absolute path of <venv>/lib/libintelocl.so and "
        "export OCL_ICD_VENDORS=<that folder> (DESIGN.md, 'CPU OpenCL runtimes')"
    ),
    "pocl-debian": (
        "apt-get install pocl-opencl-icd; copy /etc/OpenCL/vendors/pocl.icd into the "
        "OCL_ICD_VENDORS folder (.ci/run does)"
    ),
    "rusticl": (
        "apt-get install mesa-opencl-icd; copy /etc/OpenCL/vendors/rusticl.icd into the "
        "OCL_ICD_VENDORS folder and export RUSTICL_ENABLE=llvmpipe (.ci/run does)"
    ),
}

SAMPLE_SEED = 20240611
# Environment variables that would silently turn "auto" into a forced plan.
_PLAN_ENV = ("CLREDUCE_SG_MODE", "CLREDUCE_SG_SIZE", "CLREDUCE_STRATEGY", "CLREDUCE_WG_SIZE",
             "CLREDUCE_VEC", "CLREDUCE_BACKEND", "CLREDUCE_DEVICE")


@dataclasses.dataclass(frozen=True)
class FoundDevice:
    id: str
    device: object  # pyopencl.Device
    caps: object  # clreduce.caps.DeviceCaps

    def describe(self) -> str:
        c = self.caps
        sg = f"sub-groups {','.join(map(str, c.subgroup_sizes))}" if c.subgroups else "no sub-groups"
        extras = [x for x, ok in (("fp16", c.fp16), ("fp64", c.fp64)) if ok]
        return f"{self.id}: {c.platform_name} / {c.name} ({sg}{', ' if extras else ''}{', '.join(extras)})"


DEVICES: list[FoundDevice] = []
DISCOVERY_ERROR: str | None = None
_STATE = {"t0": None, "durations": defaultdict(float), "counts": defaultdict(int), "kernels_dropped": 0,
          "by_device": defaultdict(lambda: defaultdict(int)), "device_secs": defaultdict(float)}


def device_id(caps) -> str:
    """A stable, readable id for a device: its implementation, never its CPU's maker.

    PoCL from pip (bundled with pyopencl) and Debian's PoCL are both "pocl"; Debian's
    says so in CL_DRIVER_VERSION ("3.1+debian"), so it is ``pocl-debian``. Mesa's and
    Oclgrind's ids are the implementation alone; vendor runtimes add the device type
    (``intel-cpu``, ``nvidia-gpu``).
    """
    impl = caps.implementation
    if impl == "pocl":
        return "pocl-debian" if "debian" in caps.driver_version.lower() else "pocl"
    if impl in ("rusticl", "clover", "oclgrind"):
        return impl
    return f"{impl}-{caps.device_type}"


def discover_devices() -> tuple[list[FoundDevice], str | None]:
    """Every OpenCL device, probed; ``(devices, error)`` where error says why none."""
    try:
        from clreduce.backends.opencl import all_devices
        from clreduce.backends.opencl_probe import probe_device
    except Exception as exc:  # noqa: BLE001 - pyopencl missing or broken
        return [], f"pyopencl/OpenCL backend not importable: {type(exc).__name__}: {exc}"
    found, seen = [], defaultdict(int)
    for device in all_devices():
        caps = probe_device(device)
        base = device_id(caps)
        seen[base] += 1
        ident = base if seen[base] == 1 else f"{base}{seen[base]}"
        found.append(FoundDevice(ident, device, caps))
    return found, None if found else "no OpenCL platform/device found"


def runtime_matches(name: str, found: FoundDevice) -> bool:
    """Whether ``name`` (from CLREDUCE_REQUIRE_DEVICES) is this device.

    A device id matches itself (``pocl2`` counts as ``pocl``); a bare implementation name
    that is not a device id (``intel``) matches every device of that implementation.
    Hardware vendors, device names and platform substrings never match: the CPU under
    PoCL or Intel's runtime may be an AMD EPYC or an Intel Xeon.
    """
    needle = name.strip().lower()
    if needle in (found.id, found.id.rstrip("0123456789")):
        return True
    return needle not in KNOWN_RUNTIMES and needle == found.caps.implementation


def missing_runtimes(devices, wanted) -> list[str]:
    """Names in ``wanted`` that match no device (``runtime_matches``)."""
    return [name.strip() for name in wanted
            if name.strip() and not any(runtime_matches(name, d) for d in devices)]


def pyopencl_view(queue, x: np.ndarray, layout: str):
    """``x`` as a pyopencl array laid out as ``layout``: "c" (C order), "transposed" (a
    transposed copy transposed back: Fortran order for 2-d) or "strided" (every second element
    of a twice-as-wide last axis)."""
    import pyopencl.array as cla

    if layout == "transposed":
        rev = tuple(range(x.ndim))[::-1]
        return cla.to_device(queue, np.ascontiguousarray(x.transpose(rev))).transpose(rev)
    if layout == "strided":
        wide = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), x.dtype)
        wide[..., ::2] = x
        return cla.to_device(queue, wide)[(slice(None),) * (x.ndim - 1) + (slice(None, None, 2),)]
    assert layout == "c", layout
    return cla.to_device(queue, x)


def slow_enabled(config) -> bool:
    return bool(config.getoption("--slow")) or os.environ.get("CLREDUCE_SLOW", "") not in ("", "0")


# ---- pytest hooks ----------------------------------------------------------------------------


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", default=False,
                     help="clreduce: run the exhaustive plan-variant matrix (also CLREDUCE_SLOW=1)")


def pytest_configure(config):
    global DEVICES, DISCOVERY_ERROR
    _STATE["t0"] = time.perf_counter()
    config.addinivalue_line("markers", "slow: exhaustive cases, run only with --slow or CLREDUCE_SLOW=1")
    config.addinivalue_line(
        "markers",
        "variant_cases(shapes, dtypes, ops, forced_cells=2, auto_cells=None): expand into (cl_device, variant, shape, "
        "dtype, op) cases over every forced plan variant (conftest.py)")
    DEVICES, DISCOVERY_ERROR = discover_devices()
    missing = missing_runtimes(DEVICES, KNOWN_RUNTIMES)
    if missing or DISCOVERY_ERROR:
        lines = [f"clreduce: OpenCL runtime(s) MISSING: {', '.join(missing)} -- their tests will not run."]
        lines += [f"  {name}: {KNOWN_RUNTIMES[name]}" for name in missing]
        if DISCOVERY_ERROR:
            lines.append(f"  ({DISCOVERY_ERROR})")
        config.issue_config_time_warning(pytest.PytestWarning("\n".join(lines)), stacklevel=2)


def pytest_report_header(config):
    lines = [f"clreduce OpenCL devices found: {len(DEVICES)}"]
    lines += [f"  {d.describe()}" for d in DEVICES]
    missing = missing_runtimes(DEVICES, KNOWN_RUNTIMES)
    if missing:
        lines.append(f"  !!! MISSING OpenCL runtimes: {', '.join(missing)} (their tests are not run)")
    if DISCOVERY_ERROR:
        lines.append(f"  !!! {DISCOVERY_ERROR}")
    required = os.environ.get("CLREDUCE_REQUIRE_DEVICES")
    if required:
        lines.append(f"  CLREDUCE_REQUIRE_DEVICES={required}")
    lines.append("clreduce variant matrix: " + ("EXHAUSTIVE (--slow)" if slow_enabled(config)
                                                 else "sampled (use --slow or CLREDUCE_SLOW=1 for all)"))
    return lines


def pytest_sessionstart(session):
    required = os.environ.get("CLREDUCE_REQUIRE_DEVICES", "")
    missing = missing_runtimes(DEVICES, required.split(","))
    if missing:
        found = ", ".join(d.id for d in DEVICES) or "none"
        hints = "; ".join(f"{m}: {KNOWN_RUNTIMES.get(m, KNOWN_RUNTIMES.get(m + '-cpu', '?'))}" for m in missing)
        pytest.exit(f"CLREDUCE_REQUIRE_DEVICES={required}: missing {', '.join(missing)} (found: {found}). {hints}",
                    returncode=pytest.ExitCode.TESTS_FAILED)


def pytest_generate_tests(metafunc):
    marker = metafunc.definition.get_closest_marker("variant_cases")
    if marker is not None:
        _parametrize_variant_cases(metafunc, marker)
    elif "cl_device" in metafunc.fixturenames:
        metafunc.parametrize("cl_device", [d.device for d in DEVICES], ids=[d.id for d in DEVICES])


def pytest_collection_modifyitems(config, items):
    if slow_enabled(config):
        return
    keep, drop = [], []
    for item in items:
        (drop if item.get_closest_marker("slow") else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


# The backend memoises every built program for the life of the process. The exhaustive run
# builds thousands (gigabytes of JIT code on the Intel CPU runtime), so the tests drop the
# in-process caches now and then; pyopencl's on-disk binary cache still serves rebuilds.
_KERNEL_CACHE_LIMIT = 256


def pytest_runtest_teardown(item, nextitem):
    import sys

    opencl = sys.modules.get("clreduce.backends.opencl")
    cache = getattr(opencl, "_kernel_cache", None)
    if cache is not None and len(cache) > _KERNEL_CACHE_LIMIT:
        _STATE["kernels_dropped"] += len(cache)
        clear = getattr(opencl, "clear_caches", None)
        if clear is not None:
            clear()  # every cache that holds programs (kernels, plans, argument state)
        else:
            cache.clear()
            getattr(opencl, "_plan_cache", {}).clear()


def _item_device(item) -> FoundDevice | None:
    """The device a test item runs on: its ``cl_device`` or ``device_index`` parameter."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    if "cl_device" in params:
        return next((d for d in DEVICES if d.device == params["cl_device"]), None)
    if isinstance(params.get("device_index"), int) and params["device_index"] < len(DEVICES):
        return DEVICES[params["device_index"]]
    return None


def unsupported_skip_reason(item, exc) -> str | None:
    """Why a case that raised ``exc`` counts as skipped, or None (module docstring)."""
    from clreduce.plan import UnsupportedOnDevice

    if not isinstance(exc, UnsupportedOnDevice):
        return None
    found = _item_device(item)
    if found is None:
        return None
    if not found.caps.fp64 and "fp64" in str(exc):
        return f"{found.id} has no fp64: {exc}"
    variant = getattr(getattr(item, "callspec", None), "params", {}).get("variant")
    if isinstance(variant, Variant) and variant.force is not None:
        return f"{found.id} cannot run forced variant {variant.id} here: {exc}"
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and call.when == "call" and call.excinfo is not None:
        reason = unsupported_skip_reason(item, call.excinfo.value)
        if reason is not None:
            report.outcome = "skipped"
            report.longrepr = (str(item.path), (item.location[1] or 0) + 1, f"Skipped: {reason}")
    found = _item_device(item)
    # The device travels on the report: under pytest-xdist (.ci/run) the summary is written
    # by the controller, which sees reports but not items.
    report.user_properties.append(("clreduce_device", found.id if found is not None else "(no device)"))


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::")[0]
    _STATE["durations"][path] += report.duration
    if report.when == "call":
        _STATE["counts"][path] += 1
    key = dict(report.user_properties).get("clreduce_device", "(no device)")
    _STATE["device_secs"][key] += report.duration
    if report.when == "call" or report.outcome != "passed":
        if report.when != "teardown" or report.failed:
            outcome_name = "error" if report.failed and report.when != "call" else report.outcome
            _STATE["by_device"][key][outcome_name] += 1


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    tr = terminalreporter
    total = time.perf_counter() - (_STATE["t0"] or time.perf_counter())
    tr.section("clreduce test timing")
    mode = "exhaustive (--slow)" if slow_enabled(config) else "sampled (default)"
    tr.write_line(f"variant matrix: {mode}; devices: {', '.join(d.id for d in DEVICES) or 'NONE'}")
    missing = missing_runtimes(DEVICES, KNOWN_RUNTIMES)
    if missing:
        tr.write_line(f"!!! MISSING OpenCL runtimes: {', '.join(missing)}")
    for path, secs in sorted(_STATE["durations"].items(), key=lambda kv: -kv[1]):
        tr.write_line(f"  {secs:8.1f} s  {_STATE['counts'][path]:6d} tests  {path}")
    tr.write_line("per device (test time, outcomes):")
    for key, secs in sorted(_STATE["device_secs"].items(), key=lambda kv: -kv[1]):
        counts = _STATE["by_device"][key]
        tally = ", ".join(f"{counts[k]} {k}" for k in ("passed", "skipped", "failed", "error") if counts.get(k))
        tr.write_line(f"  {secs:8.1f} s  {key:12s}  {tally}")
    try:
        import sys

        opencl = sys.modules.get("clreduce.backends.opencl")
        if opencl is not None and not getattr(config.option, "numprocesses", None):  # xdist: in the workers
            built = len(opencl._kernel_cache) + _STATE["kernels_dropped"]
            tr.write_line(f"OpenCL programs built in this session: {built}")
    except Exception:  # noqa: BLE001 - informational only
        pass
    tr.write_line(f"total wall time (configure -> summary): {total:.1f} s")


# ---- fixtures ------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _no_plan_env(monkeypatch):
    """CLREDUCE_* plan overrides in the caller's environment would change what runs."""
    for name in _PLAN_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def cl_caps(cl_device):
    from clreduce.backends.opencl_probe import probe_device

    return probe_device(cl_device)


@pytest.fixture
def cl_queue(cl_device):
    from clreduce.backends.opencl import queue_for

    return queue_for(cl_device)


@pytest.fixture(scope="session")
def found_devices():
    return list(DEVICES)


@pytest.fixture(scope="session")
def forced_variants():
    """The function ``plan_variants(caps)`` (see below), for tests that loop over variants."""
    return plan_variants


@pytest.fixture
def assert_reduction():
    return assert_reduction_matches


@pytest.fixture
def make_data():
    return make_array


# ---- plan variants ---------------------------------------------------------------------------


class Variant(NamedTuple):
    id: str
    force: Force | None  # None: the planner's own choice
    width: int  # sub-group width the plan runs at (nominal 32 for local mode); shapes use it

    def factors(self) -> dict:
        f = self.force or Force()
        return {"sg_mode": f.sg_mode, "sg_size": f.sg_size, "strategy": f.strategy,
                "vec": f.vec, "wg": "default" if f.wg_size is None else ("one-sg" if f.wg_size == f.sg_size else
                                                                          f"wg{f.wg_size}")}


def _width(caps, force: Force | None) -> int:
    p = plan(caps, Problem(rows=64, row_len=64, dtype="float32", op="sum"), force)
    return p.sg_size or caps.warp_size or 32


def _variant_id(force: Force | None) -> str:
    if force is None:
        return "auto"
    parts = [force.sg_mode or "any"]
    if force.sg_size:
        parts.append(f"sg{force.sg_size}")
    parts.append(force.strategy or "anystrat")
    if force.vec:
        parts.append(f"vec{force.vec}")
    if force.wg_size:
        parts.append(f"wg{force.wg_size}")
    return "-".join(parts)


def plan_variants(caps) -> list[Variant]:
    """Every forced plan variant ``caps`` supports (``auto`` first).

    Base grid (the issue's list): sub-group device -> sg_mode in (builtin, shuffle, local)
    where the device has it, x every width in ``caps.subgroup_sizes`` (local mode has none)
    x the four strategies; no sub-groups (PoCL) -> local x strategies.
    Extras: vec 1/4 x strategies (CPU plans otherwise load 16 floats where K allows), and
    work-group sizes other than the default (one sub-group; 2 work-items; 1024).
    """
    modes = []
    if caps.subgroup_reduce_builtins:
        modes.append("builtin")
    if caps.khr_shuffle or caps.qcom_shuffle or caps.ptx_shuffle:
        modes.append("shuffle")
    modes.append("local")
    # NVIDIA OpenCL's PTX warps have a width but no sub-group extension
    sizes = tuple(caps.subgroup_sizes) if (caps.subgroups or caps.ptx_shuffle) and caps.subgroup_sizes else ()
    forces: list[Force] = []
    for mode in modes:
        for size in (sizes if mode != "local" else (None,)):
            for strategy in STRATEGIES:
                forces.append(Force(sg_mode=mode, sg_size=size, strategy=strategy))
    # vector widths on every strategy, rotating through modes and widths
    combos = [(m, s) for m in modes for s in (sizes if m != "local" else (None,))] or [("local", None)]
    for i, (vec, strategy) in enumerate(itertools.product((1, 4), STRATEGIES)):
        mode, size = combos[(i * 5) % len(combos)]
        forces.append(Force(sg_mode=mode, sg_size=size, strategy=strategy, vec=vec))
    # work-group sizes: one sub-group per group, tiny, large
    big = min(1024, 1 << (max(1, caps.max_work_group_size).bit_length() - 1))
    for i, strategy in enumerate(STRATEGIES):
        mode, size = combos[(i * 3) % len(combos)]
        forces.append(Force(sg_mode=mode, sg_size=size, strategy=strategy, wg_size=size or 2))
        forces.append(Force(sg_mode=mode, sg_size=size, strategy=strategy, wg_size=big))
    # the CPU-block kernel (no sub-groups, any device): its default, scalar and 16-wide
    # vectors, and a group of several work-items
    forces += [Force(strategy=CPU_STRATEGY), Force(strategy=CPU_STRATEGY, vec=1),
               Force(strategy=CPU_STRATEGY, vec=16), Force(strategy=CPU_STRATEGY, wg_size=2)]
    out, seen = [Variant("auto", None, _width(caps, None))], {"auto"}
    for force in forces:
        vid = _variant_id(force)
        if vid in seen:
            continue
        try:
            width = _width(caps, force)
        except (TypeError, ValueError):  # not runnable here (e.g. wg below the sub-group width)
            continue
        seen.add(vid)
        out.append(Variant(vid, force, width))
    return out


def column_variants(caps) -> list[Variant]:
    """Forced plans of the strided-axis kernel (inner > 1): only split_k, vec and wg_size
    apply there (row strategies and sub-group modes do not)."""
    big = min(1024, 1 << (max(1, caps.max_work_group_size).bit_length() - 1))
    forces = [Force(strategy="split_k")] + [Force(vec=v) for v in (1, 2, 4, 8, 16)] + [
        Force(strategy="split_k", vec=1), Force(strategy="split_k", vec=16),
        Force(wg_size=2), Force(wg_size=big), Force(strategy="split_k", wg_size=2)]
    out = [Variant("auto", None, 0)]
    for force in forces:
        out.append(Variant("cols-" + _variant_id(force).removeprefix("any-").replace("anystrat", "nosplit"),
                           force, 0))
    return out


def sampled_variants(variants: list[Variant], seed: int = SAMPLE_SEED) -> list[Variant]:
    """``auto`` plus a greedy cover of factor pairs, visiting variants in a seeded shuffle."""
    pairs_of_interest = (("sg_mode", "sg_size"), ("sg_mode", "strategy"), ("vec", "vec"), ("wg", "wg"))
    rest = list(variants[1:])
    random.Random(seed).shuffle(rest)
    covered, chosen = set(), [variants[0]]
    for v in rest:
        f = v.factors()
        pairs = {(a, f[a], b, f[b]) for a, b in pairs_of_interest}
        if pairs - covered:
            chosen.append(v)
            covered |= pairs
    order = {v.id: i for i, v in enumerate(variants)}
    return sorted(chosen, key=lambda v: order[v.id])


def default_cells(n_shapes: int, n_combos: int, budget: int, offset: int) -> set[tuple[int, int]]:
    """``budget`` (shape, combo) cells of an ``n_shapes x n_combos`` grid, taken diagonal by
    diagonal (combo = shape + offset + d, d = 0, 1, ...; each diagonal holds one cell per
    shape), starting at a shape that moves with ``offset``: a variant's first cells hit
    distinct shapes, and every further lap shifts each shape to the next combination."""
    cells = [(s, c) for s in range(n_shapes) for c in range(n_combos)]
    cells.sort(key=lambda sc: ((sc[1] - sc[0] - offset * 7) % n_combos, (sc[0] - offset * 5) % n_shapes))
    return set(cells[:budget])


def _parametrize_variant_cases(metafunc, marker):
    """Expand a ``variant_cases`` test; see the module docstring for what runs by default.

    Marker kwargs: ``shapes`` (function of the sub-group width -> [(id, shape)]), ``dtypes``,
    ``ops``, ``variants`` ("rows": ``plan_variants``, the default; "columns": ``column_variants``), ``forced_cells`` / ``auto_cells``: how many (shape, dtype x op) cells a sampled
    forced variant / the auto plan runs in the default run.
    """
    shapes_fn: Callable[[int], list] = marker.kwargs["shapes"]
    variants_fn: Callable = {"rows": plan_variants, "columns": column_variants}[marker.kwargs.get("variants", "rows")]
    combos = list(itertools.product(marker.kwargs["dtypes"], marker.kwargs["ops"]))
    forced_cells = marker.kwargs.get("forced_cells", 2)
    auto_cells = marker.kwargs.get("auto_cells", len(combos))
    slow = pytest.mark.slow
    params, ids = [], []
    for dev in DEVICES:
        variants = variants_fn(dev.caps)
        kept = {v.id for v in sampled_variants(variants)}
        for vi, variant in enumerate(variants):
            shapes = shapes_fn(variant.width)
            budget = auto_cells if variant.id == "auto" else forced_cells
            cells = default_cells(len(shapes), len(combos), budget, vi) if variant.id in kept else set()
            for si, (shape_id, shape) in enumerate(shapes):
                for ci, (dtype, op) in enumerate(combos):
                    in_default = (si, ci) in cells
                    params.append(pytest.param(dev.device, variant, shape, dtype, op,
                                               marks=() if in_default else (slow,)))
                    ids.append(f"{dev.id}-{variant.id}-{shape_id}-{dtype}-{op}")
    metafunc.parametrize(("cl_device", "variant", "shape", "dtype", "op"), params, ids=ids)


# ---- test data -----------------------------------------------------------------------------------


def make_array(rng: np.random.Generator, shape, dtype, kind: str = "random") -> np.ndarray:
    """Test input.

    kind="random": floats ~ N(0, 1) (zero mean keeps float sums well conditioned);
    integers over a wide range that still cannot overflow an int64 sum of 10**6 values.
    kind="exact": floats holding small integers in [-3, 3]: every partial sum of up to
    10**6 of them is an integer below 2**24, so a float32 accumulator is exact in any order
    and a dropped, doubled or uninitialised element shows up as an exact mismatch.
    """
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        if kind == "exact":
            return rng.integers(-3, 4, size=shape).astype(dtype)
        return rng.standard_normal(size=shape).astype(dtype)
    if dtype.kind == "b":
        return rng.random(size=shape) < 0.5
    info = np.iinfo(dtype)
    lo, hi = int(info.min), int(info.max)
    if dtype.itemsize == 8:
        lo, hi = (max(lo, -(1 << 40)), 1 << 40)
    if kind == "exact":
        lo, hi = max(lo, -3), min(hi, 3)
    return rng.integers(lo, hi, size=shape, endpoint=True, dtype=dtype)


def seed_for(*parts) -> int:
    return zlib.crc32(repr(parts).encode())


# ---- tolerances: the one place ------------------------------------------------------------------

# Float results are compared with a float64 reference (np.longdouble for float64 input).
# "acc" is the dtype the device accumulates in (float16 input accumulates in float32).
#
# sum, float: |got - ref| <= sum(|x|) * sum_rtol(K, acc, strided) + ulp(out), the README's bound:
#   * every float sum is blocked and compensated (cl_kernels/reduce_rows.cl, "accumulation"):
#     error-free merges (Kahan, TwoSum) joining blocks of plain adds, at most
#       rows:    ACC_BLOCK (32; CPU plans 16) loads + a head and tail of < 19 elements per accumulator,
#                log2(16) levels of a lane's vector fold, the Kahan join and the final
#                rounding, twice with a split's second pass: 2 * (50 + 4 + 2 + 1) + 1
#                roundings of eps / 2 -> SUM_TERMS_ROWS = 58 eps;
#       strided: COL_BLOCK (128) adds per column, the join and the rounding, twice with a
#                split: 2 * (127 + 2 + 1) -> SUM_TERMS_STRIDED = 130 eps;
#     whatever K; K * eps (the bound of any summation order, Higham: (K-1) u sum|x|) where
#     that is smaller.
#   * ulp(out): the final rounding to the output dtype; for float16 output this is the
#     "1 ulp of float16" rule (ref is the float64 result cast to float16).
#   * tests/test_accuracy.py also holds each result to numpy's own error on the same data.
# mean, float: the sum bound / K, plus one rounding in acc (the divide), plus ulp(out).
# exact data (integer-valued floats, partial sums < 2**24): sum must equal exactly; mean
#   within 1 ulp of the output dtype (one divide in acc, then at most one more rounding).
# integers: sum exact (int64/uint64 accumulation, wraps exactly as numpy); mean exactly
#   float64(exact integer sum) / K (the device sums exactly, in two 64-bit words where one
#   could wrap; the host rounds the total once and divides, as numpy does).
# max/min: exact, NaN in a row -> NaN (numpy propagates), inf compared as values.
SUM_TERMS_ROWS = 58
SUM_TERMS_STRIDED = 130
TOLERANCE = {
    "eps": {"float16": 2.0**-10, "float32": 2.0**-23, "float64": 2.0**-52},
    "acc": {"float16": "float32", "float32": "float32", "float64": "float64"},
}


def sum_rtol(k: int, acc: str, strided: bool = True) -> float:
    """Bound on a float sum's error relative to sum|x| (see above): min(K, terms) eps, terms
    for a strided (non-last, inner > 1) reduction or a contiguous one."""
    return min(int(k), SUM_TERMS_STRIDED if strided else SUM_TERMS_ROWS) * TOLERANCE["eps"][acc]


def is_strided(shape, axis) -> bool:
    """Whether clreduce reduces ``axis`` of a C-contiguous array of ``shape`` as the strided
    case (adjacent reduced axes followed by axes of total length > 1); otherwise rows."""
    ndim = len(shape)
    axes = sorted(a % ndim for a in (range(ndim) if axis is None else (axis if isinstance(axis, tuple) else (axis,))))
    if not axes or axes != list(range(axes[0], axes[-1] + 1)):
        return False  # non-adjacent axes are copied with the reduced ones last: rows
    return math.prod(shape[axes[-1] + 1:]) > 1


def _ulp(values: np.ndarray, dtype) -> np.ndarray:
    v = np.abs(np.asarray(values, dtype=np.float64)).astype(dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.spacing(v).astype(np.float64)


def _reduced_count(x: np.ndarray, axis) -> int:
    """K: how many elements each output value reduces."""
    axes = tuple(range(x.ndim)) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
    return int(np.prod([x.shape[a] for a in axes], dtype=np.int64))


def assert_reduction_matches(got, x, op: str, axis=None, keepdims: bool = False, *, exact: bool = False,
                             context: str = ""):
    """Assert ``got`` is numpy's ``op(x, axis, keepdims)`` within ``TOLERANCE`` (see above)."""
    x = np.asarray(x)
    np_fn = getattr(np, op)
    with np.errstate(all="ignore"):
        expected_np = np_fn(x, axis=axis, keepdims=keepdims)
    where = f" [{context}]" if context else ""
    got_arr = np.asarray(got)
    assert got_arr.dtype == np.asarray(expected_np).dtype, f"dtype {got_arr.dtype} != numpy's {np.asarray(expected_np).dtype}{where}"
    assert got_arr.shape == np.shape(expected_np), f"shape {got_arr.shape} != numpy's {np.shape(expected_np)}{where}"
    assert isinstance(got, np.ndarray) == isinstance(expected_np, np.ndarray), (
        f"type {type(got).__name__} != numpy's {type(expected_np).__name__}{where}")
    k = _reduced_count(x, axis)
    out_dtype = got_arr.dtype

    if x.dtype.kind in "biu":
        if op == "mean":
            wide = np.uint64 if x.dtype.kind == "u" else np.int64
            exact_sum = np.sum(x, axis=axis, keepdims=keepdims, dtype=wide)
            ref = np.asarray(exact_sum).astype(np.float64) / k
            np.testing.assert_array_equal(got_arr, ref, err_msg=f"integer mean{where}")
        else:
            np.testing.assert_array_equal(got_arr, np.asarray(expected_np), err_msg=f"{op} exact{where}")
        return

    hi = np.longdouble if x.dtype == np.float64 else np.float64
    xh = x.astype(hi)
    with np.errstate(all="ignore"):
        ref_hi = np.asarray(getattr(np, op)(xh, axis=axis, keepdims=keepdims))
        ref = ref_hi.astype(out_dtype).astype(np.float64)
    g = got_arr.astype(np.float64)
    special = ~np.isfinite(ref) | ~np.isfinite(ref_hi.astype(np.float64))
    # NaN / inf (input specials or float16 overflow) must match exactly.
    sp_ref = np.where(special, ref, 0.0)
    sp_got = np.where(special, g, 0.0)
    np.testing.assert_array_equal(sp_got, sp_ref, err_msg=f"{op}: NaN/inf positions or values differ{where}")
    if op in ("max", "min"):
        np.testing.assert_array_equal(g, ref, err_msg=f"{op} must be exact{where}")
        return
    acc = TOLERANCE["acc"][x.dtype.name]
    eps = TOLERANCE["eps"][acc]
    ulp_out = _ulp(ref, out_dtype)
    if exact:
        if op == "sum":
            np.testing.assert_array_equal(g, ref, err_msg=f"exact-data sum must be exact{where}")
            return
        tol = ulp_out
    else:
        with np.errstate(all="ignore"):
            abs_sum = np.asarray(np.sum(np.abs(xh), axis=axis, keepdims=keepdims)).astype(np.float64)
        bound = abs_sum * sum_rtol(k, acc, is_strided(x.shape, axis))
        if op == "mean":
            bound = bound / k + eps * np.abs(ref)
        tol = bound + ulp_out
    with np.errstate(invalid="ignore"):
        diff = np.where(special, 0.0, np.abs(g - ref))
    tol = np.where(special, 0.0, tol)
    bad = diff > tol
    if np.any(bad):
        idx = np.argwhere(np.atleast_1d(bad))[:5]
        gf, rf, tf = np.atleast_1d(g), np.atleast_1d(ref), np.atleast_1d(tol)
        detail = ", ".join(f"{tuple(i)}: got {gf[tuple(i)]!r} ref {rf[tuple(i)]!r} tol {tf[tuple(i)]:.3g}" for i in idx)
        raise AssertionError(f"{op} {x.dtype} K={k}: {int(np.sum(bad))} element(s) out of tolerance: {detail}{where}")


@pytest.fixture
def fresh_fallback_state():
    """No built programs and no remembered bad sub-group modes before and after the test
    (the build-fallback and ``probe --verify`` tests inject failures that must not leak)."""
    from clreduce.backends import cl_fallback, opencl

    opencl.clear_caches()
    cl_fallback.forget()
    yield
    opencl.clear_caches()
    cl_fallback.forget()
