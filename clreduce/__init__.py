"""clreduce: fast reductions on mobile GPUs through OpenCL, with numpy's semantics.

>>> import numpy as np, clreduce
>>> clreduce.mean(np.ones((4, 8), np.float32), axis=-1)
array([1., 1., 1., 1.], dtype=float32)
"""

from .api import (all, any, argmax, argmin, count_nonzero, logsumexp, max, mean, min, nanmax, nanmean,
                  nanmin, nansum, norm, prod, std, sum, var)
from .plan import Force, UnsupportedOnDevice
from .plan_rowops import RowForce
from .rowops import (absmax_scale, cumprod, cumsum, dequantize, logcumsumexp, layer_norm, log_softmax, moments, quantize_int8, rms_norm,
                     softmax)

__all__ = [
    "sum", "mean", "prod", "max", "min", "any", "all", "count_nonzero", "nansum", "nanmean", "nanmax",
    "nanmin", "var", "std", "argmax", "argmin", "logsumexp", "norm", "Force", "RowForce", "UnsupportedOnDevice",
    "softmax", "log_softmax", "rms_norm", "layer_norm", "moments", "absmax_scale", "quantize_int8", "dequantize",
    "cumsum", "cumprod", "logcumsumexp",
]
__version__ = "0.1.0"
