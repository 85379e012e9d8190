"""CUDA device capabilities as ``DeviceCaps``, so the shared planner plans CUDA launches.

The mapping (pure, in ``caps_from_properties``) is chosen so that the unchanged planner
makes sensible CUDA plans:

* the sub-group is the warp: ``subgroups=True``, ``subgroup_sizes=(32,)``, no way to
  request another width (``subgroup_size_control == "none"``);
* ``extensions=("cl_khr_subgroup_shuffle", ...)``: the planner then picks "builtin" for
  one-warp and one-block-per-row teams (``__reduce_*_sync`` for 32-bit integers,
  else the ``__shfl_xor_sync`` butterfly) and "shuffle_khr" (``__shfl_xor_sync``) for
  several rows per warp; ``cl_dialect_cuda.h`` maps SG_MODE 1/2 to those;
* ``compute_units`` = SM count, ``max_work_group_size`` = max threads per block,
  ``local_mem_size`` = static shared memory per block, ``warp_size`` = 32;
* the facts the planner has no field for (threads, registers and blocks per SM, L2 size,
  compute capability, peak DRAM bandwidth) go to ``notes`` as ``key=value`` and to
  ``device_extras``.

``probe_device`` reads the properties through CuPy (imported there, not at module import)
and caches the result per device id.
"""

from __future__ import annotations

import functools
import re

from ...caps import DeviceCaps

# What "extensions" a CUDA device lists: the KHR shuffle name makes the planner choose the
# butterfly for narrow teams; the cuda_* names are informative (nothing reads them).
CUDA_EXTENSIONS = ("cl_khr_fp16", "cl_khr_fp64", "cl_khr_subgroup_shuffle", "cl_khr_subgroups",
                   "cuda_reduce_sync", "cuda_shfl_sync")

_EXTRA_RE = re.compile(r"^cuda\.(\w+)=(\d+)$")


def caps_from_properties(props: dict, *, driver_version: int | None = None,
                         runtime_version: int | None = None) -> DeviceCaps:
    """DeviceCaps of one CUDA device from ``cudaGetDeviceProperties`` fields.

    Parameters
    ----------
    props : dict
        At least ``name``, ``major``, ``minor``, ``multiProcessorCount``,
        ``maxThreadsPerBlock``, ``sharedMemPerBlock``, ``totalGlobalMem``; optionally
        ``warpSize``, ``maxThreadsPerMultiProcessor``, ``regsPerMultiprocessor``,
        ``maxBlocksPerMultiProcessor``, ``sharedMemPerMultiprocessor``, ``l2CacheSize``
        (CuPy's ``runtime.getDeviceProperties`` gives all of them), ``memoryClockRate`` (kHz)
        and ``memoryBusWidth`` (bits): CUDA 13 dropped the clock from the properties, so
        ``probe_device`` reads both as device attributes.
    driver_version, runtime_version : int, optional
        ``cudaDriverGetVersion`` / ``cudaRuntimeGetVersion`` (e.g. 13000).
    """
    name = props.get("name", "")
    if isinstance(name, bytes):
        name = name.decode(errors="replace")
    name = name.rstrip("\x00")
    warp = int(props.get("warpSize", 32) or 32)
    cc = (int(props["major"]), int(props["minor"]))
    extras = {
        "cc": cc[0] * 10 + cc[1],
        "threads_per_sm": int(props.get("maxThreadsPerMultiProcessor", 2048) or 2048),
        "regs_per_sm": int(props.get("regsPerMultiprocessor", 65536) or 65536),
        "blocks_per_sm": int(props.get("maxBlocksPerMultiProcessor", 32) or 32),
        "smem_per_sm": int(props.get("sharedMemPerMultiprocessor", 0) or 0),
        "l2_bytes": int(props.get("l2CacheSize", 0) or 0),
        "dram_gbps": dram_gbps(props),
    }
    notes = [f"cuda.{key}={value}" for key, value in extras.items()]
    notes.append("sub-group = warp (32): SG_MODE builtin -> __reduce_*_sync (32-bit ints, sm_80+) "
                 "or __shfl_xor_sync butterfly; shuffle_khr -> __shfl_xor_sync")
    if warp != 32:
        notes.append(f"warpSize {warp} reported; the kernels assume 32")
    total = int(props.get("totalGlobalMem", 0) or 0)
    return DeviceCaps(
        backend="cuda",
        vendor="nvidia",
        name=name,
        vendor_string="NVIDIA Corporation",
        platform_name="CUDA" + (f" {_version(runtime_version)}" if runtime_version else ""),
        device_type="gpu",
        device_version=f"sm_{cc[0]}{cc[1]}",
        driver_version=_version(driver_version) if driver_version else "",
        opencl_c_versions=(),
        extensions=CUDA_EXTENSIONS,
        c_features=(),
        subgroups=True,
        subgroup_sizes=(warp,),
        max_work_group_size=int(props.get("maxThreadsPerBlock", 1024)),
        local_mem_size=int(props.get("sharedMemPerBlock", 48 * 1024)),
        local_mem_is_global=False,
        compute_units=int(props["multiProcessorCount"]),
        preferred_wg_multiple=warp,
        max_mem_alloc_size=total,
        global_mem_size=total,
        fp16=cc >= (5, 3),
        fp64=True,
        warp_size=warp,
        notes=tuple(notes),
    )


