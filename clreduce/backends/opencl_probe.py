"""Learn a real OpenCL device's capabilities (``DeviceCaps``) with pyopencl.

Queries what the driver reports, then confirms sub-group support by compiling and
running a probe kernel: a version string or an advertised extension alone is never
trusted (DESIGN.md, "Device facts that matter"). Every probe step that fails degrades
to the conservative answer (no sub-groups) and leaves a remark in ``DeviceCaps.notes``;
probing never raises because of a driver quirk.

Results are cached per device for the life of the process.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import glob
import os
import threading
import warnings

from ..caps import _OPENCL_C_RE, DeviceCaps, _sorted_versions, normalize_implementation, normalize_vendor

__all__ = ["probe_device", "clear_probe_cache"]

# Not in pyopencl's device_info table, so queried through the ICD loader with ctypes.
CL_DEVICE_SUB_GROUP_SIZES_INTEL = 0x4108

# Sizes tried with intel_reqd_sub_group_size when the device cannot list them.
_INTEL_CANDIDATE_SIZES = (4, 8, 16, 32, 64, 128)

# Largest work-group the sub-group probe launches.
_PROBE_WG_LIMIT = 256

_SUBGROUP_PROBE_SOURCE = """
#if defined(cl_khr_subgroups)
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif
#if defined(cl_intel_subgroups)
#pragma OPENCL EXTENSION cl_intel_subgroups : enable
#endif

