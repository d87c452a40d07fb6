"""deteval: one ranked-retrieval core scoring object detection (VOC, COCO), document retrieval (TREC) and MIR."""

__version__ = "0.1.0"

from deteval.errors import (  # noqa: E402
    ConfigError,
    DetevalError,
    DetevalWarning,
    InputFormatError,
    ValidationError,
)
from deteval.results import EvalResult, PRCurve  # noqa: E402
from deteval.api import MeanAveragePrecision  # noqa: E402

__all__ = [
    "ConfigError",
    "DetevalError",
    "DetevalWarning",
    "EvalResult",
    "InputFormatError",
    "MeanAveragePrecision",
    "PRCurve",
    "ValidationError",
    "__version__",
]