def dram_gbps(props: dict) -> int:
    """Peak DRAM bandwidth in GB/s (double data rate: 2 x clock x bus width), 0 if unknown."""
    clock_khz = int(props.get("memoryClockRate", 0) or 0)
    bus_bits = int(props.get("memoryBusWidth", 0) or 0)
    return 2 * clock_khz * bus_bits // 8 // 1_000_000


def device_extras(caps: DeviceCaps) -> dict[str, int]:
    """The per-SM facts ``caps_from_properties`` kept in ``notes`` (``cc``, ``threads_per_sm``,
    ``regs_per_sm``, ``blocks_per_sm``, ``smem_per_sm``, ``l2_bytes``, ``dram_gbps``); defaults
    for an sm_80-like part where a note is missing (caps read back from JSON keep their
    notes; ``dram_gbps`` 0: unknown)."""
    out = {"cc": 80, "threads_per_sm": 2048, "regs_per_sm": 65536, "blocks_per_sm": 32,
           "smem_per_sm": 0, "l2_bytes": 0, "dram_gbps": 0}
    for note in caps.notes:
        m = _EXTRA_RE.match(note)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def _version(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"


# Properties of parts the PTX tool and the tests plan for without a GPU (public datasheet values).
H100_SXM_PROPERTIES = {
    "name": "NVIDIA H100 80GB HBM3", "major": 9, "minor": 0, "multiProcessorCount": 132,
    "maxThreadsPerBlock": 1024, "sharedMemPerBlock": 49152, "totalGlobalMem": 85_520_809_984,
    "warpSize": 32, "maxThreadsPerMultiProcessor": 2048, "regsPerMultiprocessor": 65536,
    "maxBlocksPerMultiProcessor": 32, "sharedMemPerMultiprocessor": 233472, "l2CacheSize": 52_428_800,
    "memoryClockRate": 2_619_000, "memoryBusWidth": 5120,
}
# The same SMs with HBM3e: 4.8 TB/s against the H100's 3.35 (the values its driver reports)
H200_PROPERTIES = dict(H100_SXM_PROPERTIES, name="NVIDIA H200", totalGlobalMem=150_109_880_320,
                       l2CacheSize=62_914_560, memoryClockRate=3_201_000, memoryBusWidth=6016)
A100_PROPERTIES = {
    "name": "NVIDIA A100-SXM4-40GB", "major": 8, "minor": 0, "multiProcessorCount": 108,
    "maxThreadsPerBlock": 1024, "sharedMemPerBlock": 49152, "totalGlobalMem": 42_298_834_944,
    "warpSize": 32, "maxThreadsPerMultiProcessor": 2048, "regsPerMultiprocessor": 65536,
    "maxBlocksPerMultiProcessor": 32, "sharedMemPerMultiprocessor": 167936, "l2CacheSize": 41_943_040,
}
T4_PROPERTIES = {
    "name": "Tesla T4", "major": 7, "minor": 5, "multiProcessorCount": 40,
    "maxThreadsPerBlock": 1024, "sharedMemPerBlock": 49152, "totalGlobalMem": 15_843_721_216,
    "warpSize": 32, "maxThreadsPerMultiProcessor": 1024, "regsPerMultiprocessor": 65536,
    "maxBlocksPerMultiProcessor": 16, "sharedMemPerMultiprocessor": 65536, "l2CacheSize": 4_194_304,
}


@functools.lru_cache(maxsize=None)
def probe_device(device_id: int) -> DeviceCaps:
    """Caps of CUDA device ``device_id`` (cached for the process). Needs CuPy and a driver."""
    import cupy

    runtime = cupy.cuda.runtime
    props = dict(runtime.getDeviceProperties(device_id))
    # cudaDevAttrMemoryClockRate (36, kHz) and cudaDevAttrGlobalMemoryBusWidth (37, bits)
    for key, attr in (("memoryClockRate", 36), ("memoryBusWidth", 37)):
        if not props.get(key):
            try:
                props[key] = runtime.deviceGetAttribute(attr, device_id)
            except Exception:  # pragma: no cover - unknown bandwidth keeps the default plans
                props[key] = 0
    try:
        driver = runtime.driverGetVersion()
    except Exception:  # pragma: no cover - informative only
        driver = None
    try:
        rt = runtime.runtimeGetVersion()
    except Exception:  # pragma: no cover
        rt = None
    return caps_from_properties(props, driver_version=driver, runtime_version=rt)