/* One record per work-item: sub-group id, lane, sub-group size, reduce result. */
__kernel ATTRIBUTE void clreduce_probe_subgroups(__global int *out)
{
    const uint lid = get_local_id(0);
    const int lane = (int)get_sub_group_local_id();
#if PROBE_REDUCE
    const int total = sub_group_reduce_add(lane + 1);
#else
    const int total = -1;
#endif
    out[4 * lid + 0] = (int)get_sub_group_id();
    out[4 * lid + 1] = lane;
    out[4 * lid + 2] = (int)get_sub_group_size();
    out[4 * lid + 3] = total;
}
"""

# NVIDIA's OpenCL: no sub-group extension, but warps of 32 consecutive work-items and a
# compiler that takes inline PTX. Each work-item sums (lane + 1) over its warp with a xor
# butterfly of shfl.sync.bfly.b32 (the instruction SG_MODE 4 uses) and records it; the host
# checks every warp got 528 and that lanes differ (a shuffle that returned its input would give
# (lane + 1) * 32).
_PTX_SHUFFLE_PROBE_SOURCE = """
inline uint clreduce_shfl_xor(uint v, uint m)
{
    uint r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(r) : "r"(v), "r"(m));
    return r;
}
__kernel void clreduce_probe_ptx_shuffle(__global uint *out)
{
    const uint lid = get_local_id(0);
    uint v = (lid & 31u) + 1u;
    for (uint m = 16u; m > 0u; m >>= 1) v += clreduce_shfl_xor(v, m);
    out[lid] = v;
}
"""

_TRIVIAL_SOURCE = """
__kernel void clreduce_probe_trivial(__global float *out, __global const float *in)
{
    const size_t i = get_global_id(0);
    out[i] = in[i] + 1.0f;
}
"""

_cache: dict[int, DeviceCaps] = {}
_cache_lock = threading.Lock()


def probe_device(device, *, refresh: bool = False) -> DeviceCaps:
    """Return the capabilities of a pyopencl device, probing it on first use.

    Parameters
    ----------
    device : pyopencl.Device
        The device to describe.
    refresh : bool, optional
        Probe again even when a cached result exists.

    Returns
    -------
    DeviceCaps
        ``subgroups`` is True only when a probe kernel using ``get_sub_group_size`` and
        ``sub_group_reduce_add`` built and gave the right answer (on Adreno compilers
        known to crash on ``sub_group_reduce_*`` the probe checks lanes and sizes only,
        and ``DeviceCaps.subgroup_reduce_builtins`` stays False). ``subgroup_sizes``
        lists widths that were verified by running a kernel at that width.

    Notes
    -----
    Results are cached per device handle (``device.int_ptr``) for the process.
    """
    key = int(device.int_ptr)
    with _cache_lock:
        if not refresh and key in _cache:
            return _cache[key]
    caps = _probe_uncached(device)
    with _cache_lock:
        _cache[key] = caps
    return caps


def clear_probe_cache() -> None:
    """Forget every cached probe result (tests; a driver update under a live process)."""
    with _cache_lock:
        _cache.clear()


# ---- the probe ---------------------------------------------------------------------


def _probe_uncached(device) -> DeviceCaps:
    import pyopencl as cl

    notes: list[str] = []
    platform_name = _info(lambda: device.platform.name, "", notes, "platform name")
    name = _info(lambda: device.name, "", notes, "name").strip()
    vendor_string = _info(lambda: device.vendor, "", notes, "vendor").strip()
    extensions = tuple(sorted(set(_info(lambda: device.extensions, "", notes, "extensions").split())))
    c_features = tuple(
        sorted({nv.name for nv in _info(lambda: device.opencl_c_features, [], notes, None)})
    )
    c_versions = _opencl_c_versions(device, notes)

    max_wg = int(_info(lambda: device.max_work_group_size, 256, notes, "max_work_group_size"))
    item_sizes = _info(lambda: device.max_work_item_sizes, [], notes, "max_work_item_sizes")
    if item_sizes and int(item_sizes[0]) < max_wg:
        notes.append(f"max_work_group_size {max_wg} capped at max work item size {item_sizes[0]}")
        max_wg = int(item_sizes[0])

    local_type = _info(lambda: device.local_mem_type, cl.device_local_mem_type.LOCAL, notes, None)
    double_config = _info(lambda: device.double_fp_config, 0, notes, None)
    warp_size = None
    if "cl_nv_device_attribute_query" in extensions:
        warp_size = _info(lambda: int(device.warp_size_nv), None, notes, "warp size")

    caps = DeviceCaps(
        backend="opencl",
        vendor=normalize_vendor(vendor_string, name),
        implementation=normalize_implementation(platform_name, vendor_string, name),
        name=name,
        vendor_string=vendor_string,
        platform_name=platform_name.strip(),
        device_type=_device_type(_info(lambda: device.type, 0, notes, "type")),
        device_version=_info(lambda: device.version, "", notes, "version").strip(),
        driver_version=_info(lambda: device.driver_version, "", notes, "driver version").strip(),
        opencl_c_versions=c_versions,
        extensions=extensions,
        c_features=c_features,
        subgroups=False,
        subgroup_sizes=(),
        max_work_group_size=max_wg,
        local_mem_size=int(_info(lambda: device.local_mem_size, 32768, notes, "local_mem_size")),
        local_mem_is_global=local_type == cl.device_local_mem_type.GLOBAL,
        compute_units=int(_info(lambda: device.max_compute_units, 1, notes, "compute units")),
        preferred_wg_multiple=1,
        max_mem_alloc_size=int(_info(lambda: device.max_mem_alloc_size, 128 << 20, notes, "max alloc")),
        global_mem_size=int(_info(lambda: device.global_mem_size, 512 << 20, notes, "global mem")),
        fp16="cl_khr_fp16" in extensions,
        fp64="cl_khr_fp64" in extensions or "__opencl_c_fp64" in c_features or bool(double_config),
        warp_size=warp_size,
    )

    ctx = None
    try:
        ctx = cl.Context([device])
    except Exception as exc:  # noqa: BLE001 - any driver failure means "cannot probe"
        notes.append(f"no context for probe kernels: {_short(exc)}")

    preferred = _preferred_multiple(ctx, device, notes) if ctx is not None else None
    subgroups, sizes = False, ()
    if ctx is not None and _advertises_subgroups(caps):
        try:
            subgroups, sizes = _probe_subgroups(ctx, device, caps, notes)
        except Exception as exc:  # noqa: BLE001 - degrade, never crash
            notes.append(f"sub-group probe failed: {_short(exc)}")
            subgroups, sizes = False, ()
    elif ctx is not None:
        notes.append("no sub-group extension or feature advertised: sub-groups off")

    ptx = False
    if ctx is not None and not subgroups and caps.implementation == "nvidia" and warp_size == 32:
        ptx = _probe_ptx_shuffle(ctx, device, notes)
        if ptx:
            sizes = (32,)  # the warp: what SG_MODE 4 reduces over
    if not preferred:
        preferred = warp_size or (sizes[0] if sizes else 1)
    return _replace(
        caps,
        subgroups=subgroups,
        subgroup_sizes=sizes,
        ptx_shuffle=ptx,
        preferred_wg_multiple=int(preferred),
        notes=tuple(notes),
    )


def _probe_ptx_shuffle(ctx, device, notes: list[str]) -> bool:
    """Build and run the inline-PTX warp shuffle probe (NVIDIA OpenCL); True when exact."""
    import numpy as np
    import pyopencl as cl

    try:
        kernel = _build(cl, ctx, _PTX_SHUFFLE_PROBE_SOURCE, "").clreduce_probe_ptx_shuffle
        wg = min(256, int(device.max_work_group_size),
                 int(kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device)))
        wg -= wg % 32
        if wg < 32:
            notes.append(f"PTX shuffle probe: work-group limit {wg} below a warp")
            return False
        queue = cl.CommandQueue(ctx, device)
        out = np.zeros(wg, dtype=np.uint32)
        buf = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, out.nbytes)
        kernel(queue, (wg,), (wg,), buf)
        cl.enqueue_copy(queue, out, buf)
        queue.finish()
    except Exception as exc:  # noqa: BLE001 - a driver without inline PTX: local memory then
        notes.append(f"PTX shuffle probe failed: {_short(exc)}")
        return False
    if not np.all(out == 32 * 33 // 2):
        notes.append(f"PTX shuffle probe gave wrong sums {sorted(set(out.tolist()))[:4]}: warp shuffles off")
        return False
    notes.append("PTX shuffle probe passed (shfl.sync.bfly.b32 over warps of 32): SG_MODE 4 usable")
    return True


def _advertises_subgroups(caps: DeviceCaps) -> bool:
    return any(caps.has(x) for x in ("cl_khr_subgroups", "__opencl_c_subgroups", "cl_intel_subgroups"))


def _probe_subgroups(ctx, device, caps: DeviceCaps, notes: list[str]) -> tuple[bool, tuple[int, ...]]:
    """Build and run the sub-group probe; return (usable, verified sizes)."""
    import pyopencl as cl

    queue = cl.CommandQueue(ctx, device)
    # Old Adreno compilers crash (take the process down) building sub_group_reduce_*:
    # there, check only that lanes and sizes make sense.
    with_reduce = caps.implementation != "qualcomm" or _replace(caps, subgroups=True).subgroup_reduce_builtins
    if not with_reduce:
        notes.append("Adreno compiler without working sub_group_reduce_*: probe checks lanes only")

    options = _build_option_sets(caps)
    default = _run_probe(ctx, queue, device, options, "", with_reduce, notes)
    if default is None:
        return False, ()
    std_options, default_size = default
    sizes: list[int] = []

    if caps.has("cl_intel_required_subgroup_size"):
        listed = _intel_subgroup_sizes(device)
        if listed:
            candidates = listed
        else:
            notes.append("CL_DEVICE_SUB_GROUP_SIZES_INTEL not readable: trying common sizes")
            candidates = _INTEL_CANDIDATE_SIZES
        for n in candidates:
            attr = f"__attribute__((intel_reqd_sub_group_size({n})))"
            got = _run_probe(ctx, queue, device, [std_options], attr, with_reduce, notes, want=n)
            if got is not None:
                sizes.append(n)
    elif caps.has("cl_qcom_reqd_sub_group_size"):
        for mode in ("half", "full"):
            attr = f'__attribute__((qcom_reqd_sub_group_size("{mode}")))'
            got = _run_probe(ctx, queue, device, [std_options], attr, with_reduce, notes)
            if got is not None and got[1] not in sizes:
                sizes.append(got[1])

    if not sizes:
        sizes = [default_size]
    notes.append(f"sub-group probe passed (default width {default_size}, options {std_options!r})")
    return True, tuple(sorted(set(sizes)))


def _run_probe(ctx, queue, device, option_sets, attribute, with_reduce, notes, want=None):
    """Build the probe with the first option set that compiles, run it, check it.

    Returns ``(options used, sub-group width)`` or None when it fails anywhere.
    """
    import numpy as np
    import pyopencl as cl

    source = _SUBGROUP_PROBE_SOURCE.replace("ATTRIBUTE", attribute)
    label = attribute or "default width"
    program, used, errors = None, None, []
    for opts in option_sets:
        try:
            program = _build(cl, ctx, source, f"{opts} -DPROBE_REDUCE={int(with_reduce)}".strip())
            used = opts
            break
        except Exception as exc:  # noqa: BLE001
            errors.append(f"[{opts or 'no -cl-std'}] {_short(exc)}")
    if program is None:
        notes.append(f"sub-group probe ({label}) did not build: {'; '.join(errors)}")
        return None
    try:
        kernel = program.clreduce_probe_subgroups
        limit = min(
            _PROBE_WG_LIMIT,
            int(device.max_work_group_size),
            int(kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device)),
        )
        step = want or 1
        wg = (limit // step) * step
        if wg < step:
            notes.append(f"sub-group probe ({label}): work-group limit {limit} below width {want}")
            return None
        reported = _max_subgroup_size(cl, kernel, device, wg)
        if want is not None and reported is not None and reported != want:
            notes.append(f"sub-group probe ({label}): driver reports width {reported}")
            return None
        out = np.full(4 * wg, -7, dtype=np.int32)
        buf = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, out.nbytes)
        kernel(queue, (wg,), (wg,), buf)
        cl.enqueue_copy(queue, out, buf)
        queue.finish()
    except Exception as exc:  # noqa: BLE001
        notes.append(f"sub-group probe ({label}) failed to run: {_short(exc)}")
        return None
    width = _check_probe_output(out.reshape(wg, 4), with_reduce)
    if width is None or (want is not None and width != want):
        notes.append(f"sub-group probe ({label}) gave wrong results (width {width})")
        return None
    return used, width


def _check_probe_output(records, with_reduce: bool) -> int | None:
    """Validate per-work-item records; return the widest sub-group seen, else None."""
    groups: dict[int, list] = {}
    for sg_id, lane, size, total in records.tolist():
        groups.setdefault(sg_id, []).append((lane, size, total))
    widest = 0
    for members in groups.values():
        n = len(members)
        if sorted(lane for lane, _, _ in members) != list(range(n)):
            return None
        if any(size != n for _, size, _ in members):
            return None
        if with_reduce and any(total != n * (n + 1) // 2 for _, _, total in members):
            return None
        widest = max(widest, n)
    return widest or None


def _max_subgroup_size(cl, kernel, device, wg: int) -> int | None:
    """CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE, or None where the driver lacks the query."""
    try:
        value = kernel.get_sub_group_info(
            device, cl.kernel_sub_group_info.MAX_SUB_GROUP_SIZE_FOR_NDRANGE, (wg,)
        )
        return int(value) or None
    except Exception:  # noqa: BLE001 - OpenCL 2.0 drivers may lack clGetKernelSubGroupInfo
        return None


def _build_option_sets(caps: DeviceCaps) -> list[str]:
    """``-cl-std`` choices, best first: sub-group built-ins need OpenCL C 2.0+ on most
    drivers, and some Mali report 1.2 in CL_DEVICE_OPENCL_C_VERSION but accept 3.0."""
    sets = []
    if caps.cl_std:
        sets.append(f"-cl-std={caps.cl_std}")
    for version in ("3.0", "2.0"):
        if version in caps.opencl_c_versions and f"-cl-std=CL{version}" not in sets:
            sets.append(f"-cl-std=CL{version}")
    sets.append("")
    return sets


def _build(cl, ctx, source: str, options: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pyopencl's CompilerWarning on any build log
        return cl.Program(ctx, source).build(options=options.split() if options else [])


def _preferred_multiple(ctx, device, notes: list[str]) -> int | None:
    """CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE of a trivial kernel."""
    import pyopencl as cl

    try:
        kernel = _build(cl, ctx, _TRIVIAL_SOURCE, "").clreduce_probe_trivial
        value = kernel.get_work_group_info(
            cl.kernel_work_group_info.PREFERRED_WORK_GROUP_SIZE_MULTIPLE, device
        )
        return int(value) or None
    except Exception as exc:  # noqa: BLE001
        notes.append(f"preferred work-group multiple not queried: {_short(exc)}")
        return None


# ---- device queries ----------------------------------------------------------------


def _opencl_c_versions(device, notes: list[str]) -> tuple[str, ...]:
    """CL_DEVICE_OPENCL_C_ALL_VERSIONS (when present) plus CL_DEVICE_OPENCL_C_VERSION."""
    versions = set()
    for nv in _info(lambda: device.opencl_c_all_versions, [], notes, None):
        v = int(nv.version)
        versions.add(f"{v >> 22}.{(v >> 12) & 0x3FF}")
    m = _OPENCL_C_RE.search(_info(lambda: device.opencl_c_version, "", notes, "OpenCL C version"))
    if m:
        versions.add(m.group(1))
    return _sorted_versions(versions) if versions else ("1.2",)


def _intel_subgroup_sizes(device) -> tuple[int, ...]:
    """CL_DEVICE_SUB_GROUP_SIZES_INTEL, or () when it cannot be read."""
    sizes = getattr(device, "sub_group_sizes_intel", None)  # newer pyopencl may expose it
    if sizes:
        return tuple(sorted(int(s) for s in sizes))
    try:
        return tuple(sorted(s for s in _query_size_t_array(device, CL_DEVICE_SUB_GROUP_SIZES_INTEL) if s > 0))
    except Exception:  # noqa: BLE001
        return ()


def _query_size_t_array(device, param: int) -> tuple[int, ...]:
    """clGetDeviceInfo for a ``size_t[]`` parameter pyopencl does not know."""
    lib = _opencl_library()
    fn = lib.clGetDeviceInfo
    size_p = ctypes.POINTER(ctypes.c_size_t)
    fn.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_size_t, ctypes.c_void_p, size_p]
    fn.restype = ctypes.c_int32
    handle = ctypes.c_void_p(int(device.int_ptr))
    nbytes = ctypes.c_size_t(0)
    if fn(handle, param, 0, None, ctypes.byref(nbytes)) != 0 or nbytes.value == 0:
        return ()
    count = nbytes.value // ctypes.sizeof(ctypes.c_size_t)
    values = (ctypes.c_size_t * count)()
    if fn(handle, param, nbytes.value, values, None) != 0:
        return ()
    return tuple(int(v) for v in values)


def _opencl_library():
    """The OpenCL ICD loader pyopencl uses (its bundled copy first), else the system one."""
    import pyopencl

    bundled = sorted(glob.glob(os.path.join(os.path.dirname(pyopencl.__file__), ".libs", "libOpenCL*.so*")))
    path = bundled[0] if bundled else ctypes.util.find_library("OpenCL")
    if not path:
        raise OSError("no OpenCL ICD loader found")
    return ctypes.CDLL(path)


# ---- small helpers -----------------------------------------------------------------


def _info(getter, default, notes: list[str], what: str | None):
    """Read one device property; a driver error gives ``default`` (noted when ``what``)."""
    try:
        value = getter()
    except Exception as exc:  # noqa: BLE001
        if what:
            notes.append(f"{what} not readable: {_short(exc)}")
        return default
    return default if value is None else value


def _device_type(bits: int) -> str:
    import pyopencl as cl

    for flag, label in (
        (cl.device_type.GPU, "gpu"),
        (cl.device_type.CPU, "cpu"),
        (cl.device_type.ACCELERATOR, "accelerator"),
    ):
        if int(bits) & int(flag):
            return label
    return "other"


def _replace(caps: DeviceCaps, **changes) -> DeviceCaps:
    return dataclasses.replace(caps, **changes)


def _short(exc: BaseException, limit: int = 240) -> str:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
