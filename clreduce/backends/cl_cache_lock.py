"""Notice a stale pyopencl compiler-cache lock before pyopencl waits a minute on it.

pyopencl holds ``<cache dir>/lock`` only while it reads or writes one cache entry (file I/O,
never during a build), so a lock older than a few seconds was left by a process that died
holding it. pyopencl itself retries for 60 s, warning every 10 s, and the probe silences
warnings: the user saw a silent hang. This check names the file and the way out instead.
"""

from __future__ import annotations

import os
import sys
import time

from .. import config


class CompilerCacheLocked(TimeoutError):
    """pyopencl's compiler-cache lock file has been held longer than CLREDUCE_LOCK_TIMEOUT."""


def pyopencl_cache_dir() -> str | None:
    """The folder pyopencl's binary cache uses by default (None when caching is off)."""
    if os.environ.get("PYOPENCL_NO_CACHE"):
        return None
    xdg = os.environ.get("XDG_CACHE_HOME")
    if sys.platform == "darwin" and xdg is not None:
        base = os.path.join(xdg, "pyopencl")
    else:
        import platformdirs

        base = platformdirs.user_cache_dir("pyopencl", "pyopencl")
    version = ".".join(str(i) for i in sys.version_info)
    return os.path.join(base, f"pyopencl-compiler-cache-v2-py{version}")


def check_compiler_cache_lock(timeout: float | None = None) -> None:
    """Return at once when no lock is held; wait up to ``timeout`` seconds for a held one.

    Raises
    ------
    CompilerCacheLocked
        The lock is still there after ``timeout`` (default CLREDUCE_LOCK_TIMEOUT, 5 s); the
        message names the file and how to clear it.
    """
    folder = pyopencl_cache_dir()
    if folder is None:
        return
    lock = os.path.join(folder, "lock")
    timeout = config.lock_timeout() if timeout is None else timeout
    deadline = time.monotonic() + timeout
    while True:
        try:
            age = time.time() - os.stat(lock).st_mtime
        except FileNotFoundError:
            return
        except OSError:
            return  # unreadable folder: let pyopencl report what it finds
        if age > timeout or time.monotonic() > deadline:
            raise CompilerCacheLocked(
                f"pyopencl's compiler-cache lock {lock} has been held for {age:.0f} s; a process "
                f"that crashed while compiling leaves it behind. If no other pyopencl/clreduce "
                f"process is running, delete it (rm '{lock}'), or run with PYOPENCL_NO_CACHE=1. "
                f"(CLREDUCE_LOCK_TIMEOUT sets how long to wait, now {timeout:g} s)")
        time.sleep(0.05)
