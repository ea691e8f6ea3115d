"""The text screen as an RGB image, for ``render_mode="rgb_array"`` (video recorders, SB3's defaults).

Drawing needs Pillow and the DejaVu Sans Mono font that matplotlib ships: the
``plot`` extra (``pip install -e ".[plot]" in the turnbudget checkout``). They are imported on the
first frame, never by ``import turnbudget``; without them that first frame
raises ``gymnasium.error.DependencyNotInstalled`` saying what to install, as
Gymnasium's own envs do.
"""

from __future__ import annotations

import functools
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium.error import DependencyNotInstalled

__all__ = ["COLUMNS", "ROWS", "text_frame"]

#: The screen, in characters: a classic terminal. Every frame has the same size.
COLUMNS, ROWS = 80, 24
_FONT_SIZE = 14
_MARGIN = 8
_BACKGROUND, _FOREGROUND, _COMMAND = (16, 16, 24), (220, 220, 210), (120, 200, 255)


@functools.lru_cache(maxsize=1)
def _font() -> tuple[Any, int, int]:
    """(font, cell width, cell height), loaded once per process."""
    try:
        import matplotlib
        from PIL import ImageFont
    except ImportError as err:
        raise DependencyNotInstalled(
            f'render_mode="rgb_array" draws the text with Pillow and matplotlib\'s font ({err}): '
            'pip install -e ".[plot]" in the turnbudget checkout'
        ) from err
    path = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSansMono.ttf"
    font = ImageFont.truetype(str(path), _FONT_SIZE)
    ascent, descent = font.getmetrics()
    return font, round(font.getlength("M")), ascent + descent


def _lines(text: str, columns: int) -> list[str]:
    lines: list[str] = []
    for paragraph in text.splitlines() or [""]:
        lines.extend(textwrap.wrap(paragraph, columns, replace_whitespace=False) or [""])
    return lines


def text_frame(text: str, command: str | None = None) -> np.ndarray:
    """Draw ``text`` (after ``> command`` when given) on a `COLUMNS` x `ROWS` screen.

    Lines are wrapped at `COLUMNS`; when they overflow the screen the last
    `ROWS` are kept (the newest text, as in a terminal). The frame's sides are
    multiples of 16 pixels, as video encoders want.

    Returns:
        A ``uint8`` array of shape ``(height, width, 3)``, the same for every call.
    """
    font, cell_width, cell_height = _font()  # first: it says what to install
    from PIL import Image, ImageDraw

    rows = [(line, _FOREGROUND) for line in _lines(text, COLUMNS)]
    if command is not None:
        # Only its first screenful can show: wrapping a 10 MB command whole took a minute.
        shown = command[: COLUMNS * ROWS]
        rows = [(line, _COMMAND) for line in _lines(f"> {shown}", COLUMNS)] + rows
    width = -(-(COLUMNS * cell_width + 2 * _MARGIN) // 16) * 16
    height = -(-(ROWS * cell_height + 2 * _MARGIN) // 16) * 16
    image = Image.new("RGB", (width, height), _BACKGROUND)
    draw = ImageDraw.Draw(image)
    for row, (line, color) in enumerate(rows[-ROWS:]):
        draw.text((_MARGIN, _MARGIN + row * cell_height), line, font=font, fill=color)
    return np.asarray(image, dtype=np.uint8)
