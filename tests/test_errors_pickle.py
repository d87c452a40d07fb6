"""DetevalError survives pickling (Dask workers and forked readers send errors back to the caller)."""

from __future__ import annotations

import pickle

import pytest

from deteval.errors import ConfigError, DetevalError, InputFormatError, ValidationError


@pytest.mark.parametrize("cls", [DetevalError, InputFormatError, ValidationError, ConfigError])
@pytest.mark.parametrize("record", [None, 7, "annotation id 17"])
def test_pickle_keeps_type_file_record_and_message(cls: type[DetevalError], record: str | int | None) -> None:
    err = cls("negative width", file="dt.json", record=record)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is cls
    assert (back.reason, back.file, back.record) == ("negative width", "dt.json", record)
    assert str(back) == str(err)
