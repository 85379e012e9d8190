"""What a backend provides. The api module speaks only this protocol."""

from __future__ import annotations

from typing import Any, Callable, Protocol

from ..caps import DeviceCaps
from ..plan import Force, Problem


class Backend(Protocol):
    """A GPU API (OpenCL, CUDA) able to run reduce plans.

    Arrays are "native" when they are of the backend's own kind (numpy for OpenCL, whose
    buffers are internal; cupy for CUDA). ``to_native`` turns a caller's array into a native
    one and returns the converter back to the caller's kind, so results come back as what
    went in.
    """

    name: str

    def unavailable_reason(self) -> str | None:
        """None when the backend can run here, else what is missing (import, driver, device)."""

    def owns(self, array: Any) -> bool:
        """True for arrays that live on this backend's devices (selection by array kind)."""

    def to_native(self, array: Any) -> tuple[Any, Callable[[Any], Any]]:
        """(native array, converter from native results to the caller's kind)."""

    def layout(self, native: Any, axes: tuple[int, ...], **where: Any) -> tuple[Any, int, int, int]:
        """``(source, outer, K, inner)``: the array the kernels read, as C-contiguous
        ``(outer, K, inner)`` with the reduced axes merged into K. In place when the reduced
        axes are adjacent in a C-contiguous array; otherwise one copy (reduced axes last)."""

    def reduce(self, source: Any, problem: Problem, *, force: Force | None, **where: Any) -> Any:
        """Run the plan; a native 1-D array of ``outer * inner`` results (device output dtype)."""

    def from_host(self, host: Any, like: Any, **where: Any) -> Any:
        """A small host result (empty reductions) moved to where ``like`` lives."""

    def write_out(self, out: Any, result: Any) -> None:
        """Copy ``result`` into the caller's ``out=`` array."""

    def caps(self, device: Any = None) -> DeviceCaps:
        """Capabilities of ``device`` (the backend's default device when None)."""
