"""How every report writes a number, and the percentile bootstrap interval every report's intervals come from.

One marker for a value that is missing (``–``), so a table never mixes two; NaN counts as missing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

MISSING = "–"


def fmt(value: Any, digits: int = 3) -> str:
    """A float to ``digits`` decimals, anything else as ``str``, None or NaN as ``MISSING``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def pct(value: float | None) -> str:
    """A share as a percentage with one decimal (0.123 -> 12.3)."""
    return MISSING if value is None else f"{100 * value:.1f}"


def percentile_interval(resampled: Sequence[float] | np.ndarray, level: float = 0.95) -> list[float]:
    """The percentile bootstrap interval at ``level`` of a statistic's resampled values."""
    import numpy as np  # only here: report code that formats numbers loads no numpy

    tail = (1 - level) / 2 * 100
    return [float(np.percentile(resampled, tail)), float(np.percentile(resampled, 100 - tail))]
