"""Sub-group modes a device's driver cannot build (or builds wrong), and the way down.

A build failure of a sub-group variant moves the plan down the chain built-in reduce ->
shuffle butterfly -> local memory, warns once per (device, mode) with the first lines of
the build log, and remembers the mode as bad for the device's fingerprint for the rest of
the process. ``clreduce probe --verify`` marks modes that build but answer wrong the same way.
Old Adreno compilers (E031.x before .38.11) crash on sub_group_reduce_*: this is their path;
an NVIDIA driver whose compiler refuses the inline PTX of SG_MODE 4 takes it too.
"""

from __future__ import annotations

import dataclasses
import threading
import warnings
from typing import Callable

from ..caps import DeviceCaps
from ..plan import Force, Problem, UnsupportedOnDevice, plan


class SubgroupModeFallbackWarning(RuntimeWarning):
    """A sub-group mode failed on a device; clreduce uses the next one down."""


_lock = threading.Lock()
_bad: dict[tuple, set[str]] = {}
_warned: set[tuple] = set()
# called as fn(caps, mode) after a mode is marked bad (the backend drops plans that use it)
listeners: list[Callable[[DeviceCaps, str], None]] = []

LOG_LINES = 8


def fingerprint(caps: DeviceCaps) -> tuple:
    """What identifies one device model + driver for the process."""
    return (caps.backend, caps.platform_name, caps.name, caps.device_version, caps.driver_version)


def bad_modes(caps: DeviceCaps) -> frozenset[str]:
    return frozenset(_bad.get(fingerprint(caps), ()))


def can_fall_back(mode: str) -> bool:
    return mode in ("builtin", "shuffle_khr", "shuffle_qcom", "shuffle_ptx")


def mark_bad(caps: DeviceCaps, mode: str, log: str, why: str) -> None:
    """Remember ``mode`` as unusable on this device and warn once (``why``: what happened)."""
    key = fingerprint(caps)
    with _lock:
        _bad.setdefault(key, set()).add(mode)
        first = (key, mode) not in _warned
        _warned.add((key, mode))
    if first:
        head = "\n".join(log.strip().splitlines()[:LOG_LINES])
        warnings.warn(f"clreduce: sub-group mode {mode!r} {why} on {caps.name.strip()!r} "
                      f"({caps.driver_version}); using the next mode down (builtin -> shuffle -> local) "
                      f"on this device for the rest of the process. First lines:\n{head}",
                      SubgroupModeFallbackWarning, stacklevel=4)
    for listener in list(listeners):
        listener(caps, mode)


def forget(caps: DeviceCaps | None = None) -> None:
    """Forget bad modes (of one device, or all): tests and ``probe --verify`` re-runs."""
    with _lock:
        if caps is None:
            _bad.clear()
            _warned.clear()
        else:
            key = fingerprint(caps)
            _bad.pop(key, None)
            _warned.difference_update({w for w in _warned if w[0] == key})


def avoid_bad_modes(caps: DeviceCaps, problem: Problem, force: Force, user_forced: bool, planner=plan) -> Force:
    """``force`` with ``sg_mode`` set to the first good mode down the chain when the plan
    would use a bad one. A mode the user forced is left alone (its failure is an error).
    ``planner``: plan.plan for the reductions, plan_rowops.plan_row for the row ops (with
    their RowProblem and RowForce)."""
    bad = bad_modes(caps)
    if user_forced or not bad or planner(caps, problem, force).sg_mode not in bad:
        return force
    for candidate in ("shuffle", "local"):
        trial = dataclasses.replace(force, sg_mode=candidate)
        try:
            if planner(caps, problem, trial).sg_mode not in bad:
                return trial
        except UnsupportedOnDevice:
            continue
    return dataclasses.replace(force, sg_mode="local")
