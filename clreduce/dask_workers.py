"""Give every Dask worker its own OpenCL device (needs ``distributed``; imported only by you).

A worker's clreduce calls run on that process's default device, chosen once from its
``PYOPENCL_CTX`` or ``CLREDUCE_DEVICE`` (README, "Dask"). Where the workers of one host cannot
each be started with their own environment (``LocalCluster``, ``dask worker --nworkers N``),
register this plugin::

    from clreduce.dask_workers import DeviceAssignment
    client.register_plugin(DeviceAssignment(["0:0", "0:1", "0:2", "0:3"]))
"""

from __future__ import annotations

import os
import re
import sys

from distributed.diagnostics.plugin import WorkerPlugin


class DeviceAssignment(WorkerPlugin):
    """Set ``CLREDUCE_DEVICE`` (or ``variable``) in each worker process from its name.

    Parameters
    ----------
    selectors : list of str or dict of str
        A list: the worker whose name is (or ends in) the integer ``i`` gets
        ``selectors[i % len(selectors)]`` (``LocalCluster`` names its workers 0, 1, ...;
        ``dask worker --name gpu --nworkers 4`` names them gpu-0 ... gpu-3). A dict: worker
        name -> selector; a worker missing from it fails the registration.
        A selector is what ``CLREDUCE_DEVICE`` takes: ``P:D`` indices or a name substring.
    variable : str, optional
        ``"CLREDUCE_DEVICE"`` (default) or ``"PYOPENCL_CTX"``. PYOPENCL_CTX, when set in a
        worker's environment, wins over CLREDUCE_DEVICE.

    Notes
    -----
    Workers must be processes (``LocalCluster(processes=True)``, the default): the device is
    chosen once per process, so threads of one process share it. A worker that already ran
    clreduce forgets its device here and chooses again on its next task.
    """

    name = "clreduce-device-assignment"

    def __init__(self, selectors, variable: str = "CLREDUCE_DEVICE"):
        if variable not in ("CLREDUCE_DEVICE", "PYOPENCL_CTX"):
            raise ValueError(f"variable must be CLREDUCE_DEVICE or PYOPENCL_CTX, not {variable!r}")
        if isinstance(selectors, str) or not selectors:
            raise TypeError("selectors must be a non-empty list or dict of selector strings")
        self.selectors = dict(selectors) if isinstance(selectors, dict) else list(selectors)
        self.variable = variable

    def selector_for(self, worker_name) -> str:
        """The selector of the worker called ``worker_name``; ValueError when there is none."""
        if isinstance(self.selectors, dict):
            if worker_name not in self.selectors:
                raise ValueError(f"no device selector for dask worker {worker_name!r} "
                                 f"(selectors name {sorted(map(str, self.selectors))})")
            return self.selectors[worker_name]
        match = re.search(r"(\d+)$", str(worker_name))
        if match is None:
            raise ValueError(f"dask worker {worker_name!r} has no trailing number to pick a device by; "
                             "name the workers (dask worker --name gpu) or pass a dict")
        return self.selectors[int(match.group(1)) % len(self.selectors)]

    def setup(self, worker):
        os.environ[self.variable] = self.selector_for(worker.name)
        opencl = sys.modules.get("clreduce.backends.opencl")
        if opencl is not None:
            opencl._default_queue_and_reason.cache_clear()  # choose again, from the new variable
