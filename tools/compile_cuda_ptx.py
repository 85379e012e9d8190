#!/usr/bin/env python3
"""Compile every CUDA kernel variant the planner can produce to PTX; exit 1 on any failure.

The kernels are the ``.cl`` files of ``cl_kernels/`` behind ``cl_kernels/cl_dialect_cuda.h``,
exactly the text the CUDA backend hands NVRTC (``clreduce.kernels.read_source(.., "cuda")``).

No GPU and no CuPy needed: the CUDA backend's plans are made from the capabilities of
published parts (H100, A100, T4: ``clreduce.backends.cuda.probe``) for every dtype and op
over a set of shapes that reaches every strategy, for the forced sub-group modes,
work-group sizes and vector widths, and for the CUDA-only tuning knobs. One variant per
new combination of op/types or code path (``coverage_keys``; ``--all`` compiles every
distinct option set) is compiled with ``nvcc --ptx -arch=sm_80`` (``--arch`` to change; the
compiler is ``$NVCC`` or ``nvcc`` on PATH), in parallel. CI runs this (``.ci/run`` step 5),
so a syntax error in any variant fails CI.

    python tools/compile_cuda_ptx.py            # all variants
    python tools/compile_cuda_ptx.py --list     # print the option sets, compile nothing
    python tools/compile_cuda_ptx.py --quick    # float32/int8/float16 only
    python tools/compile_cuda_ptx.py --all      # every distinct option set, not one per path
    python tools/compile_cuda_ptx.py --files softmax.cl,row_norm.cl   # only these kernel files
    python tools/compile_cuda_ptx.py --keep /tmp/ptx_a   # keep the .cu and .ptx files there

``--keep DIR`` writes into DIR instead of a temporary folder and leaves there every source
(``batch_<i>.cu``: variants i.. of one kernel file in one translation unit; ``v<i>.cu``: one
variant), its PTX, and ``variants.txt`` (index, kernel file, options, the plan that needs
it). Two runs over two trees (say before and after a refactoring of a kernel) can then be
compared file by file: the variants are numbered alike while the planner is unchanged.
-lineinfo puts ``.file``/``.loc`` lines (source paths and line numbers) into the PTX; they
move with the source and are all that a change of layout alone may change.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import contextlib
import functools
import os
import shutil
import subprocess
import sys
import re
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from clreduce.backends.cuda.launch import cuda_source, nvrtc_options  # noqa: E402
from clreduce.kernels import DIALECT_HEADERS, kernel_path, kernel_text  # noqa: E402
from clreduce.backends.cuda.probe import (  # noqa: E402
    A100_PROPERTIES,
    H100_SXM_PROPERTIES,
    H200_PROPERTIES,
    T4_PROPERTIES,
    caps_from_properties,
)
from clreduce.backends.cuda.tune import cuda_plan  # noqa: E402
from clreduce.ops import OPS, SUPPORTED_DTYPES  # noqa: E402
from clreduce.plan import Force, Problem, UnsupportedOnDevice  # noqa: E402
from clreduce.plan_rowops import FAMILIES, INT_DTYPES, SCAN_OPS, RowForce, RowProblem, plan_row, row_variants  # noqa: E402

# (rows, row_len): every strategy (rows per warp at several team widths, warp per row,
# block per row, split-K) and odd lengths that exercise heads and tails.
SHAPES = [
    (1, 1), (7, 3), (1000, 7), (4096, 16), (4096, 32), (4096, 64), (4096, 128), (512, 1000),
    (256, 4096), (64, 65536), (4, 1 << 20), (1, (1 << 22) + 3), (3, 100_003),
]
FORCES = [
    Force(),
    Force(sg_mode="local"),
    Force(sg_mode="shuffle"),
    Force(strategy="rows_per_sg"),
    Force(strategy="sg_per_row"),
    Force(strategy="wg_per_row"),
    Force(strategy="split_k"),
    Force(wg_size=1024),
    Force(wg_size=32),
    Force(vec=1),
    Force(vec=16),
    Force(sg_mode="local", strategy="split_k", wg_size=64),
]


def _lanes_class(lanes: int) -> str:
    return "1" if lanes == 1 else ("narrow" if lanes < 32 else ("warp" if lanes == 32 else "block"))


_TYPE_KEYS = ("IN_T", "ACC_T", "OUT_T", "IN_HALF", "OUT_HALF", "IDENTITY", "MAP", "FINALIZE", "OPK",
              "IN_STATES", "OUT_STATES", "ARG_MAX", "ARG_MIN")


def coverage_keys(name: str, defines) -> tuple:
    """The facts one compiled variant covers. A variant is compiled when it covers a fact no
    earlier one did: every op/type combination (types, op, map, finalize) once; every code
    path (LANES 1 / narrow / warp / block, SG_MODE, SPLIT 1 / more, one-warp blocks, UNROLL,
    entry) with every accumulator type; every load (VEC x input type x map); every team
    reduce (LANES class x SG_MODE x op)."""
    d = dict(defines)
    op = tuple(sorted(k for k in d if k.startswith(("OP_", "ARG_")))) + (d.get("OPK"),)
    types = tuple((k, d.get(k)) for k in _TYPE_KEYS) + (op,)
    lanes = _lanes_class(int(d["LANES"])) if "LANES" in d else None
    path = (d.get("ENTRY"), lanes, d.get("SG_MODE"), d.get("SPLIT") == "1", d.get("WG_SIZE") == "32",
            d.get("UNROLL", "4") == "1", d.get("IN_STATES"), d.get("OUT_STATES"))
    return ((name, "types", types), (name, "path", path, d.get("ACC_T")),
            (name, "load", d.get("ENTRY"), d.get("VEC"), d.get("IN_T"), d.get("MAP"), d.get("IN_STATES")),
            (name, "team", lanes, d.get("SG_MODE"), op))


# Row ops (softmax.cl, row_norm.cl, row_scale.cl, row_scan.cl): shapes that reach every
# cache, lane class and split, and the planner's forced variants on two of them.
# (1, 1_000_000): one split row, which CUDA writes flat (row_norm.cl FLAT_WRITE, PHASE 3)
# (64, 65536): a warp a row of 512 tiles, which CUDA scans with the next tile loading (SCAN_PREFETCH)
ROW_SHAPES = [(1, 1), (1000, 7), (4096, 32), (4096, 128), (512, 1000), (64, 4097), (64, 65536), (4, 200_000),
              (1, 1_000_000)]
_ROW_TYPE_KEYS = ("IN_T", "OUT_T", "ACC_T", "LOG", "NORM", "HAS_WEIGHT", "HAS_BIAS", "PARAM_HALF", "QUANT", "SCAN")


def row_coverage_keys(name: str, defines) -> tuple:
    """What a row-op variant covers: its types and op, and its path (cache, sub-group mode,
    lane class, phase, items) with each accumulator type."""
    d = dict(defines)
    types = tuple((k, d.get(k)) for k in _ROW_TYPE_KEYS)
    path = (d.get("CACHE"), d.get("SG_MODE"), _lanes_class(int(d["LANES"])), d.get("PHASE"), d.get("SPLIT") == "1",
            d.get("ITEMS"), d.get("WG_SIZE") == "32", d.get("WALK_RUNS"), d.get("FLAT_WRITE"), d.get("ROW_WIDE_STORES"),
            d.get("SCAN_PREFETCH"))
    params = (d.get("CACHE"), d.get("PARAM_RUNS"), d.get("PARAM_HALF"), d.get("HAS_WEIGHT"), d.get("HAS_BIAS"),
              d.get("IN_T"))
    return ((name, "types", types), (name, "path", path, d.get("ACC_T"), d.get("SCAN")), (name, "params", params))


def row_variants_found(caps, dtypes, found: dict, seen: set, everything: bool) -> None:
    """Add the row-op variants of ``caps`` to ``found`` (see ``variants``)."""
    for op in FAMILIES:
        op_dtypes = tuple(d for d in dtypes if d.startswith("float") or (op in SCAN_OPS[:2] and d in INT_DTYPES))
        for dtype in op_dtypes:
            for rows, k in ROW_SHAPES:
                problems = [RowProblem(op, rows, k, dtype)]
                if op in ("rms_norm", "layer_norm"):
                    problems.append(RowProblem(op, rows, k, dtype, weight=True, bias=op == "layer_norm"))
                    if dtype == "float16":  # a float16 model's own weights, read as they are
                        problems.append(RowProblem(op, rows, k, dtype, weight=True, bias=op == "layer_norm",
                                                   params_half=True))
                for problem in problems:
                    forces = [None]
                    if (rows, k) in ((1000, 7), (64, 4097)) and dtype in ("float32", "int32", "float16"):
                        forces += row_variants(caps, problem)
                    for force in forces:
                        try:
                            p = plan_row(caps, problem, force)
                        except (UnsupportedOnDevice, ValueError):
                            continue
                        for launch in p.passes:
                            keys = row_coverage_keys(p.kernel_file, launch.defines)
                            if not everything and all(key in seen for key in keys):
                                continue
                            seen.update(keys)
                            found.setdefault((p.kernel_file, nvrtc_options(launch.defines)),
                                             f"{caps.name} {dtype} {op} {rows}x{k} {force}")


def variants(quick: bool = False, everything: bool = False) -> dict:
    """{(kernel .cl file, nvcc options): a plan that needs it}.

    Only variants that cover something new (``coverage_keys``) unless ``everything``."""
    # the H200 plans its register rows in two runs a lane (plan_rowops.CUDA_TWO_RUNS_GBPS_PER_SM)
    caps_list = [caps_from_properties(p) for p in (H100_SXM_PROPERTIES, H200_PROPERTIES, A100_PROPERTIES,
                                                   T4_PROPERTIES)]
    if not everything:
        caps_list = caps_list[:2]
    dtypes = ("float32", "int8", "float16") if quick else SUPPORTED_DTYPES
    found: dict[tuple[str, tuple[str, ...]], str] = {}
    seen: set = set()
    for caps in caps_list:
        for dtype in dtypes:
            for op in OPS:
                for rows, k in SHAPES:
                    for force in FORCES:
                        try:
                            p = cuda_plan(caps, Problem(rows, k, dtype, op), force)
                        except (UnsupportedOnDevice, ValueError):
                            continue
                        for launch in p.passes:
                            name = launch.kernel_file
                            keys = coverage_keys(name, launch.defines)
                            if not everything and all(key in seen for key in keys):
                                continue
                            seen.update(keys)
                            key = (name, nvrtc_options(launch.defines))
                            found.setdefault(key, f"{caps.name} {dtype} {op} {rows}x{k} {force}")
        row_variants_found(caps, dtypes, found, seen, everything)
    diagnostic_variants_found(found)
    return found


# Diagnostic builds no plan makes, compiled so that they keep compiling: (op, dtype, rows, k,
# the macros added to the plan's pass of that PHASE)
DIAGNOSTIC_BUILDS = (
    ("cumsum", "float32", 1, 1 << 28, "2", {"LB_TRACE": 1}),   # row_scan.cl: the look-back's phase times
    ("cumsum", "float16", 1, 1 << 28, "2", {"LB_TRACE": 1}),
)


def diagnostic_variants_found(found: dict) -> None:
    """Add DIAGNOSTIC_BUILDS, from the H200's plans, to ``found`` (see ``variants``)."""
    caps = caps_from_properties(H200_PROPERTIES)
    for op, dtype, rows, k, phase, extra in DIAGNOSTIC_BUILDS:
        p = plan_row(caps, RowProblem(op, rows, k, dtype))
        launch = next(launch for launch in p.passes if str(dict(launch.defines).get("PHASE")) == phase)
        defines = {**dict(launch.defines), **extra}
        found.setdefault((p.kernel_file, nvrtc_options(defines)), f"{caps.name} {dtype} {op} {rows}x{k} {extra}")


