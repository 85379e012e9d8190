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

    def rows_view(self, native: Any, order: list[int], rows: int, row_len: int) -> Any:
        """C-contiguous ``(rows, row_len)`` array of ``native`` transposed to ``order``."""

    def reduce_rows(self, rows2d: Any, problem: Problem, *, force: Force | None, **options: Any) -> Any:
        """Reduce each row; returns a native 1-D array of the plan's device output dtype."""

    def caps(self, device: Any = None) -> DeviceCaps:
        """Capabilities of ``device`` (the backend's default device when None)."""
