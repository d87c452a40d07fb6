"""The result model and its four exporters: round trips, CSV numbers, null handling, Markdown shape."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math

import markdown_it
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from report_samples import coco_result, mir_result, trec_result, voc_result

from deteval.errors import ConfigError, InputFormatError
from deteval.report import FORMATS, render
from deteval.report.tables import _neutral, display_fields, flatten, summary_fields
from deteval.results import EvalResult, PRCurve, load_result

SAMPLES = {"voc": voc_result, "coco": coco_result, "trec": trec_result, "mir": mir_result}


def _csv_sections(text: str) -> tuple[list[list[str]], dict[str, list[str]]]:
    rows = list(csv.reader(io.StringIO(text, newline="")))
    blank = rows.index([])
    fields: dict[str, list[str]] = {}
    for k, v in rows[blank + 2 :]:
        fields.setdefault(k, []).append(v)
    assert rows[blank + 1] == ["field", "value"]
    return rows[:blank], fields


@pytest.mark.parametrize("name", sorted(SAMPLES))
@pytest.mark.parametrize("fmt", FORMATS)
def test_json_round_trip_renders_identically(name, fmt):
    result = SAMPLES[name]()
    again = EvalResult.from_dict(json.loads(result.to_json(include_curves=True)))
    assert render(again, fmt) == render(result, fmt)
    assert again.to_dict(include_curves=True) == result.to_dict(include_curves=True)
    # and the JSON text is a fixed point
    assert again.to_json(include_curves=True) == result.to_json(include_curves=True)


def test_round_trip_keeps_curves_exactly():
    result = voc_result(3)
    again = EvalResult.from_json(result.to_json(include_curves=True))
    assert set(again.curves) == set(result.curves)
    for k, c in result.curves.items():
        np.testing.assert_array_equal(again.curves[k].recall, c.recall)
        np.testing.assert_array_equal(again.curves[k].precision, c.precision)
        np.testing.assert_array_equal(again.curves[k].scores, c.scores)
    assert EvalResult.from_json(result.to_json()).curves == {}  # curves only when asked for


def test_csv_parses_back_to_the_same_numbers():
    result = voc_result(5)
    header, fields = _csv_sections(render(result, "csv"))
    assert header[0] == ["class", "ap", "npos", "ndet", "tp", "fp"]
    assert [r[0] for r in header[1:]] == list(result.per_class)
    for row in header[1:]:
        expected = result.per_class[row[0]]
        assert float(row[1]) == expected["ap"]  # repr round-trips bit for bit
        assert [int(x) for x in row[2:]] == [expected[k] for k in ("npos", "ndet", "tp", "fp")]
    assert float(fields["map"][0]) == result.summary["map"]
    assert fields["protocol"] == ["voc"] and fields["metric"] == ["voc07"]
    assert fields["warning"] == result.warnings


def test_numpy_scalars_render_as_plain_numbers():
    # repr(np.float64(0.5)) is "np.float64(0.5)" under numpy 2: the exporters must not leak it.
    r = EvalResult(
        "voc",
        {"map": np.float64(0.5), "n": np.int64(3)},
        {"cat": {"ap": np.float32(0.25), "ok": np.bool_(True)}},
    )
    text = render(r, "csv")
    assert "np." not in text
    header, fields = _csv_sections(text)
    assert header == [["class", "ap", "ok"], ["cat", "0.25", "true"]]
    assert fields["map"] == ["0.5"] and fields["n"] == ["3"]
    assert "0.5000" in render(r, "table") and "np." not in render(r, "markdown")


def test_nan_and_inf_become_null_everywhere():
    r = EvalResult(
        "coco",
        {"x": float("nan"), "y": {"z": float("inf")}, "arr": np.array([1.0, -np.inf])},
        {"cat": {"ap": float("nan"), "ap50": 0.5}},
        {"cat": PRCurve([0.5, 1.0], [np.nan, 0.5])},
    )
    d = json.loads(r.to_json(include_curves=True))
    assert d["x"] is None and d["y"] == {"z": None} and d["arr"] == [1.0, None]
    assert d["per_class"]["cat"]["ap"] is None
    assert d["curves"]["cat"]["precision"] == [None, 0.5]
    assert "NaN" not in r.to_json(include_curves=True) and "Infinity" not in r.to_json()
    header, fields = _csv_sections(render(r, "csv"))
    assert header[1] == ["cat", "", "0.5"]
    assert fields["x"] == [""] and fields["y.z"] == [""] and fields["arr.1"] == [""]
    table = render(r, "table")
    assert "nan" not in table.lower() and "inf" not in table.lower()
    assert "x: -" in table
    back = EvalResult.from_dict(d)
    assert math.isnan(back.curves["cat"].precision[0])


def test_nested_summary_is_flattened_not_dropped():
    mir = mir_result()
    table = render(mir, "table")
    for key in ("pairwise.f", "boundary.0.5.f", "boundary.3.0.recall"):
        assert key in table
    assert "boundary.0.5.f: 0.6667" in table
    md = render(mir, "markdown")
    assert "| boundary.0.5.precision | 1.0000 |" in md
    coco = coco_result()
    md = render(coco, "markdown")
    assert all(f"| stats.{i} |" in md for i in range(12))
    assert "| stats.3 | -1.0000 |" in md
    # the table format prints the protocol's own lines instead
    assert render(coco, "table").startswith("\n".join(coco.lines))
    assert dict(summary_fields(trec_result()))["all.num_q"] == 2


def test_flatten_keeps_empty_containers_and_order():
    assert list(flatten({"a": {}, "b": [], "c": [{"d": 1}], "e": 2})) == [
        ("a", "{}"),
        ("b", "[]"),
        ("c.0.d", 1),
        ("e", 2),
    ]


def test_markdown_table_shape_and_escaping():
    r = voc_result()
    r.per_class["odd|name"] = {"ap": 0.5, "extra": "x|y"}
    md = render(r, "markdown").splitlines()
    assert md[0] == "## voc evaluation"
    start = md.index("| class | ap | npos | ndet | tp | fp | extra |")
    assert md[start + 1] == "|---|---|---|---|---|---|---|"
    body = md[start + 2 : start + 2 + len(r.per_class)]
    unescaped_pipes = [line.replace("\\|", "").count("|") for line in body]
    assert unescaped_pipes == [8] * len(r.per_class)
    assert body[-1] == "| odd\\|name | 0.5000 | - | - | - | - | x\\|y |"
    assert md[-1] == "> warning: 2 detections with an unknown image id were skipped"


def test_table_columns_union_and_alignment():
    r = EvalResult("voc", {"map": 0.5}, {"a": {"ap": 0.5}, "long name": {"ap": 0.25, "npos": 4}})
    assert render(r, "table") == (
        "map: 0.5000\n\n"
        "class          ap  npos\n"
        "---------  ------  ----\n"
        "a          0.5000     -\n"
        "long name  0.2500     4\n"
    )


def test_empty_result_renders_in_every_format():
    r = EvalResult("trec")
    assert render(r, "table") == "\n"
    assert render(r, "csv") == "field,value\nprotocol,trec\n"  # no lone "class" header without rows
    assert render(r, "markdown") == "## trec evaluation\n\n| field | value |\n|---|---|\n"
    assert json.loads(render(r, "json")) == {"protocol": "trec", "per_class": {}, "warnings": []}


def test_unknown_format_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown output format 'xml'"):
        render(voc_result(), "xml")


def test_summary_may_not_shadow_reserved_keys():
    with pytest.raises(ValueError, match="per_class"):
        EvalResult("voc", {"per_class": 1})


def test_prcurve_checks_lengths():
    with pytest.raises(ValueError):
        PRCurve([0.1, 0.2], [1.0])


@pytest.mark.parametrize(
    "text, message",
    [
        ("{", "invalid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"map": 1}', '"protocol"'),
        ('{"protocol": "voc", "per_class": [1]}', '"per_class"'),
        ('{"protocol": "voc", "per_class": {"cat": 3}}', "class 'cat'"),
        ('{"protocol": "voc", "curves": {"cat": {"recall": [1]}}}', "curve 'cat'"),
        ('{"protocol": "voc", "curves": {"cat": {"recall": ["a"], "precision": [1]}}}', "bad PR curve"),
        ('{"protocol": "voc", "warnings": "oops"}', '"warnings"'),
    ],
)
def test_bad_saved_results_name_the_file(tmp_path, text, message):
    path = tmp_path / "res.json"
    path.write_text(text)
    with pytest.raises(InputFormatError, match=message) as info:
        load_result(path)
    assert str(path) in str(info.value)


def test_json_syntax_error_names_the_line(tmp_path):
    path = tmp_path / "res.json"
    path.write_text('{\n "protocol": "voc",\n "map": 0.5,\n}\n')
    with pytest.raises(InputFormatError, match="line 4"):
        load_result(path)
    with pytest.raises(InputFormatError, match="cannot read"):
        load_result(tmp_path / "missing.json")


# --- property: any JSON-able result survives to_json -> from_dict with identical renderings ---------------


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.floats(width=32).map(np.float32),
    st.integers(-1000, 1000).map(np.int64),
)
_keys = st.text(min_size=1, max_size=6).filter(
    lambda k: k not in {"protocol", "per_class", "warnings", "lines", "curves"}
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_keys, inner, max_size=3)),
    max_leaves=8,
)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(
    summary=st.dictionaries(_keys, _values, max_size=5),
    per_class=st.dictionaries(
        st.text(min_size=1, max_size=6), st.dictionaries(_keys, _scalars, max_size=4), max_size=4
    ),
    warnings=st.lists(st.text(max_size=10), max_size=2),
)
def test_round_trip_property(summary, per_class, warnings):
    result = EvalResult("x", summary, per_class, warnings=warnings)
    again = EvalResult.from_dict(json.loads(result.to_json()))
    for fmt in FORMATS:
        assert render(again, fmt) == render(result, fmt)
    # the CSV parses back: class names (when there are any), then every summary field in order, numbers to
    # the JSON value; a text cell a spreadsheet would run as a formula comes back with a leading "'"
    rows = list(csv.reader(io.StringIO(render(result, "csv"), newline="")))
    blank = rows.index([]) if per_class else -1
    assert [r[0] for r in rows[1 : max(blank, 0)]] == [_neutral(str(k)) for k in per_class]
    flat = display_fields(again)
    cells = rows[blank + 3 : blank + 3 + len(flat)]
    assert [c[0] for c in cells] == [_neutral(k) for k, _ in flat]
    for (_, value), (_, cell) in zip(flat, cells):
        if isinstance(value, float):
            assert float(cell) == value
        elif value is None:
            assert cell == ""
    assert [c[1] for c in rows[blank + 3 + len(flat) :]] == [_neutral(w) for w in warnings]


def test_csv_quoting_matches_the_csv_module_and_handles_carriage_returns():
    rows = {"a,b": {"ap": 0.5}, 'q"q': {"ap": 0.25}, "cat\r": {"ap": 1.0}, "line\nbreak": {"ap": 0.0}}
    r = EvalResult("voc", {"note": 'say "hi", twice'}, rows)
    text = render(r, "csv")
    header, fields = _csv_sections(text)
    assert [row[0] for row in header[1:]] == ["a,b", 'q"q', "cat\r", "line\nbreak"]
    assert fields["note"] == ['say "hi", twice']
    plain = EvalResult("voc", {"map": 0.5}, {"a,b": {"ap": 0.5}, 'q"q': {"ap": 0.25}, "": {}})
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerows(
        [
            ["class", "ap"],
            ["a,b", "0.5"],
            ['q"q', "0.25"],
            ["", ""],
            [],
            ["field", "value"],
            ["protocol", "voc"],
            ["map", "0.5"],
        ]
    )
    assert render(plain, "csv") == buf.getvalue()


def test_markdown_shows_the_protocol_lines_in_a_code_block():
    coco = coco_result()
    md = render(coco, "markdown").splitlines()
    assert md[:3] == ["## coco evaluation", "", "```text"]
    assert md[3:15] == coco.lines and md[15] == "```"
    assert md[17] == "| field | value |"


def test_table_cells_never_show_negative_zero():
    from deteval.report.tables import format_cell

    assert format_cell(-2.220446049250313e-16, False) == "0.0000"
    assert format_cell(-0.00006, False) == "-0.0001"
    assert format_cell(-2.220446049250313e-16, True) == "-2.220446049250313e-16"


@pytest.mark.parametrize(
    "summary",
    [
        {"ci": {}},
        {"ci": {"a": 5}},
        {"ci": {"a": [1, 2, 3]}, "mdd": 5},
        {"ci": {"a": "x"}, "bootstrap": 3},
        {"comparison": {"a": 5}},
        {"comparison": {"a": {"b": 1}}, "compare_to": 3},
    ],
)
def test_statistics_fields_not_in_deteval_shape_render(summary):
    """A result read back from a hand-made JSON may carry ``ci``/``comparison`` fields of any shape: every format
    renders it; the table shows what it cannot read as statistics as plain fields."""
    result = EvalResult("x", summary, {})
    for fmt in FORMATS:
        assert render(result, fmt)
    table = render(result, "table")
    assert "confidence intervals" in table or all(k in table for k in summary if summary[k] != {})


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="`~ a\n", max_size=12), min_size=1, max_size=6))
def test_markdown_code_block_holds_any_lines_verbatim(lines):
    """The protocol's lines (image and class names included) come back from a CommonMark parser as one code
    block with exactly their text: no line of backticks or tildes closes the fence early."""
    result = dataclasses.replace(coco_result(), lines=lines)
    tokens = markdown_it.MarkdownIt("commonmark").parse(render(result, "markdown"))
    blocks = [t for t in tokens if t.type == "fence"]
    assert blocks, render(result, "markdown")
    assert blocks[0].content == "\n".join(lines) + "\n"
    assert blocks[0].info == "text"