def nvcc_command(nvcc: str, arch: str, source: Path, options: tuple[str, ...], out: Path) -> list[str]:
    # NVRTC-only spellings are dropped; the rest mean the same to nvcc.
    opts = [o for o in options if not o.startswith("--std=")] + ["-std=c++17"]
    return [nvcc, "--ptx", f"-arch={arch}", *opts, "-Werror", "all-warnings", str(source), "-o", str(out)]


_DEFINE_RE = re.compile(r"^\s*#\s*define\s+(\w+)", re.MULTILINE)


@functools.lru_cache(maxsize=None)
def _dialect_macros() -> frozenset[str]:
    """Macros the CUDA dialect header defines. batch_source leaves them alone: an include that
    defines one only where the dialect has not (team_common.h's `#ifndef LOCAL_PTR`) would,
    once #undef'd, make LOCAL_PTR OpenCL's __local, i.e. __shared__ on a parameter, and every
    batch of row-op variants failed and fell back to one nvcc run per variant."""
    return frozenset(_DEFINE_RE.findall(kernel_path(DIALECT_HEADERS["cuda"]).read_text(encoding="utf-8")))


def batch_source(name: str, items: list[tuple[int, tuple[str, ...]]]) -> str:
    """One translation unit holding several variants of kernel file ``name``: the dialect
    header once (it is include-guarded and depends on no variant macro), then per variant, in
    a namespace of its own, ``#undef`` of every macro the variants or the file define (not the
    dialect header's), the variant's -D macros as ``#define``, entry points renamed per
    variant, and the file. One nvcc run per batch instead of per variant (nvcc's start-up
    dominates)."""
    text = kernel_text(name)  # includes (row_common.h) spliced in: their guards are #undef'd below
    own = set(_DEFINE_RE.findall(text)) - _dialect_macros()
    entries = {"reduce_rows", "reduce_rows_state", "reduce_cols", "softmax_rows", "norm_rows", "scale_rows",
               "scan_rows"}
    lines = [f"/* generated by tools/compile_cuda_ptx.py: {len(items)} variants of {name} */",
             f'#include "{kernel_path(DIALECT_HEADERS["cuda"]).as_posix()}"']
    all_defines = set(own)
    parsed = []
    for index, options in items:
        defs = [o[2:].split("=", 1) for o in options if o.startswith("-D")]
        all_defines.update(k for k, _ in defs)
        parsed.append((index, defs))
    for index, defs in parsed:
        lines += [f"#undef {m}" for m in sorted(all_defines | entries)]
        lines += [f"#define {k} {v}" for k, v in defs]
        lines += [f"#define {e} {e}_v{index}" for e in sorted(entries)]
        lines += [f"namespace clreduce_v{index} {{", text, "}"]
    return "\n".join(lines) + "\n"


