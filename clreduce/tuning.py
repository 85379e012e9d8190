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
cannot be read or is not a tune file (not UTF-8, not JSON, nested past the parser's
recursion limit, the wrong shape) is ignored with one warning and replaced by the next
``save``. Writes go to a temporary file in the same folder and are renamed over the old one
(atomic on POSIX), so concurrent readers never see half a file; a writer holds an exclusive
lock on ``tune-<fingerprint>.lock`` (``fcntl.flock`` where it exists) while it re-reads the
file and merges its own winners into what is there, so two ``clreduce tune`` runs of one
device keep each other's winners.
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

try:
    import fcntl
except ImportError:  # Windows: no flock; saves still merge, with a short unlocked window
    fcntl = None

from . import config
from .caps import DeviceCaps
from .kernels import kernel_dirs
from .plan import Force, Problem

FORMAT = 1


class TuneCacheWarning(UserWarning):
    """A tune-cache file could not be used (corrupt, unreadable); it is ignored."""


class CorruptTuneFile(ValueError):
    """A tune-cache file's bytes are not a tune file (encoding, JSON or shape)."""


class TuneDirError(OSError):
    """The tune-cache folder cannot be created or written."""


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


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_entry(key: str, entry) -> None:
    """Raise CorruptTuneFile unless ``entry`` is what ``TuneCache.put`` writes."""
    if not isinstance(entry, dict) or not isinstance(entry.get("force"), dict):
        raise CorruptTuneFile(f"entry {key!r} is not an object with a 'force' object")
    try:
        Force(**entry["force"])  # every stored force must still be a valid Force
    except (TypeError, ValueError) as exc:
        raise CorruptTuneFile(f"entry {key!r}: {exc}") from None
    for name in ("gbps", "default_gbps"):
        if entry.get(name) is not None and not _is_number(entry[name]):
            raise CorruptTuneFile(f"entry {key!r}: {name} is not a number")
    if entry.get("plan") is not None and not isinstance(entry["plan"], str):
        raise CorruptTuneFile(f"entry {key!r}: plan is not a string")


