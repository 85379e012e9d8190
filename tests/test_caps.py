"""DeviceCaps: published device profiles, JSON round trip, and probing real OpenCL devices.

The probe tests run on every pyopencl device visible. To see the Intel CPU runtime as well
as PoCL, point OCL_ICD_VENDORS at a folder holding ``intel-cpu.icd`` (DESIGN.md).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from clreduce.caps import (
    ADRENO_FIRST_GOOD_REDUCE_COMPILER,
    IMPLEMENTATIONS,
    DeviceCaps,
    load_profiles,
    normalize_implementation,
    normalize_vendor,
    parse_adreno_compiler,
)

PROFILES_PATH = Path(__file__).parent / "data" / "mobile_gpus.json"
RAW_PROFILES = json.loads(PROFILES_PATH.read_text(encoding="utf-8"))
VENDORS = {"arm", "qualcomm", "nvidia", "intel", "amd", "apple", "other"}  # hardware makers


def profile(prefix: str) -> DeviceCaps:
    """The caps of the one profile whose ``name`` starts with ``prefix``."""
    hits = [e for e in RAW_PROFILES if e["name"].startswith(prefix)]
    assert len(hits) == 1, f"{prefix!r} matches {len(hits)} profiles"
    return DeviceCaps.from_profile(hits[0])


# ---- profiles ----------------------------------------------------------------------


def test_load_profiles_reads_all_sixteen():
    caps = load_profiles(PROFILES_PATH)
    assert len(caps) == len(RAW_PROFILES) == 16
    assert all(isinstance(c, DeviceCaps) for c in caps)
    assert {c.vendor for c in caps} == {"arm", "qualcomm"}
    # Vendor-driver dumps: Mali profiles run Arm's driver, Adreno profiles Qualcomm's.
    assert all(c.implementation == c.vendor for c in caps)


def test_load_profiles_rejects_non_list(tmp_path):
    path = tmp_path / "one.json"
    path.write_text(json.dumps(RAW_PROFILES[0]))
    with pytest.raises(ValueError):
        load_profiles(path)


@pytest.mark.parametrize("entry", RAW_PROFILES, ids=[e["name"][:40] for e in RAW_PROFILES])
def test_profile_caps_are_sane_and_round_trip(entry):
    caps = DeviceCaps.from_profile(entry)
    back = DeviceCaps.from_json(caps.to_json())
    assert back == caps
    assert back.notes == caps.notes  # notes are not compared by ==
    assert caps.backend == "opencl" and caps.vendor in VENDORS and caps.implementation in IMPLEMENTATIONS
    assert caps.name and caps.notes[0].startswith("profile: ")
    assert caps.max_work_group_size >= 1 and caps.local_mem_size >= 1 and caps.compute_units >= 1
    assert caps.preferred_wg_multiple >= 1
    assert 0 < caps.max_mem_alloc_size <= caps.global_mem_size
    assert caps.opencl_c_versions and "1.2" in caps.opencl_c_versions
    # Never an extension the profile does not list.
    assert set(caps.extensions) <= set(entry.get("extensions") or ())
    # Sub-groups only from the extension/feature, and sizes only with sub-groups.
    assert caps.subgroups == ("cl_khr_subgroups" in (entry.get("extensions") or ()))
    if caps.subgroups:
        assert caps.subgroup_sizes == tuple(entry["subgroup_sizes"])
    else:
        assert caps.subgroup_sizes == ()
        assert not caps.subgroup_reduce_builtins and not caps.khr_shuffle and not caps.qcom_shuffle
        assert caps.subgroup_size_control == "none"


def test_mali_g71_opencl_2_without_khr_subgroups_has_no_subgroups():
    caps = profile("Mali-G71 MP8")
    assert caps.cl_std == "CL2.0"  # OpenCL C 2.0 ...
    assert caps.subgroups is False  # ... and still no sub-groups
    assert caps.subgroup_sizes == ()
    assert caps.max_work_group_size == 256  # 384 reported, work items capped at 256
    assert caps.local_mem_is_global is True
    assert caps.preferred_wg_multiple == 4
    assert caps.fp16 is True and caps.fp64 is False


def test_adreno_650_has_qcom_shuffle_not_khr_shuffle():
    caps = profile("Adreno 650")
    assert caps.vendor == "qualcomm"
    assert caps.name == "QUALCOMM Adreno(TM)"
    assert "650" in caps.device_version
    assert caps.subgroups and caps.subgroup_sizes == (64, 128)
    assert caps.qcom_shuffle is True
    assert caps.khr_shuffle is False
    assert not caps.has("cl_khr_subgroup_shuffle")
    assert caps.subgroup_size_control == "qcom"
    assert caps.cl_std == "CL2.0"
    assert caps.local_mem_is_global is False
    assert caps.preferred_wg_multiple == 128
    # No "driver" string in this profile: the compiler is unknown, treated as old.
    assert caps.adreno_compiler is None
    assert caps.subgroup_reduce_builtins is False


def test_adreno_compiler_e031_37_has_no_reduce_builtins():
    caps = profile("Adreno 630")
    assert caps.driver_version.endswith("Compiler E031.37.03.00")
    assert caps.adreno_compiler == (31, 37, 3, 0)
    assert caps.subgroups is False  # extensions unknown
    # Even with sub-groups the E031.37 compiler must not get sub_group_reduce_*.
    assert dataclasses.replace(caps, subgroups=True).subgroup_reduce_builtins is False
    a650 = dataclasses.replace(profile("Adreno 650"), driver_version="OpenCL 2.0 Compiler E031.37.12.01")
    assert a650.subgroups and a650.adreno_compiler == (31, 37, 12, 1)
    assert a650.subgroup_reduce_builtins is False


def test_adreno_compiler_e031_41_has_reduce_builtins():
    phone = profile("Adreno 740 (Galaxy S23")
    assert phone.adreno_compiler == (31, 41, 3, 62)
    assert phone.subgroups is False  # extension list not published
    assert dataclasses.replace(phone, subgroups=True).subgroup_reduce_builtins is True
    # The same compiler in a profile that lists cl_khr_subgroups.
    entry = {
        "name": "synthetic Adreno",
        "vendor": "Qualcomm",
        "opencl_version": "OpenCL 3.0 Adreno(TM) 740",
        "extensions": ["cl_khr_subgroups", "cl_qcom_subgroup_shuffle"],
        "subgroup_sizes": [64, 128],
        "driver": "OpenCL 3.0 QUALCOMM build: 0676.73 Compiler E031.41.03.62",
    }
    caps = DeviceCaps.from_profile(entry)
    assert caps.subgroups and caps.subgroup_reduce_builtins is True
    assert caps.qcom_shuffle and not caps.khr_shuffle


def test_adreno_740_devkit_profile_enables_reduce_builtins():
    caps = profile("Adreno 740 (QCS8550")
    assert caps.adreno_compiler == (31, 42, 20, 0)
    assert caps.subgroups and caps.subgroup_reduce_builtins
    assert caps.subgroup_size_control == "qcom"
    assert caps.opencl_c_versions == ("1.2",)  # OpenCL C version not published


@pytest.mark.parametrize(
    "compiler, expected",
    [("E031.38.10.99", False), ("E031.38.11", True), ("E031.38.11.14", True), ("E031.45.02.06", True)],
)
def test_adreno_reduce_builtins_threshold(compiler, expected):
    caps = dataclasses.replace(profile("Adreno 650"), driver_version=f"OpenCL 2.0 Compiler {compiler}")
    assert caps.subgroup_reduce_builtins is expected
    assert ADRENO_FIRST_GOOD_REDUCE_COMPILER == (31, 38, 11)


@pytest.mark.parametrize(
    "prefix", ["Mali-G57 MC2", "Mali-G57 MC5", "Mali-G610 MC6", "Mali-G78", "Mali-G720"]
)
def test_mali_with_unknown_extensions_has_no_subgroups(prefix):
    caps = profile(prefix)
    assert caps.vendor == "arm"
    assert caps.extensions == ()
    assert caps.subgroups is False and caps.subgroup_sizes == ()
    assert caps.subgroup_size_control == "none"
    assert caps.local_mem_is_global is True
    assert caps.preferred_wg_multiple == 16  # hardware width, still useful for sizing groups


def test_mali_g710_partial_list_without_khr_subgroups_has_no_subgroups():
    caps = profile("Mali-G710")
    assert caps.has("cl_khr_subgroup_shuffle")
    assert caps.subgroups is False and caps.khr_shuffle is False
    assert caps.global_mem_size == 1862 * 1024 * 1024  # printed only in MB


def test_mali_g52_profile():
    caps = profile("Mali-G52")
    assert caps.subgroups and caps.subgroup_sizes == (8,)
    assert caps.khr_shuffle and caps.subgroup_reduce_builtins
    assert caps.subgroup_size_control == "none"
    assert caps.cl_std == "CL3.0"
    assert caps.max_work_group_size == 384
    assert caps.local_mem_is_global is True


def test_profile_with_missing_keys_gets_conservative_defaults():
    caps = DeviceCaps.from_profile({"name": "Mali-G999 (made up)", "vendor": "ARM"})
    assert caps.vendor == "arm" and caps.name == "Mali-G999 (made up)"
    assert caps.extensions == () and caps.c_features == ()
    assert caps.subgroups is False and caps.subgroup_sizes == ()
    assert caps.opencl_c_versions == ("1.2",) and caps.cl_std is None
    assert caps.max_work_group_size == 256
    assert caps.local_mem_size == 32768
    assert caps.compute_units == 1
    assert caps.preferred_wg_multiple == 1
    assert caps.fp16 is False and caps.fp64 is False
    assert caps.device_version == "" and caps.driver_version == ""
    assert DeviceCaps.from_json(caps.to_json()) == caps
    empty = DeviceCaps.from_profile({})
    assert empty.vendor == "other" and empty.subgroups is False and empty.local_mem_is_global is False


def test_profile_with_opencl_c_3_feature_and_unseen_keys():
    entry = {
        "name": "Mali reporting OpenCL C 1.2 with a 3.0 compiler",
        "vendor": "ARM",
        "opencl_version": "OpenCL 3.0 v1.r40p0",
        "opencl_c_version": "OpenCL C 1.2 v1.r40p0",
        "opencl_c_all_versions": ["OpenCL C 1.2", "OpenCL C 3.0"],
        "c_features": ["__opencl_c_subgroups", "__opencl_c_fp64"],
        "extensions": ["cl_khr_fp16"],
        "subgroup_sizes": [16],
        "some_future_field": {"x": 1},
    }
    caps = DeviceCaps.from_profile(entry)
    assert caps.subgroups and caps.subgroup_sizes == (16,)
    assert caps.cl_std == "CL3.0"
    assert caps.fp16 and caps.fp64


def test_profile_opencl_2_device_without_c_version_gets_opencl_c_2_0():
    caps = DeviceCaps.from_profile({"vendor": "ARM", "opencl_version": "OpenCL 2.1 v1.r26p0"})
    assert caps.opencl_c_versions == ("1.2", "2.0") and caps.subgroups is False


@pytest.mark.parametrize(
    "driver, expected",
    [
        (
            "OpenCL 2.0 QUALCOMM build commit #fdd61e0 (LA.UM.8.3.R1...) Compiler E031.37.03.00",
            (31, 37, 3, 0),
        ),
        ("OpenCL 3.0 QUALCOMM build: 0676.73 Compiler E031.41.03.62", (31, 41, 3, 62)),
        ("OpenCL 3.0 QUALCOMM build: commit unknown, Compiler E031.42.20.00 (2024-12 log)", (31, 42, 20, 0)),
        ("Compiler E031.38.11", (31, 38, 11)),
        ("Compiler E031.38", (31, 38)),
        ("OpenCL 2.0 Adreno(TM) 650", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_adreno_compiler(driver, expected):
    assert parse_adreno_compiler(driver) == expected


@pytest.mark.parametrize(
    "vendor, name, platform, expected",
    [
        ("ARM", "Mali-G52 r1p0", "ARM Platform", "arm"),
        ("QUALCOMM", "QUALCOMM Adreno(TM)", "QUALCOMM Snapdragon(TM)", "qualcomm"),
        ("NVIDIA Corporation", "NVIDIA H100", "NVIDIA CUDA", "nvidia"),
        ("Advanced Micro Devices, Inc.", "gfx1100", "AMD Accelerated Parallel Processing", "amd"),
        ("Intel(R) Corporation", "Intel(R) Xeon(R) Processor", "Intel(R) OpenCL", "intel"),
        ("GenuineIntel", "pthread-Intel(R) Xeon(R)", "Portable Computing Language", "intel"),  # the CPU
        ("Mesa", "llvmpipe", "rusticl", "other"),
    ],
)
def test_normalize_vendor(vendor, name, platform, expected):
    assert normalize_vendor(vendor, name, platform) == expected


# (platform, device vendor, device name) -> (implementation, hardware vendor)
IDENTITIES = [
    ("ARM Platform", "ARM", "Mali-G52 r1p0", "arm", "arm"),
    ("QUALCOMM Snapdragon(TM)", "QUALCOMM", "QUALCOMM Adreno(TM)", "qualcomm", "qualcomm"),
    ("NVIDIA CUDA", "NVIDIA Corporation", "NVIDIA H100", "nvidia", "nvidia"),
    ("AMD Accelerated Parallel Processing", "Advanced Micro Devices, Inc.", "gfx1100", "amd", "amd"),
    ("Intel(R) OpenCL", "Intel(R) Corporation", "Intel(R) Xeon(R) Platinum 8480+", "intel", "intel"),
    ("Intel(R) OpenCL", "Intel(R) Corporation", "AMD EPYC 7763 64-Core Processor", "intel", "amd"),
    ("Intel(R) OpenCL Graphics", "Intel(R) Corporation", "Intel(R) Arc(TM) A770 Graphics", "intel", "intel"),
    ("Portable Computing Language", "GenuineIntel", "pthread-Intel(R) Xeon(R)", "pocl", "intel"),
    ("Portable Computing Language", "AuthenticAMD", "pthread-haswell-AMD EPYC", "pocl", "amd"),
    ("Portable Computing Language", "NVIDIA Corporation", "NVIDIA GeForce RTX 3060", "pocl", "nvidia"),
    ("rusticl", "Mesa/X.org", "llvmpipe (LLVM 15.0.6, 256 bits)", "rusticl", "other"),
    ("rusticl", "Mesa", "Mali-G52 (Panfrost)", "rusticl", "arm"),
    ("rusticl", "Mesa", "FD740", "rusticl", "qualcomm"),
    ("Clover", "AMD", "AMD Radeon RX 580 (polaris10, LLVM 15.0.6, DRM 3.49)", "clover", "amd"),
    ("Oclgrind", "University of Bristol", "Oclgrind Simulator", "oclgrind", "other"),
    ("Apple", "Apple", "Apple M2", "apple", "apple"),
    ("", "ARM", "Mali-G710", "arm", "arm"),  # a profile without a platform: the vendor's driver
    ("", "", "", "other", "other"),
]


@pytest.mark.parametrize("platform, vendor, name, implementation, hardware", IDENTITIES,
                         ids=[f"{i[0] or 'none'}|{i[2] or 'none'}" for i in IDENTITIES])
def test_implementation_and_hardware_vendor_are_separate(platform, vendor, name, implementation, hardware):
    assert normalize_implementation(platform, vendor, name) == implementation
    assert normalize_vendor(vendor, name) == hardware
    caps = DeviceCaps(platform_name=platform, vendor_string=vendor, name=name, vendor=hardware)
    assert caps.implementation == implementation  # derived when not given
    assert implementation in IMPLEMENTATIONS and hardware in VENDORS


def test_cuda_caps_are_the_cuda_implementation():
    caps = DeviceCaps(backend="cuda", vendor="nvidia", platform_name="CUDA 12.4", name="NVIDIA H100")
    assert caps.implementation == "cuda" and caps.vendor == "nvidia"


def test_profiles_naming_mesa_are_mesa_implementations():
    mali = {"name": "Mali-G52 via Panfrost", "vendor": "Mesa", "device_name_string": "Mali-G52 (Panfrost)",
            "platform_name": "rusticl", "extensions": ["cl_khr_subgroups"], "subgroup_sizes": [8]}
    caps = DeviceCaps.from_profile(mali)
    assert (caps.implementation, caps.vendor) == ("rusticl", "arm")
    clover = DeviceCaps.from_profile({"name": "Mali via Clover", "vendor": "ARM", "platform_name": "Clover"})
    assert (clover.implementation, clover.vendor) == ("clover", "arm")
    adreno = DeviceCaps.from_profile({"name": "Adreno 740", "vendor": "Qualcomm", "platform_name": "rusticl",
                                      "driver": "Mesa 24.1 Compiler E031.45.02.06"})
    # The Adreno compiler bug rules are about Qualcomm's driver, not Mesa's compiler.
    assert adreno.implementation == "rusticl" and adreno.vendor == "qualcomm"
    assert adreno.adreno_compiler is None


def test_json_without_implementation_still_loads():
    caps = DeviceCaps(vendor="amd", name="pthread-AMD EPYC", vendor_string="AuthenticAMD",
                      platform_name="Portable Computing Language", device_type="cpu")
    assert caps.implementation == "pocl"
    data = caps.to_dict()
    assert DeviceCaps.from_dict(data) == caps
    del data["implementation"]
    assert DeviceCaps.from_dict(data) == caps  # derived from the platform name
    data["vendor"] = "pocl"  # how such JSON spelled PoCL: now implementation, not vendor
    old = DeviceCaps.from_dict(data)
    assert (old.implementation, old.vendor) == ("pocl", "amd")


# ---- probe output checking (no device) ---------------------------------------------


def test_probe_output_check_accepts_good_and_rejects_bad_records():
    np = pytest.importorskip("numpy")
    from clreduce.backends.opencl_probe import _check_probe_output

    width = 8
    good = np.array([[i // width, i % width, width, width * (width + 1) // 2] for i in range(32)])
    assert _check_probe_output(good, with_reduce=True) == 8
    wrong_sum = good.copy()
    wrong_sum[3, 3] = 0
    assert _check_probe_output(wrong_sum, with_reduce=True) is None
    assert _check_probe_output(wrong_sum, with_reduce=False) == 8
    duplicate_lane = good.copy()
    duplicate_lane[1, 1] = 0
    assert _check_probe_output(duplicate_lane, with_reduce=False) is None
    wrong_size = good.copy()
    wrong_size[:, 2] = 16
    assert _check_probe_output(wrong_size, with_reduce=False) is None


# ---- probing real devices ----------------------------------------------------------


def _all_devices():
    try:
        import pyopencl as cl
    except ImportError as exc:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"!!! PYOPENCL NOT INSTALLED: {exc}"))]
    try:
        found = [(p, d) for p in cl.get_platforms() for d in p.get_devices()]
    except Exception as exc:  # noqa: BLE001 - no ICD / no platform
        found = []
        reason = f"!!! NO OPENCL PLATFORM: {exc}"
    else:
        reason = "!!! NO OPENCL DEVICE FOUND"
    if not found:
        return [pytest.param(None, marks=pytest.mark.skip(reason=reason))]
    return [pytest.param(d, id=f"{p.name.strip()}|{d.name.strip()}") for p, d in found]


DEVICES = _all_devices()


def _find_device(predicate):
    for param in DEVICES:
        device = param.values[0]
        if device is not None and predicate(device):
            return device
    return None


@pytest.mark.parametrize("device", DEVICES)
def test_probe_device_is_sane_cached_and_round_trips(device):
    from clreduce.backends.opencl_probe import probe_device

    caps = probe_device(device)
    assert probe_device(device) is caps  # cached
    assert DeviceCaps.from_json(caps.to_json()) == caps
    assert caps.backend == "opencl" and caps.vendor in VENDORS and caps.implementation in IMPLEMENTATIONS
    assert caps.implementation == normalize_implementation(device.platform.name, device.vendor, device.name)
    assert caps.name == device.name.strip()
    assert caps.device_type in {"gpu", "cpu", "accelerator", "other"}
    assert caps.extensions == tuple(sorted(set(device.extensions.split())))
    assert caps.opencl_c_versions and all(v[0].isdigit() for v in caps.opencl_c_versions)
    assert 1 <= caps.max_work_group_size <= device.max_work_group_size
    assert caps.preferred_wg_multiple >= 1 and caps.compute_units >= 1
    assert caps.fp16 == ("cl_khr_fp16" in caps.extensions)
    if caps.subgroups:
        assert caps.subgroup_sizes and all(s >= 1 for s in caps.subgroup_sizes)
        assert any(caps.has(x) for x in ("cl_khr_subgroups", "__opencl_c_subgroups", "cl_intel_subgroups"))
    else:
        assert caps.subgroup_sizes == ()


def test_pocl_has_subgroups_only_where_it_says_so():
    """PoCL 3.x (pip's, Debian bookworm's) advertises no sub-groups, and the caps say none. A
    PoCL that does advertise them (the GPU machine's cpu-skylake-avx512 PoCL, 2026-11-28, says
    cl_khr_subgroups) gets them only through the probe kernel, with the sizes it measured."""
    from clreduce.backends.opencl_probe import _advertises_subgroups, probe_device

    devices = [param.values[0] for param in DEVICES if param.values[0] is not None
               and "Portable Computing Language" in param.values[0].platform.name]
    if not devices:
        pytest.skip("!!! NO POCL DEVICE VISIBLE: install pyopencl[pocl]")
    for device in devices:
        caps = probe_device(device)
        assert caps.implementation == "pocl" and caps.vendor in VENDORS
        if not _advertises_subgroups(caps):
            assert caps.subgroups is False and caps.subgroup_sizes == (), caps
            assert caps.subgroup_size_control == "none" and not caps.subgroup_reduce_builtins, caps
        elif caps.subgroups:
            assert caps.subgroup_sizes and all(s > 0 for s in caps.subgroup_sizes), caps
        else:
            assert caps.subgroup_sizes == (), caps


def _intel_cpu(device) -> bool:
    import pyopencl as cl

    return "Intel(R) OpenCL" in device.platform.name and bool(device.type & cl.device_type.CPU)


def test_intel_cpu_has_verified_subgroup_sizes_and_fp16():
    device = _find_device(_intel_cpu)
    if device is None:
        pytest.skip("!!! NO INTEL CPU OPENCL DEVICE VISIBLE: set OCL_ICD_VENDORS (DESIGN.md)")
    from clreduce.backends.opencl_probe import probe_device

    caps = probe_device(device)
    # The implementation is Intel's whatever the CPU (vendor is "amd" on an AMD EPYC).
    assert caps.implementation == "intel" and caps.device_type == "cpu"
    assert caps.subgroups is True
    assert {4, 8, 16, 32, 64} <= set(caps.subgroup_sizes)
    assert caps.subgroup_size_control == "intel"
    assert caps.subgroup_reduce_builtins and caps.khr_shuffle
    assert caps.fp16 is True
    assert caps.cl_std is not None


def test_probe_degrades_to_no_subgroups_when_a_step_throws(monkeypatch):
    device = _find_device(_intel_cpu)
    if device is None:
        pytest.skip("!!! NO INTEL CPU OPENCL DEVICE VISIBLE: needed for a device with sub-groups")
    from clreduce.backends import opencl_probe

    def boom(*args, **kwargs):
        raise RuntimeError("driver exploded")

    monkeypatch.setattr(opencl_probe, "_probe_subgroups", boom)
    try:
        caps = opencl_probe.probe_device(device, refresh=True)
        assert caps.subgroups is False and caps.subgroup_sizes == ()
        assert any("driver exploded" in n for n in caps.notes)

        # A run that builds but yields wrong numbers also means "no sub-groups".
        monkeypatch.undo()
        monkeypatch.setattr(opencl_probe, "_check_probe_output", lambda records, with_reduce: None)
        caps = opencl_probe.probe_device(device, refresh=True)
        assert caps.subgroups is False and caps.subgroup_sizes == ()

        # No context at all: still a DeviceCaps, sub-groups off.
        monkeypatch.undo()
        import pyopencl as cl

        monkeypatch.setattr(cl, "Context", boom)
        caps = opencl_probe.probe_device(device, refresh=True)
        assert caps.subgroups is False and caps.fp16 is True
    finally:
        monkeypatch.undo()
        opencl_probe.clear_probe_cache()
    assert opencl_probe.probe_device(device).subgroups is True


# ---- the host CPU never changes what a runtime is (issue 13) ------------------------------

# Device strings as each runtime reports them on an AMD and on an Intel host.
HOST_CPUS = {
    "amd-host": ("AMD EPYC 7763 64-Core Processor", "AuthenticAMD", "amd"),
    "intel-host": ("Intel(R) Xeon(R) Platinum 8480+", "GenuineIntel", "intel"),
}
RUNTIME_STRINGS = {  # id: (platform, device vendor (None: the CPUID vendor), name prefix, driver)
    "intel-cpu": ("Intel(R) OpenCL", "Intel(R) Corporation", "", "2024.18.6.0.02_160000"),
    "pocl": ("Portable Computing Language", None, "pthread-", "3.0-rc2"),
    "pocl-debian": ("Portable Computing Language", None, "pthread-haswell-", "3.1+debian"),
}


class _FakeDevice:
    """Just the strings and numbers the probe reads; anything else raises AttributeError,
    which the probe treats as a driver that cannot answer."""

    def __init__(self, runtime: str, host: str):
        import pyopencl as cl

        platform, vendor, prefix, driver = RUNTIME_STRINGS[runtime]
        model, cpuid_vendor, _ = HOST_CPUS[host]
        self.platform = type("P", (), {"name": platform})()
        self.name = prefix + model
        self.vendor = vendor or cpuid_vendor
        self.driver_version = driver
        self.version = "OpenCL 3.0"
        self.opencl_c_version = "OpenCL C 1.2"
        self.extensions = "cl_khr_fp64 cl_khr_subgroups cl_intel_required_subgroup_size" * (runtime == "intel-cpu")
        self.type = int(cl.device_type.CPU)
        self.max_work_group_size = 8192
        self.max_compute_units = {"amd-host": 128, "intel-host": 56}[host]


@pytest.mark.parametrize("runtime", sorted(RUNTIME_STRINGS))
def test_probe_names_the_same_runtime_on_amd_and_intel_hosts(runtime, monkeypatch):
    cl = pytest.importorskip("pyopencl")
    from conftest import device_id, runtime_matches

    from clreduce.backends import opencl_probe

    def no_context(*args, **kwargs):
        raise RuntimeError("fake device: no context")

    monkeypatch.setattr(cl, "Context", no_context)
    found = {}
    for host, (_model, _cpuid, maker) in HOST_CPUS.items():
        caps = opencl_probe._probe_uncached(_FakeDevice(runtime, host))
        assert caps.vendor == maker, host  # the hardware is the host's CPU ...
        found[host] = caps
    amd, intel = found["amd-host"], found["intel-host"]
    # ... the implementation, the width request it offers and the test id are not.
    assert amd.implementation == intel.implementation == runtime.split("-")[0]
    assert amd.subgroup_size_control == intel.subgroup_size_control
    assert device_id(amd) == device_id(intel) == runtime
    for caps in (amd, intel):
        dev = type("Found", (), {"id": device_id(caps), "caps": caps})()
        assert runtime_matches(runtime, dev)
        for maker in ("amd", "intel"):  # a CPU maker finds only that maker's own runtime
            assert runtime_matches(maker, dev) == (caps.implementation == maker)


@pytest.mark.parametrize("device", DEVICES)
def test_real_device_keeps_its_implementation_on_the_other_host(device):
    """This machine's own device strings, with the CPU swapped for the other maker's."""
    from clreduce.backends.opencl_probe import probe_device

    caps = probe_device(device)
    for model, cpuid_vendor, maker in HOST_CPUS.values():
        for name, vendor in ((model, caps.vendor_string), ("pthread-" + model, cpuid_vendor)):
            assert normalize_implementation(caps.platform_name, vendor, name) == caps.implementation
            swapped = dataclasses.replace(caps, name=name, vendor_string=vendor, vendor=normalize_vendor(vendor, name),
                                          implementation="")
            assert swapped.implementation == caps.implementation
