"""The ``clreduce`` command: ``probe``, ``plan`` and ``demo``.

``clreduce plan`` is pure: it reads a caps or profile JSON file and runs the planner, so it
works on a machine with no OpenCL device and without importing pyopencl. ``probe`` and
``demo`` need an OpenCL platform (``pip install "clreduce[pocl]"`` gives a CPU one).

Exit status: 0 success, 1 failure (no OpenCL platform, a plan the device cannot run,
a demo result outside tolerance), 2 bad command-line input.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time

import numpy as np

# The shape `probe` plans for (a transformer activation: tokens x hidden).
PROBE_SHAPE = (4096, 768)
PROBE_OP = "mean"
PROBE_DTYPE = "float32"
# Ops the demo checks against numpy (same name in numpy, error bound below).
DEMO_OPS = ("sum", "mean", "max", "min")

_INSTALL_HINT_FALLBACK = (
    "no OpenCL platform/device found. For a CPU device from pip: "
    "pip install 'pyopencl[pocl]' (or: pip install 'clreduce[pocl]')"
)


class CliError(Exception):
    """A user-facing failure: message printed as ``clreduce CMD: error: ...``."""

    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.status = status


# ---- helpers (pure) -------------------------------------------------------------------


def parse_shape(text: str) -> tuple[int, ...]:
    """``"4096,768"`` -> ``(4096, 768)``; also accepts ``x`` as separator."""
    parts = [p for p in text.replace("x", ",").replace("X", ",").split(",") if p.strip()]
    if not parts:
        raise argparse.ArgumentTypeError(f"empty shape {text!r}")
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"shape {text!r} is not a comma-separated list of integers") from None
    if any(d < 1 for d in shape):
        raise argparse.ArgumentTypeError(f"shape {text!r}: every dimension must be >= 1")
    return shape


def _int_at_least(least: int):
    """An argparse type: an int >= ``least`` (a clear exit-2 message, not a driver error later)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"{value} is not >= {least}")
        return value

    return parse


positive_int = _int_at_least(1)
non_negative_int = _int_at_least(0)


def check_output_path(path: str, option: str) -> None:
    """Refuse, before any run, an output file that cannot be written afterwards.

    Parameters
    ----------
    path : str
        The file ``--json``/``--plot`` will write.
    option : str
        The option's name, for the message.

    Raises
    ------
    CliError
        Status 2: ``path`` is a directory, its folder does not exist or cannot be written,
        or the file exists and cannot be overwritten.
    """
    if os.path.isdir(path):
        raise CliError(f"{option} {path}: is a directory, not a file", 2)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise CliError(f"{option} {path}: folder {folder} does not exist", 2)
    if os.path.exists(path):
        if not os.access(path, os.W_OK):
            raise CliError(f"{option} {path}: file exists and is not writable", 2)
    elif not os.access(folder, os.W_OK | os.X_OK):
        raise CliError(f"{option} {path}: folder {folder} is not writable", 2)


def check_plot_format(path: str) -> None:
    """CliError (status 2) unless matplotlib is installed and can write ``path``'s format."""
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        raise CliError("--plot needs matplotlib: pip install 'clreduce[plot]'", status=2) from None
    suffix = os.path.splitext(path)[1].lower().lstrip(".")
    supported = FigureCanvasBase.get_supported_filetypes()
    if suffix and suffix not in supported:   # no suffix: matplotlib writes its default, png
        raise CliError(f"--plot {path}: matplotlib cannot write .{suffix} files; use one of "
                       f"{', '.join('.' + e for e in sorted(supported))}", 2)


def rows_and_len(shape: tuple[int, ...]) -> tuple[int, int]:
    """Reduction over the last axis: (prod(shape[:-1]), shape[-1])."""
    return math.prod(shape[:-1]), shape[-1]


