"""Errors name device, op, shape and plan; the default device is never a simulator."""

from __future__ import annotations

import types

import numpy as np
import pytest

import clreduce

cl = pytest.importorskip("pyopencl")
from clreduce.backends import cl_host, opencl  # noqa: E402


def _record(code, routine):
    return cl._cl._ErrorRecord("injected", code, routine)


def _assert_context(text, device, op, shape):
    assert device.name.strip() in text and f"op {op}" in text and shape in text and "plan " in text, text


def test_allocation_failure_is_a_memory_error_with_context(cl_device, monkeypatch):
    def fail(ctx, device, src):
        raise cl.MemoryError(_record(cl.status_code.MEM_OBJECT_ALLOCATION_FAILURE, "clCreateBuffer"))

    monkeypatch.setattr(cl_host, "input_buffer", fail)
    with pytest.raises(MemoryError) as info:
        clreduce.sum(np.ones((10, 300), np.float32), axis=-1, device=cl_device)
    assert isinstance(info.value, opencl.DeviceOutOfMemory)
    _assert_context(str(info.value), cl_device, "sum", "(10, 300, 1)")


def test_out_of_resources_is_a_runtime_error_with_context_and_frees_the_kernel(cl_device, monkeypatch):
    real = cl.enqueue_nd_range_kernel

    def fail(*args, **kwargs):
        raise cl.RuntimeError(_record(cl.status_code.OUT_OF_RESOURCES, "clEnqueueNDRangeKernel"))

    x = np.arange(3000, dtype=np.int64).reshape(3, 1000)
    monkeypatch.setattr(cl, "enqueue_nd_range_kernel", fail)
    with pytest.raises(RuntimeError) as info:
        clreduce.max(x, axis=-1, device=cl_device)
    assert isinstance(info.value, opencl.DeviceOutOfResources)
    _assert_context(str(info.value), cl_device, "max", "(3, 1000, 1)")
    monkeypatch.setattr(cl, "enqueue_nd_range_kernel", real)
    # the kernel's lock was let go and the next call runs
    np.testing.assert_array_equal(clreduce.max(x, axis=-1, device=cl_device), x.max(axis=-1))


def _fake_simulator():
    platform = types.SimpleNamespace(name="Oclgrind")
    return types.SimpleNamespace(name="Oclgrind Simulator", platform=platform, type=cl.device_type.GPU,
                                 vendor="University of Bristol")


def test_default_device_skips_simulators(found_devices, monkeypatch):
    real = [f.device for f in found_devices if "oclgrind" not in f.caps.platform_name.lower()]
    if not real:
        pytest.skip("no real OpenCL device")
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    monkeypatch.delenv("CLREDUCE_DEVICE", raising=False)
    monkeypatch.setattr(opencl, "all_devices", lambda: [_fake_simulator(), *real])
    ctx, why = opencl.choose_default_device()
    assert ctx.devices[0].int_ptr == real[0].int_ptr
    assert "Oclgrind skipped" in why


def test_only_simulators_means_no_default(monkeypatch):
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    monkeypatch.delenv("CLREDUCE_DEVICE", raising=False)
    monkeypatch.setattr(opencl, "all_devices", lambda: [_fake_simulator()])
    with pytest.raises(opencl.NoOpenCLDevice, match="CLREDUCE_DEVICE=oclgrind"):
        opencl.choose_default_device()
