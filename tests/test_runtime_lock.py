"""A stale pyopencl compiler-cache lock (left by a crashed process) gives a message naming
the lock file and the way out within a few seconds, instead of a silent minute per build."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

pytest.importorskip("pyopencl")
from clreduce.backends import cl_cache_lock, opencl  # noqa: E402


def _stale_lock(tmp_path, monkeypatch, age=120.0):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("PYOPENCL_NO_CACHE", raising=False)
    folder = cl_cache_lock.pyopencl_cache_dir()
    os.makedirs(folder, exist_ok=True)
    lock = os.path.join(folder, "lock")
    with open(lock, "w"):
        pass
    os.utime(lock, (time.time() - age, time.time() - age))
    return lock


def test_stale_lock_is_named_at_once(tmp_path, monkeypatch):
    lock = _stale_lock(tmp_path, monkeypatch)
    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match="rm '.*lock'.*PYOPENCL_NO_CACHE") as info:
        cl_cache_lock.check_compiler_cache_lock(timeout=2)
    assert lock in str(info.value)
    assert time.monotonic() - t0 < 1.0


def test_a_lock_released_in_time_is_waited_for(tmp_path, monkeypatch):
    lock = _stale_lock(tmp_path, monkeypatch, age=0)
    threading.Timer(0.3, os.unlink, args=(lock,)).start()
    cl_cache_lock.check_compiler_cache_lock(timeout=3)  # returns once the holder lets go
    assert not os.path.exists(lock)


def test_a_build_behind_a_stale_lock_fails_fast(cl_device, tmp_path, monkeypatch):
    _stale_lock(tmp_path, monkeypatch)
    monkeypatch.setenv("CLREDUCE_LOCK_TIMEOUT", "1")
    opencl.clear_caches()
    t0 = time.monotonic()
    with pytest.raises(opencl.CompilerCacheLocked):
        opencl.get_kernel(opencl.queue_for(cl_device).context, cl_device, "gather.cl", "gather_strided",
                          ("-DNDIM=3", "-DT=uchar"))
    assert time.monotonic() - t0 < 5
    opencl.clear_caches()


def test_probe_reports_the_stale_lock(tmp_path, monkeypatch):
    lock = _stale_lock(tmp_path, monkeypatch)
    env = dict(os.environ, CLREDUCE_LOCK_TIMEOUT="1")
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "clreduce", "probe"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 1
    assert lock in out.stderr and "PYOPENCL_NO_CACHE" in out.stderr
    assert time.monotonic() - t0 < 60  # interpreter + OpenCL start-up; pyopencl alone would wait minutes
