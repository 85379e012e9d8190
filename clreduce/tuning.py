"""The tune cache: measured plan winners per device, used by the planner's callers.

``clreduce tune`` (``clreduce.tuner``) searches plan variants per shape bucket and stores
the winner's ``Force`` here; ``tuned_force`` hands it back when a later call of the same
bucket runs on the same device, clreduce version and kernel sources. Nothing here touches
a device: the cache is plain JSON keyed by facts from ``DeviceCaps``.

Layout: one file per device fingerprint, ``<dir>/tune-<fingerprint>.json``::

    {"format": 1, "fingerprint": {...caps facts...}, "clreduce": "0.1.0",
     "sources": "<hash of every kernel file>",
     "entries": {"<bucket key>": {"force": {...}, "gbps": .., "default_gbps": .., "plan": ".."}}}

``<dir>`` is ``CLREDUCE_TUNE_DIR``, else the user cache directory (platformdirs). A file
whose clreduce version or kernel hash differs is stale and ignored (re-tune). A file that
cannot be read is ignored with one warning and replaced by the next ``save``. Writes go to
a temporary file in the same folder and are renamed over the old one (atomic on POSIX), so
concurrent readers never see half a file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import tempfile
import threading
import warnings
from pathlib import Path

from . import config
from .caps import DeviceCaps
from .kernels import kernel_dirs
from .plan import Force, Problem

FORMAT = 1


class TuneCacheWarning(UserWarning):
    """A tune-cache file could not be used (corrupt, unreadable); it is ignored."""


class _Suspend(threading.local):
    # a class default, so a thread that never suspended reads 0 without Python raising and
    # catching an AttributeError inside getattr(local, name, 0): ~1 us of state(), which the
    # fast path's signature asks on every call (fastpath.py)
    depth = 0


_suspend = _Suspend()


def enabled() -> bool:
    """False when ``CLREDUCE_TUNE=0`` (or ``off``/``false``/``no``), or inside ``suspended()``."""
    if _suspend.depth:
        return False
    return config.tune_enabled()


@contextlib.contextmanager
def suspended():
    """Ignore stored winners in this thread (the tuner measures the planner's default)."""
    _suspend.depth += 1
    try:
        yield
    finally:
        _suspend.depth -= 1


def cache_dir() -> Path:
    """``CLREDUCE_TUNE_DIR``, else ``platformdirs.user_cache_dir("clreduce")/tune``."""
    override = config.tune_dir()
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_cache_dir("clreduce")) / "tune"


def fingerprint(caps: DeviceCaps) -> dict:
    """The facts that make two devices "the same" for tuning: model, driver, platform."""
    return {"backend": caps.backend, "name": caps.name, "vendor_string": caps.vendor_string,
            "platform": caps.platform_name, "device_version": caps.device_version,
            "driver_version": caps.driver_version, "device_type": caps.device_type}


