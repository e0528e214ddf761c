"""Figures that a notebook shows: the path's and the sweep's PLplot figures (an SVG file with a
PNG beside it) as objects with IPython's rich-display methods."""
import os
from typing import Optional


class Figure(str):
    """A figure file: the path of its SVG (it is that str, so code that opened or copied the
    path keeps working) that Jupyter and IPython display as the image itself.

    path: the SVG file; png: the PNG beside it (same name), or None when absent. _repr_svg_ and
    _repr_png_ read the files when the figure is shown (None if they are gone, and the path is
    shown instead)."""

    @property
    def path(self) -> str:
        return str(self)

    @property
    def png(self) -> Optional[str]:
        p = os.path.splitext(str(self))[0] + ".png"
        return p if os.path.exists(p) else None

    def _read(self, path: Optional[str], mode: str):
        if path is None or not os.path.exists(path):
            return None
        with open(path, mode) as f:
            return f.read()

    def _repr_svg_(self) -> Optional[str]:
        return self._read(str(self), "r")

    def _repr_png_(self) -> Optional[bytes]:
        return self._read(self.png, "rb")

    def __repr__(self) -> str:
        return f"atf.Figure({str(self)!r})"

    def __reduce__(self):
        return (Figure, (str(self),))
