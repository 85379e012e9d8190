"""What a device can do, as plain data the planner reads.

``DeviceCaps`` is frozen and holds only facts (strings, ints, tuples), so it can be
written to JSON, read back, built from a published device profile, and fed to the
pure planner in tests without any GPU or pyopencl import.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field

# Adreno compilers before E031.38.11 crash building sub_group_reduce_* / sub_group_scan_*
# (DESIGN.md, device facts). Parsed from "Compiler E031.x.y.z" in the driver version.
ADRENO_FIRST_GOOD_REDUCE_COMPILER = (31, 38, 11)

_ADRENO_COMPILER_RE = re.compile(r"Compiler\s+E(\d+)\.(\d+)(?:\.(\d+))?(?:\.(\d+))?")


def parse_adreno_compiler(driver_version: str | None) -> tuple[int, ...] | None:
    """Return the Adreno compiler version ``(31, 38, 11, 14)`` found in a driver string."""
    if not driver_version:
        return None
    m = _ADRENO_COMPILER_RE.search(driver_version)
    if not m:
        return None
    return tuple(int(g) for g in m.groups() if g is not None)


# LLVM x86 CPU names with AVX-512 (PoCL's HSTR target): see DeviceCaps.vector_bytes_limit
_AVX512_TARGETS = ("avx512", "knl", "knm", "cannonlake", "icelake", "tigerlake", "rocketlake", "cascadelake",
                   "cooperlake", "sapphirerapids", "emeraldrapids", "graniterapids", "diamondrapids", "znver4",
                   "znver5", "x86-64-v4")


@dataclass(frozen=True)
class DeviceCaps:
    """Capabilities of one device, as the planner needs them.

    Attributes
    ----------
    backend : {"opencl", "cuda"}
    vendor : str
        Who made the hardware: "arm", "qualcomm", "nvidia", "intel", "amd", "apple",
        "other" (software devices such as llvmpipe). Device rules (Mali, Adreno) use it.
        A CPU's maker is whatever the host has: never a way to find a runtime.
    implementation : str
        Which OpenCL implementation (driver stack) runs the device, one of
        ``IMPLEMENTATIONS``: "intel" (Intel's CPU runtime and GPU compute runtime),
        "pocl", "rusticl" and "clover" (Mesa), "nvidia", "amd", "arm", "qualcomm",
        "apple", "oclgrind", "cuda" (the CUDA backend), "other". Driver rules (compiler
        bugs, width requests) and runtime selection use it. Derived from the platform
        and vendor strings when not given (``""``), so JSON written before this field
        existed still loads.
    name, vendor_string, platform_name, device_version, driver_version : str
        Raw strings from the driver (``device_version`` is CL_DEVICE_VERSION; on Adreno
        it is the only place naming the model).
    device_type : {"gpu", "cpu", "accelerator", "other"}
    opencl_c_versions : tuple of str
        Every OpenCL C version the compiler accepts, e.g. ``("1.2", "3.0")``
        (CL_DEVICE_OPENCL_C_ALL_VERSIONS when present, else CL_DEVICE_OPENCL_C_VERSION).
    extensions, c_features : tuple of str
        Sorted extension names and ``__opencl_c_*`` feature macros.
    subgroups : bool
        Sub-groups usable: confirmed by compiling a probe kernel (never inferred from a
        version string). For profiles: the extension/feature is listed.
    subgroup_sizes : tuple of int
        Widths a kernel can run at. With a way to request one (``intel_reqd_sub_group_size``,
        ``qcom_reqd_sub_group_size``) every entry is selectable; otherwise the first is
        the width the hardware uses (Mali: fixed).
    max_work_group_size, local_mem_size, compute_units, preferred_wg_multiple,
    max_mem_alloc_size, global_mem_size : int
        ``max_work_group_size`` is the largest 1-D work-group: the smaller of
        CL_DEVICE_MAX_WORK_GROUP_SIZE and CL_DEVICE_MAX_WORK_ITEM_SIZES[0] when both are
        known (Mali-G71 reports 384 and 256).
    local_mem_is_global : bool
        CL_GLOBAL local memory (Mali): local memory is ordinary system memory.
    fp16, fp64 : bool
    warp_size : int or None
        Hardware SIMD width when known without sub-groups (NVIDIA: 32).
    ptx_shuffle : bool
        NVIDIA's OpenCL driver: no sub-group extension, but its compiler takes inline PTX and
        a probe kernel's ``shfl.sync.bfly.b32`` butterfly over 32 consecutive work-items gave
        the right sums. Plans may then use warp shuffles (``SG_MODE`` 4, "shuffle_ptx"), and
        ``subgroup_sizes`` holds the warp width (32) while ``subgroups`` stays False (no
        sub-group built-ins).
    notes : tuple of str
        Provenance and probe remarks for people; ignored by ``==``.
    """

    backend: str = "opencl"
    vendor: str = "other"
    implementation: str = ""
    name: str = ""
    vendor_string: str = ""
    platform_name: str = ""
    device_type: str = "gpu"
    device_version: str = ""
    driver_version: str = ""
    opencl_c_versions: tuple[str, ...] = ("1.2",)
    extensions: tuple[str, ...] = ()
    c_features: tuple[str, ...] = ()
    subgroups: bool = False
    subgroup_sizes: tuple[int, ...] = ()
    max_work_group_size: int = 256
    local_mem_size: int = 32768
    local_mem_is_global: bool = False
    compute_units: int = 1
    preferred_wg_multiple: int = 1
    max_mem_alloc_size: int = 128 * 1024 * 1024
    global_mem_size: int = 512 * 1024 * 1024
    fp16: bool = False
    fp64: bool = False
    warp_size: int | None = None
    ptx_shuffle: bool = False
    notes: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self):
        if not self.implementation:
            derived = "cuda" if self.backend == "cuda" else normalize_implementation(
                self.platform_name, self.vendor_string, self.name, self.vendor)
            object.__setattr__(self, "implementation", derived)

    # ---- derived facts (pure) -------------------------------------------------------
    def has(self, extension_or_feature: str) -> bool:
        """True when the extension or OpenCL C feature macro is listed."""
        return extension_or_feature in self.extensions or extension_or_feature in self.c_features

    @property
    def vector_bytes_limit(self) -> int | None:
        """The widest vector, in bytes, that kernels may use on this device, where narrower
        than the planner's 64-byte CPU vectors; None: no limit.

        PoCL whose compile target (``HSTR: ...-<cpu>`` in the device version) has no AVX-512
        gets 32. pip's PoCL 3.0 names an AVX-512 Zen 4 host ``znver3`` (its LLVM predates
        znver4) yet links the builtin library of the host's AVX-512 variant. A builtin call on a
        512-bit vector (``fmin`` of ``float16``, ``double8`` or ``int16`` in reduce_rows.cl)
        then breaks: clang warns that the argument ABI changes, the first build sometimes
        aborts in LLVM ("Do not know how to scalarize this operator's operand!"), and the
        next process, building the same source from PoCL's kernel cache, gets a program with
        no kernels (INVALID_KERNEL_NAME) and aborts at exit ("still have references to IRs").
        Found on a 2-core AMD EPYC host with AVX-512 (2026-11-26); 32-byte vectors build and
        run there."""
        # read from the version string, not ``implementation``: it is PoCL's compiler that
        # builds the kernels, whatever rules a test plans them with (test_nvidia_opencl)
        if "PoCL" not in self.device_version or "HSTR:" not in self.device_version:
            return None
        target = self.device_version.split("HSTR:", 1)[1].strip().lower()
        return None if any(t in target for t in _AVX512_TARGETS) else 32

    @property
    def adreno_compiler(self) -> tuple[int, ...] | None:
        # The compiler is Qualcomm's driver's; Mesa's (Freedreno) on the same GPU is not it.
        return parse_adreno_compiler(self.driver_version) if self.implementation == "qualcomm" else None

    @property
    def cl_std(self) -> str | None:
        """The ``-cl-std=`` value to build with: the highest version ≥ 2.0 accepted, else None.

        Some Mali drivers report ``OpenCL C 1.2`` in CL_DEVICE_OPENCL_C_VERSION while
        CL_DEVICE_OPENCL_C_ALL_VERSIONS lists 3.0 with ``__opencl_c_subgroups``; sub-group
        built-ins then need ``-cl-std=CL3.0``.
        """
        best = max(self.opencl_c_versions, key=_version_key, default="1.2")
        return f"CL{best}" if _version_key(best) >= (2, 0) else None

    @property
    def khr_shuffle(self) -> bool:
        return self.subgroups and self.has("cl_khr_subgroup_shuffle")

    @property
    def qcom_shuffle(self) -> bool:
        return self.subgroups and self.has("cl_qcom_subgroup_shuffle")

    @property
    def subgroup_reduce_builtins(self) -> bool:
        """``sub_group_reduce_add/min/max`` compile and run correctly."""
        if not self.subgroups:
            return False
        compiler = self.adreno_compiler
        if self.implementation == "qualcomm" and (compiler is None or compiler[:3] < ADRENO_FIRST_GOOD_REDUCE_COMPILER):
            # Unknown Adreno compilers are treated as old: a crash in the driver's
            # compiler takes the app down, a local-memory reduce only costs speed.
            return False
        return True

    @property
    def subgroup_size_control(self) -> str:
        """How a kernel requests its sub-group width: "intel", "qcom" or "none"."""
        if not self.subgroups:
            return "none"
        if self.has("cl_intel_required_subgroup_size"):
            return "intel"
        if self.has("cl_qcom_reqd_sub_group_size"):
            return "qcom"
        return "none"

    # ---- JSON -----------------------------------------------------------------------
    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_json(self, **kwargs) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, data: dict) -> DeviceCaps:
        names = {f.name: f for f in dataclasses.fields(cls)}
        unknown = set(data) - set(names)
        if unknown:
            raise ValueError(f"unknown DeviceCaps fields: {sorted(unknown)}")
        values = {}
        for key, value in data.items():
            if isinstance(value, list):
                value = tuple(value)
            values[key] = value
        if values.get("vendor") == "pocl" and not values.get("implementation"):
            # JSON from before ``implementation`` existed called PoCL a vendor.
            values["implementation"] = "pocl"
            values["vendor"] = normalize_vendor(values.get("vendor_string"), values.get("name", ""))
        return cls(**values)

    @classmethod
    def from_json(cls, text: str) -> DeviceCaps:
        return cls.from_dict(json.loads(text))

    # ---- published device profiles ----------------------------------------------------
    @classmethod
    def from_profile(cls, entry: dict) -> DeviceCaps:
        """Build caps from one entry of a device-profile list (``mobile_gpus.json`` schema).

        Profiles are facts collected from public dumps and are often incomplete; a
        missing key counts as ``null``. Every ``null`` becomes the conservative value:

        * ``extensions`` null -> no extensions (never use one the profile does not list);
          names starting with ``__opencl_c_`` go to ``c_features``.
        * ``subgroups`` only when ``cl_khr_subgroups`` or ``__opencl_c_subgroups`` is
          listed, never from a version string; ``subgroup_sizes`` are kept only then.
        * ``opencl_c_versions`` from ``opencl_c_version`` (plus ``opencl_c_all_versions``
          when given); null -> the minimum the device version guarantees (1.2, or 2.0
          for an OpenCL 2.x device).
        * ``max_work_group_size`` 256, ``local_mem_size`` 32768 (full-profile minimum),
          ``compute_units`` 1, ``preferred_wg_multiple`` the smallest listed hardware
          width else 1, ``fp16``/``fp64`` the extension's presence, sizes printed only in
          MB (``*_mb_floor``, ``*_mb_reported``) rounded down to whole MiB.
        * ``local_mem_is_global`` from ``local_mem_type == "Global"``; null on an Arm
          device -> True (Mali local memory is system memory on every generation).

        Parameters
        ----------
        entry : dict
            One profile. Unknown keys are ignored except as provenance.

        Returns
        -------
        DeviceCaps
            ``backend="opencl"``; ``notes`` records the source and every default taken.
        """
        return _caps_from_profile(cls, entry)


def load_profiles(path) -> list[DeviceCaps]:
    """Read a JSON list of device profiles and return one ``DeviceCaps`` per entry.

    Parameters
    ----------
    path : str or os.PathLike
        A file in the ``mobile_gpus.json`` schema: a JSON list of objects.

    Returns
    -------
    list of DeviceCaps
        In file order, built with :meth:`DeviceCaps.from_profile`.
    """
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of device profiles")
    return [DeviceCaps.from_profile(entry) for entry in data]


def normalize_vendor(vendor: str | None, name: str = "", platform_name: str = "") -> str:
    """Map raw vendor/device strings to the hardware maker, ``DeviceCaps.vendor``.

    Parameters
    ----------
    vendor : str or None
        CL_DEVICE_VENDOR (or a profile's ``vendor``), e.g. ``"ARM"``, ``"QUALCOMM"``.
    name : str
        CL_DEVICE_NAME. It is searched first: Intel's CPU runtime reports vendor
        "Intel(R) Corporation" for an "AMD EPYC" device, PoCL the CPU's CPUID vendor.
    platform_name : str
        Unused (kept for callers); the platform names the implementation, see
        :func:`normalize_implementation`.

    Returns
    -------
    str
        One of "arm", "qualcomm", "nvidia", "amd", "intel", "apple", "other".
    """
    del platform_name
    for text in (name or "", vendor or ""):
        for key, normalised in _VENDOR_KEYS:
            if re.search(key, text.lower()):
                return normalised
    return "other"


def normalize_implementation(platform_name: str | None, vendor: str | None = "", name: str = "",
                             hint: str = "") -> str:
    """Name the OpenCL implementation (driver stack) of a device, ``DeviceCaps.implementation``.

    Parameters
    ----------
    platform_name : str or None
        CL_PLATFORM_NAME: the implementation names itself there ("Portable Computing
        Language", "rusticl", "Clover", "Intel(R) OpenCL", "NVIDIA CUDA", "ARM Platform").
    vendor, name, hint : str
        CL_DEVICE_VENDOR, CL_DEVICE_NAME and any other text (a profile's driver string, an
        old ``vendor`` value): used only when the platform name is missing or unknown,
        where a vendor's own driver is the best guess ("ARM" -> "arm").

    Returns
    -------
    str
        One of ``IMPLEMENTATIONS``. The host CPU never changes the answer.
    """
    platform = (platform_name or "").lower()
    for key, impl in _PLATFORM_KEYS:
        if re.search(key, platform):
            return impl
    text = f"{vendor or ''} {name or ''} {hint or ''}".lower()
    for key, impl in _PLATFORM_KEYS[:4]:  # PoCL / rusticl / Clover / Oclgrind named elsewhere
        if re.search(key, text):
            return impl
    for key, normalised in _VENDOR_KEYS:
        if re.search(key, text):
            return normalised  # no platform: a vendor's device runs on the vendor's driver
    return "other"


_VENDOR_KEYS = (
    (r"\barm\b|\bmali", "arm"),
    (r"qualcomm|adreno|\bfd\d{3}\b", "qualcomm"),  # Mesa (Freedreno) names Adreno 740 "FD740"
    (r"nvidia", "nvidia"),
    (r"advanced micro devices|\bamd\b|authenticamd", "amd"),
    (r"intel", "intel"),
    (r"apple", "apple"),
)

# CL_PLATFORM_NAME patterns, most specific first: PoCL's and Mesa's platforms run devices
# whose own strings name Intel, AMD, Arm or NVIDIA hardware.
_PLATFORM_KEYS = (
    (r"portable computing language|\bpocl\b", "pocl"),
    (r"rusticl", "rusticl"),
    (r"clover", "clover"),
    (r"oclgrind", "oclgrind"),
    (r"nvidia", "nvidia"),
    (r"^cuda\b", "cuda"),
    (r"intel", "intel"),
    (r"\bamd\b|advanced micro devices", "amd"),
    (r"\barm\b|\bmali", "arm"),
    (r"qualcomm|snapdragon|adreno", "qualcomm"),
    (r"apple", "apple"),
)

IMPLEMENTATIONS = ("intel", "pocl", "rusticl", "clover", "nvidia", "amd", "arm", "qualcomm",
                   "apple", "oclgrind", "cuda", "other")

_MIB = 1024 * 1024
_OPENCL_C_RE = re.compile(r"OpenCL C\s+(\d+\.\d+)")
_OPENCL_RE = re.compile(r"OpenCL\s+(\d+)\.(\d+)")
_WORK_ITEM_SIZES_RE = re.compile(r"max work item sizes\D*(\d+)", re.IGNORECASE)


def _sorted_versions(versions) -> tuple[str, ...]:
    return tuple(sorted(set(versions), key=_version_key))


def _profile_c_versions(entry: dict, notes: list[str]) -> tuple[str, ...]:
    found = []
    c_version = entry.get("opencl_c_version")
    if c_version:
        m = _OPENCL_C_RE.search(c_version) or re.match(r"\s*(\d+\.\d+)", c_version)
        if m:
            found.append(m.group(1))
    for v in entry.get("opencl_c_all_versions") or ():
        m = _OPENCL_C_RE.search(str(v)) or re.match(r"\s*(\d+\.\d+)", str(v))
        if m:
            found.append(m.group(1))
    if found:
        # Every OpenCL C 1.2+ compiler also accepts -cl-std=CL1.2.
        if max(_version_key(v) for v in found) >= (1, 2):
            found.append("1.2")
        return _sorted_versions(found)
    m = _OPENCL_RE.search(entry.get("opencl_version") or "")
    if m and m.group(1) == "2":
        # OpenCL 2.0-2.2 devices must report OpenCL C 2.0; 3.0 only guarantees 1.2.
        notes.append("opencl_c_version missing: OpenCL 2.x device -> OpenCL C 2.0 (required by the spec)")
        return ("1.2", "2.0")
    if m and m.group(1) == "1":
        version = f"1.{m.group(2)}"
        notes.append(f"opencl_c_version missing: assumed OpenCL C {version} (device version)")
        return (version,)
    notes.append("opencl_c_version missing: assumed OpenCL C 1.2")
    return ("1.2",)


def _profile_size(entry: dict, key: str, mb_keys: tuple[str, ...], notes: list[str]) -> int | None:
    """A byte size: the exact value, else a value the source printed in MB (floored)."""
    value = entry.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    for mb_key in mb_keys:
        mb = entry.get(mb_key)
        if isinstance(mb, str):
            m = re.search(r"(\d+(?:\.\d+)?)\s*MB", mb)
            mb = float(m.group(1)) if m else None
        if isinstance(mb, (int, float)) and not isinstance(mb, bool) and mb > 0:
            notes.append(f"{key} from {mb_key}={entry.get(mb_key)!r} (whole MiB, rounded down)")
            return int(mb) * _MIB
    return None


def _caps_from_profile(cls, entry: dict) -> DeviceCaps:
    if not isinstance(entry, dict):
        raise TypeError(f"a device profile is a dict, got {type(entry).__name__}")
    get = entry.get
    profile_name = get("name") or get("device_name_string") or "unnamed profile"
    notes = [f"profile: {profile_name}"]
    if get("source"):
        notes.append(f"source: {get('source')}")

    # Extensions and OpenCL C feature macros: only what the profile lists.
    listed = get("extensions")
    if listed is None:
        listed = ()
        notes.append("extensions not in profile: none assumed")
    elif get("extensions_complete") is False:
        notes.append("extension list incomplete in the source: only the listed ones are used")
    listed = [str(x).strip() for x in listed if str(x).strip()]
    features = [str(x).strip() for x in (get("c_features") or get("opencl_c_features") or ())]
    extensions = tuple(sorted({x for x in listed if not x.startswith("__opencl_c_")}))
    c_features = tuple(sorted({x for x in features + listed if x.startswith("__opencl_c_")}))

    subgroups = "cl_khr_subgroups" in extensions or "__opencl_c_subgroups" in c_features
    listed_sizes = tuple(int(x) for x in (get("subgroup_sizes") or ()) if int(x) > 0)
    subgroup_sizes = listed_sizes if subgroups else ()
    if listed_sizes and not subgroups:
        notes.append(
            f"hardware width {list(listed_sizes)} known but sub-groups not listed: "
            "subgroups=False"
        )

    opencl_c_versions = _profile_c_versions(entry, notes)

    max_wg = get("max_work_group_size")
    if max_wg is None:
        max_wg = 256
        notes.append("max_work_group_size missing: 256")
    item_sizes = get("max_work_item_sizes")
    item0 = int(item_sizes[0]) if item_sizes else None
    if item0 is None:
        for text in get("notes") or ():
            m = _WORK_ITEM_SIZES_RE.search(str(text))
            if m:
                item0 = int(m.group(1))
                break
    if item0 is not None and item0 < max_wg:
        notes.append(f"max_work_group_size {max_wg} capped at max work item size {item0}")
        max_wg = item0

    local_mem = get("local_mem_size")
    if local_mem is None:
        local_mem = 32768
        notes.append("local_mem_size missing: 32768 (OpenCL full-profile minimum)")

    vendor = normalize_vendor(get("vendor"), get("device_name_string") or profile_name)
    # A profile is a dump of the vendor's driver unless its platform names Mesa (rusticl,
    # Clover) or another implementation.
    implementation = normalize_implementation(
        get("platform_name"), get("vendor"), get("device_name_string") or profile_name, get("driver") or "")
    local_type = get("local_mem_type")
    if local_type is not None:
        local_mem_is_global = str(local_type).strip().lower() == "global"
    else:
        local_mem_is_global = vendor == "arm"
        if local_mem_is_global:
            notes.append("local_mem_type missing: Mali local memory is system memory -> Global")

    compute_units = get("compute_units")
    if compute_units is None:
        compute_units = 1
        notes.append("compute_units missing: 1")

    preferred = get("preferred_wg_multiple")
    if preferred is None:
        preferred = min(listed_sizes) if listed_sizes else 1
        notes.append(f"preferred_wg_multiple missing: {preferred} (hardware width if known)")

    max_alloc = _profile_size(
        entry, "max_mem_alloc_size", ("max_mem_alloc_mb_floor", "max_mem_alloc_mb_reported"), notes
    )
    global_mem = _profile_size(
        entry,
        "global_mem_size",
        ("global_mem_mb_floor", "global_mem_mb_reported", "global_mem_size_reported"),
        notes,
    )
    defaults = {f.name: f.default for f in dataclasses.fields(cls)}
    if global_mem is None:
        global_mem = max(defaults["global_mem_size"], max_alloc or 0)
    if max_alloc is None:
        max_alloc = min(defaults["max_mem_alloc_size"], global_mem)
    max_alloc = min(max_alloc, global_mem)

    fp16 = get("fp16")
    if fp16 is None:
        fp16 = "cl_khr_fp16" in extensions
    elif fp16 and "cl_khr_fp16" not in extensions:
        notes.append("fp16 from the profile, but cl_khr_fp16 is not in its extension list")
    fp64 = get("fp64")
    if fp64 is None:
        fp64 = "cl_khr_fp64" in extensions or "__opencl_c_fp64" in c_features

    for key, value in entry.items():
        if key.endswith(("_provenance", "_kind")) and value:
            notes.append(f"{key}: {value}")
    notes.extend(f"note: {text}" for text in get("notes") or ())

    return cls(
        backend="opencl",
        vendor=vendor,
        implementation=implementation,
        name=get("device_name_string") or profile_name,
        vendor_string=get("vendor") or "",
        platform_name=get("platform_name") or "",
        device_type=get("device_type") or "gpu",
        device_version=get("opencl_version") or "",
        driver_version=get("driver") or get("opencl_version") or "",
        opencl_c_versions=opencl_c_versions,
        extensions=extensions,
        c_features=c_features,
        subgroups=bool(subgroups),
        subgroup_sizes=subgroup_sizes,
        max_work_group_size=int(max_wg),
        local_mem_size=int(local_mem),
        local_mem_is_global=bool(local_mem_is_global),
        compute_units=int(compute_units),
        preferred_wg_multiple=int(preferred),
        max_mem_alloc_size=int(max_alloc),
        global_mem_size=int(global_mem),
        fp16=bool(fp16),
        fp64=bool(fp64),
        warp_size=None,
        notes=tuple(notes),
    )


def _version_key(version: str) -> tuple[int, int]:
    m = re.match(r"(\d+)\.(\d+)", version)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)