def fingerprint_id(caps: DeviceCaps) -> str:
    text = json.dumps(fingerprint(caps), sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def sources_hash() -> str:
    """One hash over every kernel source a plan may build (.cl and headers)."""
    digest = hashlib.sha256()
    for folder in kernel_dirs():
        if folder.is_dir():
            for path in sorted(folder.iterdir()):
                if path.suffix in (".cl", ".h", ".cuh", ".cu"):
                    digest.update(path.name.encode())
                    digest.update(path.read_bytes())
            break  # the first folder that exists is the one read_source uses
    return digest.hexdigest()[:16]


def _bucket(n: int) -> int:
    """Power-of-two bucket of a dimension: 1000 and 1023 tune together, 1024 apart."""
    return 1 << (max(int(n), 1).bit_length() - 1)


def bucket_key(problem: Problem) -> str:
    """``op/dtype/acc/layout/rows~R/k~K/inner~I``: problems with the same key share a winner."""
    layout = "rows" if problem.inner == 1 else "cols"
    return "/".join((problem.op, problem.dtype, problem.acc_dtype or "-", layout, f"rows~{_bucket(problem.rows)}",
                     f"k~{_bucket(problem.row_len)}", f"inner~{_bucket(problem.inner)}"))


def _version() -> str:
    from . import __version__

    return __version__


class TuneCache:
    """The winners of one device, loaded from and saved to its file."""

    def __init__(self, caps: DeviceCaps, folder: Path | None = None):
        self.caps = caps
        self.path = (folder or cache_dir()) / f"tune-{fingerprint_id(caps)}.json"
        self.entries: dict[str, dict] = {}
        self.stale_reason: str | None = None
        self._load()

    def _load(self) -> None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return
        except OSError as exc:
            warnings.warn(f"tune cache {self.path} unreadable ({exc}); ignored", TuneCacheWarning, stacklevel=3)
            return
        try:
            data = json.loads(text)
            if not isinstance(data, dict) or not isinstance(data.get("entries"), dict):
                raise ValueError("not a tune-cache object")
            for key, entry in data["entries"].items():
                Force(**entry["force"])  # every stored force must still be a valid Force
        except (ValueError, TypeError, KeyError) as exc:
            warnings.warn(f"tune cache {self.path} is corrupt ({type(exc).__name__}: {exc}); ignored, and "
                          "rewritten by the next `clreduce tune`", TuneCacheWarning, stacklevel=3)
            return
        if data.get("format") != FORMAT or data.get("clreduce") != _version() or data.get("sources") != sources_hash():
            self.stale_reason = (f"tuned with clreduce {data.get('clreduce')} / kernels {data.get('sources')}, "
                                 f"now {_version()} / {sources_hash()}")
            return
        self.entries = data["entries"]

    def winner(self, problem: Problem) -> Force | None:
        entry = self.entries.get(bucket_key(problem))
        return Force(**entry["force"]) if entry else None

    def put(self, problem: Problem, force: Force, **facts) -> None:
        self.entries[bucket_key(problem)] = {"force": dataclasses.asdict(force), **facts}

    def save(self) -> Path:
        """Write atomically: a temporary file in the same folder, renamed over the old one."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"format": FORMAT, "fingerprint": fingerprint(self.caps), "clreduce": _version(),
                "sources": sources_hash(), "entries": dict(sorted(self.entries.items()))}
        fd, tmp = tempfile.mkstemp(prefix=".tune-", suffix=".json", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh, indent=1)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        _forget()
        return self.path


_lock = threading.Lock()
_loaded: dict[tuple[str, str], TuneCache] = {}
_generation = [0]


def generation() -> int:
    """Bumped whenever winners change in this process (save, clear): plan caches that
    memoise a tuned plan key on it, so a new winner is used without a restart."""
    return _generation[0]


def state() -> tuple[int, int]:
    """(suspension depth in this thread, generation): what decides whether and which stored
    winners a plan uses, for caches above the plan cache (fastpath.py)."""
    return _suspend.depth, _generation[0]


def _forget() -> None:
    with _lock:
        _loaded.clear()
        _generation[0] += 1


def cache_for(caps: DeviceCaps) -> TuneCache:
    """The loaded cache of ``caps``'s device (read once per process and folder)."""
    key = (str(cache_dir()), fingerprint_id(caps))
    with _lock:
        cache = _loaded.get(key)
        if cache is None:
            cache = _loaded[key] = TuneCache(caps)
        return cache


def tuned_force(caps: DeviceCaps, problem: Problem, force: Force | None) -> Force | None:
    """The force a call should plan with: the caller's when it forces anything (or tuning is
    off), else the tuned winner of the problem's bucket, else None (the planner's choice)."""
    if force is not None and any(v is not None for v in dataclasses.astuple(force)):
        return force
    if not enabled():
        return force
    winner = cache_for(caps).winner(problem)
    return winner if winner is not None else force


def clear(folder: Path | None = None) -> list[Path]:
    """Delete every tune file in the cache folder; returns what was removed."""
    folder = folder or cache_dir()
    removed = []
    if folder.is_dir():
        for path in sorted(folder.glob("tune-*.json")):
            path.unlink()
            removed.append(path)
    _forget()
    return removed


def show(folder: Path | None = None) -> list[dict]:
    """Every tune file's fingerprint and entries (stale ones marked)."""
    folder = folder or cache_dir()
    out = []
    for path in sorted(folder.glob("tune-*.json")) if folder.is_dir() else ():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            out.append({"path": str(path), "error": f"{type(exc).__name__}: {exc}"})
            continue
        current = data.get("clreduce") == _version() and data.get("sources") == sources_hash()
        out.append({"path": str(path), "fingerprint": data.get("fingerprint"), "current": current,
                    "entries": data.get("entries", {})})
    return out


def speedup(entry: dict) -> float:
    """Tuned GB/s over the planner default's, from a stored entry."""
    gbps, default = entry.get("gbps"), entry.get("default_gbps")
    return gbps / default if gbps and default else math.nan
