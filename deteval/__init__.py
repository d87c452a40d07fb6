"""deteval: one ranked-retrieval core scoring object detection (VOC, COCO), document retrieval (TREC) and MIR."""

__version__ = "0.1.0"

from deteval.api import MeanAveragePrecision
from deteval.errors import (
    ConfigError,
    DetevalError,
    DetevalWarning,
    InputFormatError,
    ValidationError,
)
from deteval.results import EvalResult, PRCurve

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