def load_caps(path: str, index: int | None = None):
    """DeviceCaps from a file holding any of:

    * a DeviceCaps JSON object (``DeviceCaps.to_json()``, or the ``caps`` of a probe entry);
    * one entry of ``clreduce probe --json`` (an object with a ``caps`` key);
    * a JSON list of those, e.g. the whole ``probe --json`` output (default: the entry
      marked ``default``, else the first);
    * a device-profile object or list (``tests/data/mobile_gpus.json`` schema), read with
      ``DeviceCaps.from_profile`` (default: the first entry).

    Returns ``(caps, label)`` where ``label`` says which entry was used.
    """
    from .caps import DeviceCaps

    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}", 2) from None
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        # RecursionError: JSON nested past Python's limit ('[' * 100000)
        raise CliError(f"{path} is not JSON: {type(exc).__name__}: {exc}", 2) from None

    label = path
    if isinstance(data, list):
        if not data:
            raise CliError(f"{path}: empty list", 2)
        if index is None:
            marked = [i for i, e in enumerate(data) if isinstance(e, dict) and e.get("default") is True]
            index = marked[0] if marked else 0
        if not 0 <= index < len(data):  # no Python negative indices: the message says 0..n-1
            raise CliError(f"--index {index} out of range: {path} holds {len(data)} entries (0..{len(data) - 1})", 2)
        data = data[index]
        label = f"{path}[{index}]"
    elif index not in (None, 0):
        raise CliError(f"--index {index}: {path} holds one object, not a list", 2)

    if not isinstance(data, dict):
        raise CliError(f"{label}: expected a JSON object, got {type(data).__name__}", 2)
    try:
        if isinstance(data.get("caps"), dict):  # a probe --json entry
            caps = DeviceCaps.from_dict(data["caps"])
        elif _looks_like_caps(data):
            caps = DeviceCaps.from_dict(data)
        elif set(data) - {"caps"}:  # profile fields (from_profile checks their values)
            caps = DeviceCaps.from_profile(data)
        else:
            # {} or {"caps": 5} had become a profile of defaults, planned for as a real device
            raise ValueError("neither a DeviceCaps object (with 'backend'), a probe entry (with a 'caps' "
                             "object) nor a device profile (with a 'name')")
    except (TypeError, ValueError, AttributeError, OverflowError, KeyError) as exc:
        # wrong-shaped JSON ({"caps": 5}, a list inside, 1e400 as a size)
        raise CliError(f"{label}: not a DeviceCaps or device profile: {type(exc).__name__}: {exc}", 2) from None
    inner = data.get("caps")
    name = inner.get("name") if isinstance(inner, dict) else data.get("name")
    return caps, f"{label} ({name or caps.name or 'unnamed'})"


def _looks_like_caps(data: dict) -> bool:
    import dataclasses

    from .caps import DeviceCaps

    fields = {f.name for f in dataclasses.fields(DeviceCaps)}
    return "backend" in data and set(data) <= fields


def _force_from_args(args):
    from . import config
    from .plan import Force

    cli = Force(sg_mode=args.sg_mode, sg_size=args.sg_size, strategy=args.strategy,
                wg_size=args.wg_size, vec=args.vec)
    # Command-line choices win; CLREDUCE_* variables fill the rest, as in the library.
    return cli.merged(config.forced_plan())


def plan_summary(p) -> str:
    sg = f"{p.sg_mode} width {p.sg_size}" + (f" (requested: {p.reqd_sg})" if p.reqd_sg != "none" else "") \
        if p.sg_size else f"{p.sg_mode} (no sub-groups)"
    text = (f"strategy {p.strategy}, sub-groups {sg}, work-group {p.wg_size}, lanes/row {p.lanes}, "
            f"vec {p.vec}")
    if p.split > 1:
        text += f", split {p.split}"
    return text + f", {len(p.passes)} pass{'es' if len(p.passes) > 1 else ''}"


