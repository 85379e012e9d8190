"""clreduce: fast row reductions on mobile GPUs through OpenCL.

>>> import numpy as np, clreduce
>>> clreduce.mean(np.ones((4, 8), np.float32), axis=-1)
array([1., 1., 1., 1.], dtype=float32)
"""

from .api import max, mean, min, sum
from .plan import Force

__all__ = ["sum", "mean", "max", "min", "Force"]
__version__ = "0.1.0"
