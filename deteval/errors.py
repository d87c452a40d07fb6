"""One exception family for every kind of bad input.

Every error carries the file, the record and the reason, so that a user can find the faulty line without
reading a traceback. The CLI catches :class:`DetevalError` and prints ``str(error)`` with a non-zero exit.
"""

from __future__ import annotations

from os import PathLike
from typing import Any


class DetevalError(Exception):
    """Base class: ``DetevalError(reason, file=..., record=...)``.

    ``file`` is the path (or a description such as ``"<in-memory results>"``), ``record`` names the record:
    a line number, an object index, a JSON array index, ``"annotation id 17"``.
    """

    def __init__(
        self,
        reason: str,
        *,
        file: str | PathLike[str] | None = None,
        record: str | int | None = None,
    ) -> None:
        self.reason = reason
        self.file = None if file is None else str(file)
        self.record = record
        super().__init__(self._message())

    def _message(self) -> str:
        where = []
        if self.file is not None:
            where.append(self.file)
        if self.record is not None:
            rec = self.record
            where.append(f"record {rec}" if isinstance(rec, int) else str(rec))
        return f"{': '.join(where)}: {self.reason}" if where else self.reason

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        # pickled across processes (Dask workers, forked readers): Exception's default pickles only the
        # message, which would lose ``file`` and ``record``
        return (_rebuild, (type(self), self.reason, self.file, self.record))


def _rebuild(
    cls: type[DetevalError], reason: str, file: str | None, record: str | int | None
) -> DetevalError:
    return cls(reason, file=file, record=record)


class InputFormatError(DetevalError):
    """A file or in-memory input cannot be parsed: wrong syntax, wrong shape, wrong type."""


class ValidationError(DetevalError):
    """Parsed input whose values are invalid: NaN or inf, negative width, unknown or duplicate ids."""


class ConfigError(DetevalError):
    """An invalid protocol parameter, preset file or command-line combination."""


def first_true(bad: Any) -> int:
    """The index of the first true entry of the boolean array ``bad`` (flattened): the record an error names,
    the first at fault as a reader going through the records in order meets it; -1 where none is true."""
    return int(bad.argmax()) if bad.any() else -1


class DetevalWarning(UserWarning):
    """Base class of the warnings deteval emits through :mod:`warnings`.

    Whatever deteval tolerates is also listed in ``EvalResult.warnings``; a Python warning of this family is
    an extra signal for library users (``warnings.simplefilter("error", DetevalWarning)`` makes them fatal).
    """