def parse(raw: bytes) -> dict:
    """The tune-file object in ``raw``, validated; ``CorruptTuneFile`` when it is none.

    Parameters
    ----------
    raw : bytes
        A tune file's contents.

    Returns
    -------
    dict
        The file's object: ``entries`` maps bucket keys to valid entries, ``fingerprint``
        is an object or absent.

    Raises
    ------
    CorruptTuneFile
        Not UTF-8, not JSON, nested too deep for the parser, or not the tune-file shape.
    """
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise CorruptTuneFile(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except RecursionError:
        # json's C scanner recurses once per nested [ or {: '[' * 100000 exhausts the stack
        raise CorruptTuneFile("JSON nested too deeply") from None
    except ValueError as exc:
        raise CorruptTuneFile(f"not JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("entries"), dict):
        raise CorruptTuneFile("not a tune-cache object (no 'entries' object)")
    if data.get("fingerprint") is not None and not isinstance(data["fingerprint"], dict):
        raise CorruptTuneFile("'fingerprint' is not an object")
    for key, entry in data["entries"].items():
        _check_entry(key, entry)
    return data


def is_current(data: dict) -> bool:
    """Whether a parsed tune file was written by this clreduce version and kernel sources."""
    return (data.get("format") == FORMAT and data.get("clreduce") == _version()
            and data.get("sources") == sources_hash())


def check_writable(folder: Path | None = None) -> Path:
    """Create the tune-cache folder if needed and prove a file can be written there.

    ``clreduce tune`` asks this before its search, so a folder under a regular file or
    under ``/proc`` fails at once instead of after minutes of timings.

    Parameters
    ----------
    folder : Path, optional
        Default: ``cache_dir()``.

    Returns
    -------
    Path
        The folder.

    Raises
    ------
    TuneDirError
        The folder cannot be created, or a file cannot be created in it.
    """
    folder = Path(folder or cache_dir())
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".tune-probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise TuneDirError(f"tune cache folder {folder} cannot be written ({exc.strerror or exc}); "
                           "set CLREDUCE_TUNE_DIR to a writable folder") from None
    return folder


@contextlib.contextmanager
def _file_lock(path: Path):
    """Hold an exclusive ``flock`` on ``path`` (created if missing). Where flock does not
    exist or the filesystem refuses it (ENOLCK on some network mounts), run unlocked: the
    merge in ``save`` still keeps winners unless two saves interleave to the microsecond."""
    if fcntl is None:
        yield
        return
    fh = open(path, "a+b")  # noqa: SIM115 - closed below, after the lock is released
    try:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        except OSError:
            locked = False
        else:
            locked = True
        try:
            yield
        finally:
            if locked:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    finally:
        fh.close()


class TuneCache:
    """The winners of one device, loaded from and saved to its file.

    ``put`` and ``drop`` change ``entries`` and remember the change; ``save`` applies this
    object's changes to the file as it is at that moment, so winners another process saved
    meanwhile survive.
    """

    def __init__(self, caps: DeviceCaps, folder: Path | None = None):
        self.caps = caps
        self.path = (folder or cache_dir()) / f"tune-{fingerprint_id(caps)}.json"
        self.entries: dict[str, dict] = {}
        self.stale_reason: str | None = None
        self._changes: dict[str, dict | None] = {}
        self._load()

    @property
    def lock_path(self) -> Path:
        """The sidecar file ``save`` locks (not matched by ``tune-*.json``)."""
        return self.path.with_suffix(".lock")

    def _read(self, stacklevel: int) -> dict | None:
        """The file's valid object, or None (missing, or unusable: warned)."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            warnings.warn(f"tune cache {self.path} unreadable ({exc}); ignored", TuneCacheWarning,
                          stacklevel=stacklevel)
            return None
        try:
            return parse(raw)
        except CorruptTuneFile as exc:
            warnings.warn(f"tune cache {self.path} is corrupt ({exc}); ignored, and rewritten by the next "
                          "`clreduce tune`", TuneCacheWarning, stacklevel=stacklevel)
            return None

    def _load(self) -> None:
        data = self._read(stacklevel=4)
        if data is None:
            return
        if not is_current(data):
            self.stale_reason = (f"tuned with clreduce {data.get('clreduce')} / kernels {data.get('sources')}, "
                                 f"now {_version()} / {sources_hash()}")
            return
        self.entries = data["entries"]

    def winner(self, problem: Problem) -> Force | None:
        entry = self.entries.get(bucket_key(problem))
        return Force(**entry["force"]) if entry else None

    def put(self, problem: Problem, force: Force, **facts) -> None:
        """Store ``force`` as the winner of ``problem``'s bucket (written by ``save``)."""
        key = bucket_key(problem)
        self.entries[key] = {"force": dataclasses.asdict(force), **facts}
        self._changes[key] = self.entries[key]

    def drop(self, problem: Problem) -> None:
        """Forget ``problem``'s bucket's winner (the planner's own plan won), at ``save``."""
        key = bucket_key(problem)
        self.entries.pop(key, None)
        self._changes[key] = None

    def save(self) -> Path:
        """Merge this object's changes into the file as it is now and write it atomically.

        Under an exclusive lock on ``lock_path``: re-read the file (a current, valid one;
        a stale or corrupt one is replaced), apply the ``put``/``drop`` changes, write a
        temporary file in the same folder and rename it over the old one.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with _file_lock(self.lock_path):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", TuneCacheWarning)  # _load warned already
                current = self._read(stacklevel=2)
            entries = dict(current["entries"]) if current is not None and is_current(current) else {}
            for key, entry in self._changes.items():
                if entry is None:
                    entries.pop(key, None)
                else:
                    entries[key] = entry
            data = {"format": FORMAT, "fingerprint": fingerprint(self.caps), "clreduce": _version(),
                    "sources": sources_hash(), "entries": dict(sorted(entries.items()))}
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
        self.entries = data["entries"]
        self.stale_reason = None
        self._changes.clear()
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
    """Every tune file's fingerprint and entries (stale ones marked).

    A file that is unreadable or not a tune file (``parse``'s rules, the loader's) gives
    ``{"path", "error"}`` and nothing else from it.
    """
    folder = folder or cache_dir()
    out = []
    for path in sorted(folder.glob("tune-*.json")) if folder.is_dir() else ():
        try:
            data = parse(path.read_bytes())
        except (OSError, CorruptTuneFile) as exc:
            out.append({"path": str(path), "error": str(exc) if isinstance(exc, CorruptTuneFile)
                        else f"{type(exc).__name__}: {exc}"})
            continue
        out.append({"path": str(path), "fingerprint": data.get("fingerprint"), "current": is_current(data),
                    "entries": data["entries"]})
    return out


def speedup(entry: dict) -> float:
    """Tuned GB/s over the planner default's, from a stored entry."""
    gbps, default = entry.get("gbps"), entry.get("default_gbps")
    return gbps / default if gbps and default else math.nan
