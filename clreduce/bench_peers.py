"""The implementations ``clreduce bench`` times beside clreduce: numpy, torch (eager and
``torch.compile``) and onnxruntime, all on the host CPU.

Each peer is a factory ``make(op, shape, dtype) -> callable(numpy array) -> numpy array``
that does whatever one-time preparation the peer needs (compiling, building a graph) so
that the callable is what a user runs per call: numpy in, numpy out. A peer that is not
installed, or has no such reduction, is reported with the reason instead of a number.
"""

from __future__ import annotations

import os

import numpy as np

# The reductions every peer has under the same name and meaning (last axis, numpy dtypes).
PEER_OPS = ("sum", "mean", "max", "min")
PEERS = ("numpy", "torch", "torch.compile", "onnxruntime")


class PeerUnavailable(Exception):
    """The peer is not installed here, or cannot run this op."""


def host_threads() -> int:
    """Threads given to the multi-threaded peers: every core of this machine."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _numpy(op: str, shape, dtype):
    fn = getattr(np, op)
    return lambda x: fn(x, axis=-1)


def _torch_module():
    try:
        import torch
    except ImportError as exc:
        raise PeerUnavailable(f"torch not installed ({exc})") from None
    torch.set_num_threads(host_threads())
    return torch


def _torch_reduce(torch, op: str):
    if op in ("max", "min"):
        reduce = getattr(torch, "amax" if op == "max" else "amin")
        return lambda t: reduce(t, dim=-1)
    reduce = getattr(torch, op)
    return lambda t: reduce(t, dim=-1)


def _torch(op: str, shape, dtype):
    torch = _torch_module()
    reduce = _torch_reduce(torch, op)
    return lambda x: reduce(torch.from_numpy(x)).numpy()


def _torch_compile(op: str, shape, dtype):
    torch = _torch_module()
    compiled = torch.compile(_torch_reduce(torch, op), dynamic=False)
    try:
        compiled(torch.zeros(shape, dtype=getattr(torch, np.dtype(dtype).name)))  # compile now, not in the timing
    except Exception as exc:  # noqa: BLE001 - no C++ compiler, unsupported backend, ...
        raise PeerUnavailable(f"torch.compile failed: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}") from None
    return lambda x: compiled(torch.from_numpy(x)).numpy()


_ONNX_OPS = {"sum": "ReduceSum", "mean": "ReduceMean", "max": "ReduceMax", "min": "ReduceMin"}


def _onnxruntime(op: str, shape, dtype):
    try:
        import onnx
        import onnxruntime as ort
        from onnx import TensorProto, helper
    except ImportError as exc:
        raise PeerUnavailable(f"onnxruntime/onnx not installed ({exc})") from None
    elem = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16, "float64": TensorProto.DOUBLE}
    if np.dtype(dtype).name not in elem:
        raise PeerUnavailable(f"onnxruntime peer runs float dtypes only, not {dtype}")
    t = elem[np.dtype(dtype).name]
    # opset 18: every Reduce* takes its axes as a second input
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [-1])
    node = helper.make_node(_ONNX_OPS[op], ["X", "axes"], ["Y"], keepdims=0)
    graph = helper.make_graph([node], "reduce", [helper.make_tensor_value_info("X", t, list(shape))],
                              [helper.make_tensor_value_info("Y", t, list(shape[:-1]))], initializer=[axes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = min(model.ir_version, 9)  # the newest IR this onnxruntime reads may lag onnx's
    options = ort.SessionOptions()
    options.intra_op_num_threads = host_threads()
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    onnx.checker.check_model(model)
    return lambda x: session.run(None, {"X": x})[0]


_FACTORIES = {"numpy": _numpy, "torch": _torch, "torch.compile": _torch_compile, "onnxruntime": _onnxruntime}


def make_peer(name: str, op: str, shape, dtype):
    """The per-call function of peer ``name`` for ``op`` over the last axis of ``shape``.

    Raises
    ------
    PeerUnavailable
        The peer is not installed or cannot run the op; the message says which.
    """
    if name not in _FACTORIES:
        raise ValueError(f"unknown peer {name!r}; known: {', '.join(PEERS)}")
    if op not in PEER_OPS:
        raise PeerUnavailable(f"{name} has no last-axis {op} to compare with")
    return _FACTORIES[name](op, tuple(shape), dtype)