def compile_nvrtc(found: dict, args) -> int:
    """Every variant through CuPy's NVRTC (PTX for --arch), one thread per CPU."""
    from cupy.cuda import compiler

    arch = args.arch.replace("sm_", "")
    sources = {name: cuda_source(name) for name, _ in found}
    start = time.time()

    def build(item):
        (name, options), why = item
        try:
            compiler.compile_using_nvrtc(sources[name], options, arch=arch)
            return None
        except Exception as exc:  # noqa: BLE001
            return f"FAILED ({why}): {name} {' '.join(options)}\n{exc}"

    with cf.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        failures = [f for f in pool.map(build, sorted(found.items())) if f]
    for f in failures[:5]:
        print(f, file=sys.stderr)
    print(f"compile_cuda_ptx: {len(found) - len(failures)}/{len(found)} variants compiled by NVRTC "
          f"(sm_{arch}) in {time.time() - start:.0f} s")
    return 1 if failures else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", default="sm_80")
    ap.add_argument("--nvcc", default=os.environ.get("NVCC") or shutil.which("nvcc") or "nvcc")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--quick", action="store_true", help="fewer dtypes (float32, int8, float16)")
    ap.add_argument("--list", action="store_true", help="print the option sets and exit")
    ap.add_argument("--batch", type=int, default=48, help="variants per nvcc run (1: one run each)")
    ap.add_argument("--nvrtc", action="store_true",
                    help="compile with NVRTC through CuPy instead of nvcc (what the backend uses at run time)")
    ap.add_argument("--all", action="store_true",
                    help="every distinct option set of three parts (H100, A100, T4), not one per code path")
    ap.add_argument("--files", default="", help="comma-separated kernel files to keep (e.g. softmax.cl,row_scan.cl)")
    ap.add_argument("--keep", default="", metavar="DIR",
                    help="compile in DIR (created; must be empty) and keep its .cu and .ptx files and variants.txt")
    args = ap.parse_args(argv)

    found = variants(args.quick, args.all)
    if args.files:
        keep = set(args.files.split(","))
        found = {key: why for key, why in found.items() if key[0] in keep}
    if args.list:
        for (name, options), why in sorted(found.items()):
            print(name, " ".join(options), "#", why)
        print(f"{len(found)} variants")
        return 0
    if args.nvrtc:
        return compile_nvrtc(found, args)
    if not shutil.which(args.nvcc) and not Path(args.nvcc).is_file():
        print(f"error: nvcc not found ({args.nvcc}); set NVCC or PATH", file=sys.stderr)
        return 2

    start = time.time()
    failures = []
    items = sorted(found.items())
    base_opts = [o for o in items[0][0][1] if not o.startswith("-D")] if items else []
    batches: list[tuple[str, list]] = []
    for name in sorted({n for (n, _), _ in items}):
        mine = [(i, opts, why) for i, ((n, opts), why) in enumerate(items) if n == name]
        for b in range(0, len(mine), args.batch):
            batches.append((name, mine[b:b + args.batch]))
    if args.keep:
        keep_dir = Path(args.keep)
        keep_dir.mkdir(parents=True, exist_ok=True)
        if any(keep_dir.iterdir()):
            print(f"error: --keep {keep_dir} is not empty", file=sys.stderr)
            return 2
        (keep_dir / "variants.txt").write_text(
            "".join(f"{i} {n} {' '.join(opts)} # {why}\n" for i, ((n, opts), why) in enumerate(items)),
            encoding="utf-8")
    with (contextlib.nullcontext(args.keep) if args.keep else tempfile.TemporaryDirectory()) as tmp:
        def build_one(name, index, options, why):
            src = Path(tmp) / f"v{index}.cu"
            src.write_text(cuda_source(name), encoding="utf-8")
            cmd = nvcc_command(args.nvcc, args.arch, src, options, src.with_suffix(".ptx"))
            proc = subprocess.run(cmd, capture_output=True, text=True)
            return proc.returncode, cmd, proc.stdout + proc.stderr, why

        def build_batch(batch):
            name, members = batch
            if len(members) == 1:
                return [build_one(name, *members[0])]
            src = Path(tmp) / f"batch_{members[0][0]}.cu"
            src.write_text(batch_source(name, [(i, opts) for i, opts, _ in members]), encoding="utf-8")
            cmd = nvcc_command(args.nvcc, args.arch, src, tuple(base_opts), src.with_suffix(".ptx"))
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode == 0:
                return [(0, cmd, "", why) for _, _, why in members]
            # find the culprits one by one
            return [build_one(name, *m) for m in members]

        with cf.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            for results in pool.map(build_batch, batches):
                for rc, cmd, log, why in results:
                    if rc != 0:
                        failures.append((cmd, log, why))
    took = time.time() - start
    for cmd, log, why in failures[:5]:
        print(f"FAILED ({why}):\n  {' '.join(cmd)}\n{log}", file=sys.stderr)
    print(f"compile_cuda_ptx: {len(found) - len(failures)}/{len(found)} variants compiled to PTX "
          f"(-arch={args.arch}) in {took:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
