"""Fuzzing option strings and preset files (issue 12): every subcommand, given a random or damaged value
for any of its options (on the command line or in a ``--config`` TOML file), ends with a result (exit 0)
or one ``deteval: error:`` line (exit 2), never a traceback, another exit status or a huge allocation.
Derandomized like the other fuzz tests (``DETEVAL_FUZZ_SCALE`` hunts with fresh examples)."""

from __future__ import annotations

import contextlib
import io
import tempfile
import warnings
from pathlib import Path

from cli_errors import ROOT
from fuzz_mutations import fuzz_settings, mutated
from hypothesis import given
from hypothesis import strategies as st
from test_errors_options import BASE

from deteval.cli import main

CONFIGS = ROOT / "configs"

# Options with a value, per subcommand, and a valid value of each (mutated into bad ones).
OPTIONS = {
    "voc": {"--iou": "0.5", "--classes": "car,dog", "--metric": "voc07", "--profile": "voc_devkit",
            "--layout": "comp4", "--unknown-images": "warn", "--on-error": "skip", "--format": "json"},
    "coco": {"--iou-thrs": "0.5:0.95:10", "--rec-thrs": "linspace(0, 1, 101)", "--max-dets": "1,10,100",
             "--area-rng": "0,1e10;0,1024;1024,9216;9216,1e10", "--area-lbl": "all,small,medium,large",
             "--use-cats": "true", "--kpt-oks-sigmas": "0.1,0.2", "--iou-type": "bbox", "--compat": "fixed"},
    "mir": {"--tau": "0.5", "--frame-rate": "10", "--rule": "fmp", "--grid": "mir_eval", "--format": "csv"},
    "trec": {"-l": "1", "-M": "100", "-m": "P.5,10", "--gain": "exp2", "--format": "json"},
}  # fmt: skip
PRESETS = {
    "voc": ["voc07", "py_faster_rcnn"],
    "coco": ["coco", "coco_fixed"],
    "mir": ["mir_eval_segment", "fmp_boundary"],
}

# Values that have broken option parsers: special numbers, other scripts' digits, separators, huge counts.
OPTION_TOKENS = [
    "", " ", "nan", "inf", "-inf", "1e999", "-1", "0", "-0", "1_0", "0x10", "\u0665", "\uff15", "1e308", "9" * 40,
    "1.9", ",", ";", ":", ",,", "0,1e10,5", "0,1e10;5", "0.5:0.95:100000000", "linspace(0, 1, 1e9)",
    "linspace(0,1,99999999999)", "true", "false", "maybe", "\u2028", "a,a", "1,1", "0:1:0", "5,1", "(", "[]",
]  # fmt: skip


def _run(argv: list[str]) -> None:
    """Run the CLI in process; exit 0, or 2 with one error line (argparse's own usage errors included);
    a numpy RuntimeWarning fails the run."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no numpy overflow or division warning leaks out
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse: an unknown choice or a missing value
            code = exc.code
            assert code == 2 and "error: argument" in err.getvalue(), err.getvalue()
            return
    text = err.getvalue()
    assert "Traceback" not in text
    if code == 0:
        assert out.getvalue(), argv
    else:
        assert code == 2, (argv, text)
        errors = [line for line in text.splitlines() if line.startswith("deteval: error: ")]
        assert len(errors) == 1 and text.endswith("\n"), text


@st.composite
def option_value(draw, valid: str) -> str:
    kind = draw(st.sampled_from(("token", "mutated", "text", "joined")))
    if kind == "token":
        return draw(st.sampled_from(OPTION_TOKENS))
    if kind == "mutated":
        return draw(mutated(valid.encode(), max_ops=3)).decode("utf-8", "replace").replace("\x00", "")
    if kind == "joined":
        parts = draw(st.lists(st.sampled_from(OPTION_TOKENS + [valid]), min_size=1, max_size=4))
        return draw(st.sampled_from((",", ";", ":", " "))).join(parts)
    return draw(st.text(alphabet="0123456789.,;:-+eE_ ()linspace\u0660\u2028", max_size=20))


@fuzz_settings(150)
@given(data=st.data(), command=st.sampled_from(sorted(OPTIONS)))
def test_fuzz_option_strings(data, command):
    flags = OPTIONS[command]
    chosen = data.draw(st.lists(st.sampled_from(sorted(flags)), min_size=1, max_size=3, unique=True))
    argv = list(BASE[command])
    for flag in chosen:
        argv.append(f"{flag}={data.draw(option_value(flags[flag]))}")
    _run([*argv, "--quiet"])


# TOML values of every type, and the coercion traps.
TOML_VALUES = [
    "true", "false", '"false"', '"true"', "1", "0", "-1", "1.9", "nan", "inf", "-inf", "1e308", '"0.5"', '""',
    "[]", "[1.9, 10.7, 100]", "[true, 10]", "[[0, 1e10, 5]]", '"0,1e10;5"', '"0.5:0.95:100000000"', "{a = 1}",
    "1979-05-27", "07:32:00", '["0.5", "x"]', "[[0.0, 1e10], [0.0, 1024.0]]", '"voc07"', '"fmp"', "99999999999",
    '["car", ""]', '"\\u2028"', '"1_0"', "[0.1, 0.0]",
]  # fmt: skip


@fuzz_settings(120)
@given(data=st.data(), command=st.sampled_from(sorted(PRESETS)))
def test_fuzz_preset_files(data, command):
    text = (CONFIGS / f"{data.draw(st.sampled_from(PRESETS[command]))}.toml").read_text(encoding="utf-8")
    lines = text.splitlines()
    how = data.draw(st.sampled_from(("replace", "add", "mutate")))
    if how == "mutate":
        preset = data.draw(mutated(text.encode(), max_ops=3))
    else:
        key = data.draw(
            st.sampled_from(
                sorted({ln.split("=")[0].strip() for ln in lines if "=" in ln} | {"on-error", "format"})
            )
        )
        value = data.draw(st.sampled_from(TOML_VALUES))
        kept = [ln for ln in lines if how == "add" or ln.split("=")[0].strip() != key]
        preset = "\n".join([*kept, f"{key} = {value}", ""]).encode("utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.toml"
        path.write_bytes(preset)
        _run([*BASE[command], "--config", str(path), "--quiet"])