def _size(nbytes: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            value = nbytes / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{nbytes} B"


# ---- OpenCL access (lazy: only probe and demo import pyopencl) -----------------------


def _opencl():
    """(pyopencl, clreduce.backends.opencl), or CliError with the install hint."""
    try:
        import pyopencl as cl

        from .backends import opencl as backend
    except ImportError as exc:
        raise CliError(f"pyopencl cannot be imported ({exc}). {_INSTALL_HINT_FALLBACK}") from None
    return cl, backend


def _indexed_devices(cl):
    """[("P:D", device)] as PYOPENCL_CTX and CLREDUCE_DEVICE count them."""
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        return []
    found = []
    for p_index, platform in enumerate(platforms):
        try:
            devices = platform.get_devices()
        except cl.Error:
            continue
        found.extend((f"{p_index}:{d_index}", device) for d_index, device in enumerate(devices))
    return found


def _select_device(cl, backend, selector: str):
    """A device for ``--device``: what the library's selector accepts (``P:D`` or a name
    substring or an implementation such as ``pocl``, ``intel``, ``rusticl``), else a
    hardware vendor name such as ``amd``."""
    try:
        return backend.queue_for(device=selector).device
    except backend.NoOpenCLDevice:
        from .caps import normalize_vendor

        for _index, device in _indexed_devices(cl):
            if normalize_vendor(device.vendor, device.name) == selector.lower():
                return device
        names = [f"{i} {d.name.strip()} [{d.platform.name.strip()}]" for i, d in _indexed_devices(cl)]
        raise backend.NoOpenCLDevice(f"--device {selector!r} matches none of: {'; '.join(names)}") from None


def _default_device(backend):
    """(device, reason) of the library's default device, or (None, why not)."""
    try:
        queue = backend.default_queue()
        return queue.device, backend.default_reason()
    except Exception as exc:  # noqa: BLE001 - e.g. CLREDUCE_DEVICE matching nothing
        return None, f"no default device: {exc}"


# ---- probe ----------------------------------------------------------------------------


def cmd_probe(args) -> int:
    cl, backend = _opencl()
    devices = _indexed_devices(cl)
    if not devices:
        raise CliError(getattr(backend, "INSTALL_HINT", _INSTALL_HINT_FALLBACK))
    from .plan import Problem

    verified = _verify(backend, devices) if getattr(args, "verify", False) else {}
    default_device, reason = _default_device(backend)
    rows, k = PROBE_SHAPE
    problem = Problem(rows=rows, row_len=k, dtype=PROBE_DTYPE, op=PROBE_OP)
    entries = []
    for index, device in devices:
        caps = backend.caps_of(device)
        is_default = default_device is not None and device.int_ptr == default_device.int_ptr
        launch_plan, plan_error = None, None
        try:
            launch_plan, _ = backend.plan_for(backend.queue_for(device), problem)
        except Exception as exc:  # noqa: BLE001 - report, keep probing the others
            plan_error = f"{type(exc).__name__}: {exc}"
        entries.append(dict(index=index, device=device, caps=caps, default=is_default,
                            plan=launch_plan, plan_error=plan_error))

    if args.json:
        out = []
        for e in entries:
            item = {"index": e["index"], "caps": e["caps"].to_dict(), "default": e["default"],
                    "plan": e["plan"].to_dict() if e["plan"] else None}
            item["default_reason"] = reason if e["default"] else None
            if e["plan_error"]:
                item["plan_error"] = e["plan_error"]
            if verified:
                item["verify"] = verified[e["index"]]
            out.append(item)
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0

    print(f"OpenCL devices: {len(entries)}   (* = default; select with CLREDUCE_DEVICE=P:D or a name)")
    for e in entries:
        c = e["caps"]
        mark = "*" if e["default"] else " "
        print(f"{mark} {e['index']}  {c.name}")
        print(f"      implementation {c.implementation} (platform {c.platform_name!r}, driver "
              f"{c.driver_version}), hardware {c.vendor} ({c.vendor_string}), {c.device_type}, {c.device_version}")
        print(f"      OpenCL C {', '.join(c.opencl_c_versions)}"
              + (f" (build with -cl-std={c.cl_std})" if c.cl_std else ""))
        if c.subgroups:
            shuffles = [n for n, ok in (("khr", c.khr_shuffle), ("qcom", c.qcom_shuffle)) if ok]
            print(f"      sub-groups: yes, widths {', '.join(map(str, c.subgroup_sizes))} "
                  f"(width request: {c.subgroup_size_control}), reduce built-ins: "
                  f"{'yes' if c.subgroup_reduce_builtins else 'no'}, shuffle: {', '.join(shuffles) or 'none'}")
        elif c.ptx_shuffle:
            print(f"      sub-groups: no extension; warps of {c.subgroup_sizes[0]} with inline-PTX shuffles "
                  "(shfl.sync.bfly.b32, probe passed)")
        else:
            print("      sub-groups: no (local-memory reductions)")
        print(f"      fp16 {'yes' if c.fp16 else 'no'}, fp64 {'yes' if c.fp64 else 'no'}, "
              f"max work-group {c.max_work_group_size}, local mem {_size(c.local_mem_size)}"
              f"{' (global memory)' if c.local_mem_is_global else ''}, compute units {c.compute_units}, "
              f"global mem {_size(c.global_mem_size)}")
        shape = "x".join(map(str, PROBE_SHAPE))
        if e["plan"] is not None:
            print(f"      plan {PROBE_OP} {shape} {PROBE_DTYPE}: {plan_summary(e['plan'])}")
        else:
            print(f"      plan {PROBE_OP} {shape} {PROBE_DTYPE}: cannot run: {e['plan_error']}")
    default = [e for e in entries if e["default"]]
    if default:
        print(f"default device: {default[0]['index']} {default[0]['caps'].name} ({reason})")
    else:
        print(reason)
    return _print_verify(verified)


def _verify(backend, devices) -> dict:
    """``probe --verify``: {index: [result per (sub-group mode, case)]} (see cl_verify)."""
    from .backends.cl_verify import verify_device

    return {index: verify_device(device) for index, device in devices if not backend.is_simulator(device)}


def _print_verify(verified: dict) -> int:
    """Print --verify's summary; exit status 1 when any mode answered wrong or failed."""
    bad = 0
    for index, results in verified.items():
        for r in results:
            if r["status"] in ("wrong", "build failed"):
                bad += 1
                print(f"verify {index}: {r['op']} {r['dtype']} {'x'.join(map(str, r['shape']))} with sub-group "
                      f"mode {r.get('planned_mode', r['mode'])}: {r['status']} -- marked bad for this process")
        ran = sum(r["status"] in ("ok", "wrong") for r in results)
        print(f"verify {index}: {ran} variant runs against numpy, "
              f"{sum(r['status'] == 'ok' for r in results)} right")
    return 1 if bad else 0


# ---- plan -----------------------------------------------------------------------------


def cmd_plan(args) -> int:
    from .ops import SUPPORTED_DTYPES
    from .plan import Problem, UnsupportedOnDevice, plan

    if args.dtype not in SUPPORTED_DTYPES:
        raise CliError(f"unsupported dtype {args.dtype!r}; supported: {', '.join(SUPPORTED_DTYPES)}", 2)
    caps, label = load_caps(args.caps, args.index)
    rows, k = rows_and_len(args.shape)
    try:
        force = _force_from_args(args)
        problem = Problem(rows=rows, row_len=k, dtype=args.dtype, op=args.op)
        launch_plan = plan(caps, problem, force)
    except UnsupportedOnDevice as exc:
        raise CliError(f"{label}: {exc}", 1) from None
    except (TypeError, ValueError) as exc:
        raise CliError(str(exc), 2) from None
    print(f"# {label}: {args.op} over the last axis of {args.shape} {args.dtype} "
          f"-> rows={rows}, row_len={k}", file=sys.stderr)
    json.dump(launch_plan.to_dict(), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


# ---- demo -----------------------------------------------------------------------------


def make_input(shape: tuple[int, ...], dtype: str, seed: int = 0) -> np.ndarray:
    """Activation-like data: normal(0.5, 2) for floats, small signed/unsigned ints otherwise."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return (rng.standard_normal(shape, dtype=np.float32) * 2 + 0.5).astype(dt)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    info = np.iinfo(dt)
    return rng.integers(max(info.min, -100), min(info.max, 100), size=shape, endpoint=True, dtype=dt)


def error_bound(x: np.ndarray, op: str, result_dtype: np.dtype) -> np.ndarray:
    """Per-output bound on |clreduce - exact| (exact = float64 reference), valid for any
    summation order.

    * max/min: exact (0).
    * integer and bool sum: exact (64-bit accumulation); integer mean: one float64 divide.
    * float sum: (K-1)·eps(acc)·Σ|x|, the worst case of K-1 rounded additions in any order
      (acc is float32 for float16 input), plus one rounding to the output dtype; mean: the
      same divided by K.
    """
    k = x.shape[-1]
    if op in ("max", "min"):
        return np.zeros(x.shape[:-1])
    if x.dtype.kind != "f":
        if op == "sum":
            return np.zeros(x.shape[:-1])
        return 2 * np.finfo(np.float64).eps * np.abs(x.astype(np.float64).mean(axis=-1))
    acc_eps = float(np.finfo(np.float32 if x.dtype == np.float16 else x.dtype).eps)
    out_eps = float(np.finfo(result_dtype).eps)
    abs_sum = np.abs(x.astype(np.float64)).sum(axis=-1)
    bound = ((k - 1) * acc_eps + out_eps) * abs_sum
    return bound / k if op == "mean" else bound


def cmd_demo(args) -> int:
    cl, backend = _opencl()
    if not _indexed_devices(cl):
        raise CliError(getattr(backend, "INSTALL_HINT", _INSTALL_HINT_FALLBACK))
    import clreduce

    from .plan import Problem

    try:
        if args.device:
            base = backend.queue_for(device=_select_device(cl, backend, args.device))
            reason = f"--device {args.device}"
        else:
            base = backend.default_queue()
            reason = backend.default_reason()
    except backend.NoOpenCLDevice as exc:
        raise CliError(str(exc)) from None
    device = base.device
    index = next((i for i, d in _indexed_devices(cl) if d.int_ptr == device.int_ptr), "?")
    # A queue with profiling on the same context, so kernel times come from device events.
    queue = cl.CommandQueue(base.context, device, properties=cl.command_queue_properties.PROFILING_ENABLE)

    shape = args.shape
    rows, k = rows_and_len(shape)
    x = make_input(shape, args.dtype)
    print(f"device: {index} {device.name.strip()} [{device.platform.name.strip()}] ({reason})")
    print(f"input: {'x'.join(map(str, shape))} {args.dtype} ({_size(x.nbytes)}), {args.op} over axis -1")

    fn = getattr(clreduce, args.op)
    try:
        got = fn(x, axis=-1, queue=queue)
    except Exception as exc:  # noqa: BLE001 - show what failed, exit 1
        print(f"FAIL: clreduce.{args.op} raised {type(exc).__name__}: {exc}")
        return 1
    want = getattr(np, args.op)(x.astype(np.float64) if x.dtype.kind == "f" else x, axis=-1)
    expected_dtype = getattr(np, args.op)(x[..., :1], axis=-1).dtype
    err = np.abs(np.asarray(got, dtype=np.float64) - np.asarray(want, dtype=np.float64))
    bound = error_bound(x, args.op, expected_dtype)
    max_err = float(err.max()) if err.size else 0.0
    ok = got.shape == want.shape and got.dtype == expected_dtype and bool(np.all(err <= bound))

    rows2d = np.ascontiguousarray(x).reshape(rows, k)
    problem = Problem(rows=rows, row_len=k, dtype=x.dtype.name, op=args.op)
    prepared = backend.PreparedReduction(queue, rows2d, problem)
    print(f"plan: {plan_summary(prepared.plan)}")
    times = []
    for i in range(args.warmup + args.runs):
        events = prepared.enqueue()
        events[-1].wait()
        if i >= args.warmup:
            times.append((events[-1].profile.end - events[0].profile.start) * 1e-9)
    t = statistics.median(times)
    nbytes = x.nbytes

    np_times = []
    for _ in range(max(3, min(args.runs, 10))):
        t0 = time.perf_counter()
        getattr(np, args.op)(x, axis=-1)
        np_times.append(time.perf_counter() - t0)
    t_np = statistics.median(np_times)

    print(f"kernel time: {t * 1e3:.3f} ms (median of {args.runs} after {args.warmup} warm-up, "
          f"OpenCL profiling events)")
    print(f"bandwidth: {nbytes / t / 1e9:.2f} GB/s read   (numpy {args.op} on the host: "
          f"{t_np * 1e3:.3f} ms, {nbytes / t_np / 1e9:.2f} GB/s)")
    print(f"max abs error vs numpy (float64 reference): {max_err:.3g} "
          f"(bound {float(bound.max()) if bound.size else 0.0:.3g})")
    if not ok:
        detail = []
        if got.shape != want.shape:
            detail.append(f"shape {got.shape} != {want.shape}")
        if got.dtype != expected_dtype:
            detail.append(f"dtype {got.dtype} != {expected_dtype}")
        if not np.all(err <= bound):
            detail.append(f"{int((err > bound).sum())} of {err.size} outputs outside the bound")
        print(f"FAIL: {'; '.join(detail)}")
        return 1
    print("PASS")
    return 0


def cmd_bench(args) -> int:
    # output paths first: a path that cannot be written used to fail after the whole run
    if args.json:
        check_output_path(args.json, "--json")
    if args.plot:
        check_output_path(args.plot, "--plot")
        check_plot_format(args.plot)
    cl, backend = _opencl()
    if not _indexed_devices(cl):
        raise CliError(getattr(backend, "INSTALL_HINT", _INSTALL_HINT_FALLBACK))
    from . import bench

    devices = None
    if args.device:
        try:
            devices = [_select_device(cl, backend, args.device)]
        except backend.NoOpenCLDevice as exc:
            raise CliError(str(exc)) from None
    peers = [p for p in args.peers.split(",") if p] if args.peers else []
    unknown = sorted(set(peers) - set(bench.PEERS))
    if unknown:
        raise CliError(f"unknown peers {unknown}; known: {', '.join(bench.PEERS)}", status=2)
    shapes = bench.SHAPES
    if args.shapes:
        try:
            shapes = [parse_shape(s) for s in args.shapes.split(";") if s]
        except argparse.ArgumentTypeError as exc:
            raise CliError(f"--shapes: {exc}", status=2) from None
        if not shapes or any(len(s) != 2 for s in shapes):
            raise CliError("--shapes takes ROWS,K pairs separated by ';'", status=2)
    report = bench.run(devices=devices, op=args.op, max_bytes=args.max_mb << 20, repeat=args.runs,
                       json_path=args.json, peers=peers, calls=args.calls, shapes=shapes)
    print()
    print(bench.markdown(report))
    if args.plot:
        bench.plot(report, args.plot)
        print(f"\nplot written to {args.plot}")
    bad = [r["shape"] for d in report["devices"] for r in d["rows"] if not r["correct"]]
    bad += [d["axes"]["shape"] for d in report["devices"]
            if not (d["axes"]["axis=0"]["correct"] and d["axes"]["axis=-1"]["correct"])]
    if bad:
        print(f"FAIL: results outside tolerance for shapes {bad}")
        return 1
    return 0


def cmd_tune(args) -> int:
    from . import tuning

    if args.clear:
        removed = tuning.clear()
        print(f"removed {len(removed)} tune file(s) from {tuning.cache_dir()}")
        return 0
    if args.show:
        files = tuning.show()
        for f in files:   # the loader's rules: a file it would ignore shows nothing
            if "error" in f:
                print(f"clreduce tune: warning: {f['path']} is not a usable tune file ({f['error']}); "
                      "ignored, and rewritten by the next `clreduce tune`", file=sys.stderr)
        if args.json:
            print(json.dumps(files, indent=1))
            return 0
        if not files:
            print(f"no tune files in {tuning.cache_dir()}")
        for f in files:
            if "error" in f:
                print(f"{f['path']}: ignored ({f['error']})")
                continue
            fp = f["fingerprint"] or {}
            state = "current" if f["current"] else "stale (other clreduce version or kernels): ignored"
            print(f"{f['path']}: {fp.get('platform')} / {fp.get('name')} [{fp.get('driver_version')}], {state}")
            for key, entry in f["entries"].items():
                forced = ", ".join(f"{k}={v}" for k, v in entry["force"].items() if v is not None)
                gain = tuning.speedup(entry)
                versus = "the default plan failed" if entry.get("default_gbps") is None else (
                    f"{gain:.2f}x the default" if not math.isnan(gain) else "default not timed")
                print(f"  {key}: {forced}  ->  {entry.get('plan')} ({entry.get('gbps')} GB/s, {versus})")
        return 0

    from . import bench, tuner
    from .ops import SUPPORTED_DTYPES
    from .plan import Problem

    if args.dtype not in SUPPORTED_DTYPES:
        raise CliError(f"unsupported dtype {args.dtype!r}; supported: {', '.join(SUPPORTED_DTYPES)}", 2)
    from .api import _BOOL_AS

    kind = np.dtype(args.dtype).kind
    if kind in "iu" and args.op.startswith("norm"):
        # clreduce.norm converts integer input to float64 first, as numpy.linalg.norm does:
        # no call runs this kernel (PoCL cannot even build it)
        raise CliError(f"--op {args.op} --dtype {args.dtype}: clreduce.norm reduces integer input as float64; "
                       "tune --dtype float64 instead", 2)
    if kind == "b" and args.op in _BOOL_AS:
        raise CliError(f"--op {args.op} --dtype bool: calls run it as {_BOOL_AS[args.op]} on bool input; "
                       f"tune --op {_BOOL_AS[args.op]} instead", 2)
    if args.backend == "cuda":
        from .backends import get_backend

        reason = get_backend("cuda").unavailable_reason()
        if reason is not None:
            raise CliError(f"the CUDA backend cannot run here: {reason}")
        try:
            device = int(args.device or 0)
        except ValueError:
            raise CliError(f"--device with --backend cuda takes a CUDA device index, not {args.device!r}", 2) from None
        import cupy

        name = cupy.cuda.runtime.getDeviceProperties(device)["name"]
        where = f"CUDA / {name.decode() if isinstance(name, bytes) else name} (device {device})"
    else:
        cl, backend = _opencl()
        if not _indexed_devices(cl):
            raise CliError(getattr(backend, "INSTALL_HINT", _INSTALL_HINT_FALLBACK))
        try:
            device = _select_device(cl, backend, args.device) if args.device else backend.default_queue().device
        except backend.NoOpenCLDevice as exc:
            raise CliError(str(exc)) from None
        where = f"{device.platform.name.strip()} / {device.name.strip()}"
    if args.shapes:
        try:
            shapes = [parse_shape(s) for s in args.shapes.split(";") if s]
        except argparse.ArgumentTypeError as exc:
            raise CliError(f"--shapes: {exc}", status=2) from None
        if not shapes:  # --shapes ";" had tuned nothing and exited 0 (bench refused it)
            raise CliError("--shapes takes ROWS,K pairs separated by ';'", status=2)
    else:
        shapes = bench.SHAPES
    itemsize = np.dtype(args.dtype).itemsize
    problems = []
    for shape in shapes:
        if len(shape) != 2:
            raise CliError("--shapes takes ROWS,K pairs separated by ';'", status=2)
        rows, k = bench.scaled_shape(*shape, args.max_mb << 20, itemsize)
        problems.append(Problem(rows=rows, row_len=k, dtype=args.dtype, op=args.op))
    try:
        folder = tuning.check_writable()   # before the search, not after minutes of it
    except tuning.TuneDirError as exc:
        raise CliError(str(exc)) from None
    print(f"tuning {args.op} {args.dtype} on {where}, {len(problems)} shape(s) of at most {args.max_mb} MB; "
          f"winners go to {folder}")
    results = tuner.tune(device, problems, runs=args.runs, backend=args.backend)
    failed = [r for r in results if r["error"] is not None]
    if failed:
        shapes_text = ", ".join(f"{r['problem'].rows}x{r['problem'].row_len}" for r in failed)
        raise CliError(f"the device cannot run {args.op} {args.dtype} ({shapes_text}): {failed[0]['error']}")
    return 0


# ---- entry point ----------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    from . import __version__
    from .ops import OPS
    from .plan import ALL_STRATEGIES, SG_MODES

    parser = argparse.ArgumentParser(
        prog="clreduce",
        description="Fast reductions on (mobile) GPUs through OpenCL: inspect devices, plans, and run a demo.",
    )
    parser.add_argument("--version", action="version", version=f"clreduce {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")

    p = sub.add_parser("probe", help="list OpenCL devices, their capabilities and the default plan",
                       description="List every OpenCL device (P:D index as PYOPENCL_CTX counts), what it can "
                       "do, which one is the default and why, and the plan for mean over a "
                       f"{PROBE_SHAPE[0]}x{PROBE_SHAPE[1]} float32 array.")
    p.add_argument("--json", action="store_true",
                   help="print a JSON list of {index, caps, default, plan} (caps feeds `clreduce plan --caps`)")
    p.add_argument("--verify", action="store_true",
                   help="also run every sub-group mode of each device on a few problems against numpy; "
                        "modes that fail or answer wrong are marked bad (exit status 1)")
    p.set_defaults(func=cmd_probe)

    p = sub.add_parser("plan", help="show the launch plan for a device description (no device needed)",
                       description="Run the planner on a DeviceCaps JSON, a `probe --json` output or a device "
                       "profile list (tests/data/mobile_gpus.json). The reduction is over the last axis of "
                       "--shape. Needs no OpenCL device. CLREDUCE_* plan variables apply where no option "
                       "is given.")
    p.add_argument("--caps", required=True, metavar="FILE.json",
                   help="DeviceCaps JSON, probe --json output, or a list of device profiles")
    p.add_argument("--index", type=int, default=None, metavar="N",
                   help="entry of a JSON list (default: the probe's default device, else 0)")
    p.add_argument("--op", default="mean", choices=sorted(OPS), help="reduction (default mean)")
    p.add_argument("--shape", type=parse_shape, default=PROBE_SHAPE, metavar="D0,...,K",
                   help="array shape, reduced over the last axis (default 4096,768)")
    p.add_argument("--dtype", default="float32", help="numpy dtype name (default float32)")
    p.add_argument("--sg-mode", choices=[*SG_MODES, "shuffle"], default=None,
                   help="force the sub-group mode (shuffle = the device's KHR or qcom shuffle)")
    p.add_argument("--sg-size", type=int, default=None, help="force the sub-group width")
    p.add_argument("--strategy", choices=list(ALL_STRATEGIES), default=None, help="force the strategy")
    p.add_argument("--wg-size", type=int, default=None, help="force the work-group size")
    p.add_argument("--vec", type=int, default=None, choices=[1, 2, 4, 8, 16], help="force the load vector width")
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("demo", help="reduce a realistic array on the default device, check it, time it",
                       description="Reduce an activation-like array over its last axis on the default "
                       "OpenCL device (or --device), compare with numpy, and report GB/s from OpenCL "
                       "profiling events. Exit status 1 when the result is outside tolerance.")
    p.add_argument("--shape", type=parse_shape, default=PROBE_SHAPE, metavar="R,K",
                   help="array shape, reduced over the last axis (default 4096,768)")
    p.add_argument("--op", default="mean", choices=[o for o in DEMO_OPS if o in OPS])
    p.add_argument("--dtype", default="float32",
                   choices=["float32", "float16", "float64", "int32", "int64", "uint8", "int8"],
                   help="element type (default float32)")
    p.add_argument("--device", default=None, metavar="SELECTOR",
                   help="P:D index or a name substring such as 'intel' or 'pocl' (default: CLREDUCE_DEVICE, "
                   "else the first GPU, else the first CPU)")
    p.add_argument("--runs", type=int, default=20, help="timed runs (median reported; default 20)")
    p.add_argument("--warmup", type=int, default=3, help="untimed runs first (default 3)")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("bench", help="wall time of the public call on the DESIGN.md shapes, beside numpy, torch, "
                       "onnxruntime and the copy bandwidth, on each OpenCL device",
                       description="Fixed float32 shapes (rows scaled so each array is about --max-mb), "
                       "reduced over the last axis. Per shape: the wall time of the public call with numpy "
                       "in and out, with a device-resident pyopencl array, and the kernel's profiling-event "
                       "time, beside the peers (numpy; torch eager and torch.compile and onnxruntime with "
                       "every core, where installed) and the device's and host's copy bandwidth; GB/s = "
                       "bytes read / median time after a warm-up. Also axis=0 against axis=-1 and the "
                       "per-call cost on a tiny array. Exit status 1 if any clreduce result is wrong.")
    p.add_argument("--op", default="mean", choices=["sum", "mean", "max", "min"])
    p.add_argument("--max-mb", type=positive_int, default=256, help="array size cap in MB (default 256)")
    p.add_argument("--device", default=None, metavar="SELECTOR", help="one device (default: every device)")
    p.add_argument("--runs", type=int, default=7, help="timed runs per figure (median; default 7)")
    p.add_argument("--peers", default=",".join(("numpy", "torch", "torch.compile", "onnxruntime")),
                   metavar="LIST", help="comma-separated peers to time (default: all; '' for none)")
    p.add_argument("--shapes", default=None, metavar="R,K;R,K",
                   help="shapes instead of the DESIGN.md list (rows still scaled to --max-mb)")
    p.add_argument("--calls", type=non_negative_int, default=2000,
                   help="calls in the per-call loop (0 skips it; default 2000)")
    p.add_argument("--json", default=None, metavar="FILE", help="also write the full report as JSON")
    p.add_argument("--plot", default=None, metavar="FILE.png",
                   help="also plot GB/s against K per implementation with the copy line (needs matplotlib)")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("tune", help="search plan variants per shape on a device and keep the winners",
                       description="Coordinate-descent search over sub-group mode and width, strategy, "
                       "work-group size and vector width (on GPUs also lanes per row, loads in flight and "
                       "split count) for each shape (DESIGN.md list scaled to --max-mb, or --shapes), timed "
                       "from OpenCL or CUDA events after a warm-up and checked against numpy. "
                       "Winners go to the tune cache (CLREDUCE_TUNE_DIR, else the user cache directory), "
                       "keyed by device, driver, clreduce version and kernel sources; later calls of the "
                       "same shape bucket use them unless CLREDUCE_TUNE=0 or a plan is forced.")
    p.add_argument("--op", default="mean", choices=sorted(OPS), help="reduction (default mean)")
    p.add_argument("--dtype", default="float32", help="numpy dtype name (default float32)")
    p.add_argument("--shapes", default=None, metavar="R,K;R,K", help="shapes (default: the DESIGN.md list)")
    p.add_argument("--max-mb", type=positive_int, default=64, help="array size cap in MB (default 64)")
    p.add_argument("--device", default=None, metavar="SELECTOR",
                   help="device (default: the default device; with --backend cuda a CUDA device index)")
    p.add_argument("--backend", default="opencl", choices=("opencl", "cuda"),
                   help="tune OpenCL plans (default) or the CUDA backend's; both store winners in the same cache")
    p.add_argument("--runs", type=int, default=5, help="timed runs per candidate (median; default 5)")
    p.add_argument("--show", action="store_true", help="list the stored winners instead of tuning")
    p.add_argument("--clear", action="store_true", help="delete every stored winner")
    p.add_argument("--json", action="store_true", help="with --show: print JSON")
    p.set_defaults(func=cmd_tune)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    if getattr(args, "runs", 1) < 1:
        parser.error("--runs must be >= 1")
    if getattr(args, "warmup", 0) < 0:
        parser.error("--warmup must be >= 0")  # a negative one left no timed runs (StatisticsError)
    try:
        return int(args.func(args) or 0)
    except CliError as exc:
        print(f"clreduce {args.command}: error: {exc}", file=sys.stderr)
        return exc.status
    except TimeoutError as exc:  # a stale compiler-cache lock: the message says what to delete
        print(f"clreduce {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except MemoryError:  # demo --shape 100000000,100000000
        print(f"clreduce {args.command}: error: not enough memory for the arrays asked for", file=sys.stderr)
        return 1
    except ValueError as exc:
        if "Maximum allowed dimension exceeded" not in str(exc):  # numpy's, for demo --shape 1e20,1
            raise
        print(f"clreduce {args.command}: error: an array that large cannot exist ({exc})", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `clreduce probe --json | head`
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
