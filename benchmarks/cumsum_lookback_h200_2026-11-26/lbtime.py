"""What the sweep scripts here share: GPU time per call between CUDA events, and EXTRA -D
pairs added to the look-back pass's build (PHASE 2) through the CUDA backend's get_kernel."""
import cupy as cp

from clreduce.backends.cuda import rowops as cuda_rowops

EXTRA = {}  # macro -> value (None: leave the plan's) for PHASE 2 builds
_get_kernel = cuda_rowops.get_kernel


def _with_extra(device_id, kernel_file, entry, defines):
    pairs = tuple(defines)
    if dict(pairs).get("PHASE") == "2":
        chosen = {k: str(v) for k, v in EXTRA.items() if v is not None}
        pairs = tuple(p for p in pairs if p[0] not in chosen) + tuple(chosen.items())
    return _get_kernel(device_id, kernel_file, entry, pairs)


cuda_rowops.get_kernel = _with_extra


def gpu_time(fn, n=10):
    """Seconds per call of ``fn`` over ``n`` back-to-back calls after one warm-up."""
    fn()
    cp.cuda.Device().synchronize()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(n):
        fn()
    end.record()
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end) / 1e3 / n
