"""The shape of the package, enforced: layers, no cycles, one home per kernel, process code only in run/.

In the spirit of hotcoco's ``tests/architecture.rs``: every check reads the source of ``deteval/**`` with
``ast`` (nothing is imported) and fails naming the module and the name at fault.

1. ``cycle``: a module-level import that closes a cycle between modules of deteval; ``function_import``: an
   import inside a function of anything but an optional heavy dependency (:data:`HEAVY`), since such imports
   are how cycles hide.
2. ``layer``: an import against the layer order (:data:`LAYERS`, the order docs/architecture.md draws).
3. ``private``: a private name (``_x``) imported from another module.
4. ``envelope`` / ``levels`` / ``box_iou`` / ``rotated_iou``: ``maximum.accumulate`` / ``fmax.accumulate``, a
   recall-level ``linspace``/``arange``, a box-IoU formula, or a polygon clipping's half-plane test
   (``a·(b − c) − d·(e − f)``) outside its one home (:data:`HOMES`; deliberate copies that
   reproduce a tool's arithmetic live in modules named for that tool, listed there with the reason).
5. ``process``: ``os.fork``, ``multiprocessing``, ``mmap``, ``madvise`` or ``dask`` outside ``deteval/run/``.

Also: docs/architecture.md names every package of deteval/.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "deteval"

# Known exceptions: (check, module, name). The COCO reader maps a file read-only (mmap) to read it in pieces,
# which is reading, not scheduling. A violation in the vocabulary area
# (core, match, levels, IoU, greedy rules, tide, worst images, explain, Open Images, Ultralytics) is never
# listed here. An entry that no longer occurs fails the test, so the list only shrinks.
ALLOWLIST: frozenset[tuple[str, str, str]] = frozenset(
    {
        ("process", "deteval.io.coco.json_text", "mmap"),
    }
)

#: Layers from the bottom up: a module may import from its own layer and the layers below it. A module of
#: deteval is placed by its first name under ``deteval`` (``deteval`` itself: the package facade, on top).
#: ``results`` (the one ``EvalResult`` every protocol returns; it renders nothing) sits below the protocols
#: that build it and the runner that returns it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "syntax", "config", "collector"),
    ("core",),
    ("io", "tables"),
    ("match",),
    ("results", "tensors"),
    ("detection", "retrieval", "mir", "protocols"),
    ("run",),
    ("report", "analysis", "explain", "stats"),
    ("api", "metric_result"),
    ("commands",),
    ("cli", "__main__", ""),
)

#: Optional heavy dependencies: the only imports allowed inside functions (each with a comment saying so).
#: pycocotools is a dependency, but loaded only where masks are rasterised or compared: a bbox evaluation
#: never imports it (tests/test_cli_imports.py).
HEAVY = frozenset(
    {"matplotlib", "scipy", "dask", "distributed", "PIL", "torch", "msgspec", "orjson", "pycocotools"}
)

#: The one home of each kernel; every other module that holds a copy is named for the tool whose arithmetic it
#: reproduces, with the reason.
HOMES: dict[str, dict[str, str]] = {
    "envelope": {
        "deteval.core.*": "the precision envelope of ranked lists (every engine of the core)",
        "deteval.detection.ultralytics": "Ultralytics' compute_ap: envelope of its sentinel-padded curve",
        "deteval.stats.correction": "Holm's step-down adjusted p-values (a running max, not an envelope)",
        "deteval.io.json_ranges": "the last unescaped quote of a JSON scan (a running max of positions)",
    },
    "levels": {
        "deteval.core.levels": "every protocol's recall levels and IoU thresholds",
    },
    "box_iou": {
        "deteval.match.iou": "box IoU: pycocotools' bbIou (crowd), +1 pixel VOC, IoA",
        "deteval.detection.ultralytics": "Ultralytics' box_iou: float32, + 1e-7 in the union",
    },
    "rotated_iou": {
        "deteval.match.rotated": "rotated-box IoU: polygon clipping (hotcoco's arithmetic)",
    },
}

#: Process and memory-mapping code lives in the runner only.
RUNNER = "deteval.run"
PROCESS_MODULES = frozenset({"multiprocessing", "mmap", "dask", "distributed", "concurrent.futures.process"})


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the module imported (or the module a name is imported from)
    names: tuple[str, ...]  # names taken with ``from target import ...``
    line: int
    in_function: bool
    type_only: bool


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _sources() -> dict[str, tuple[Path, ast.Module]]:
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        out[_module_name(path)] = (path, ast.parse(path.read_text(encoding="utf-8"), str(path)))
    return out


def _is_package(module: str) -> bool:
    return (ROOT.joinpath(*module.split(".")) / "__init__.py").exists()


def _resolve(importer: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    if not _is_package(importer):
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(
    node: ast.AST, in_function: bool = False, type_only: bool = False
) -> Iterator[tuple[ast.AST, bool, bool]]:
    """Every node with whether it sits inside a function and inside ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        yield child, in_function, type_only
        inner_fn = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.body:
                yield stmt, in_function, True
                yield from _walk(stmt, in_function, True)
            for stmt in child.orelse:
                yield stmt, in_function, type_only
                yield from _walk(stmt, in_function, type_only)
            continue
        yield from _walk(child, inner_fn, type_only)


@cache
def _imports() -> tuple[Import, ...]:
    out = []
    for module, (_, tree) in _sources().items():
        for node, in_fn, type_only in _walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    out.append(Import(module, alias.name, (), node.lineno, in_fn, type_only))
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(module, node)
                names = tuple(a.name for a in node.names)
                out.append(Import(module, target, names, node.lineno, in_fn, type_only))
    return tuple(out)


def _deteval_targets(imp: Import) -> list[str]:
    """The deteval modules an import loads: ``from deteval.a import b`` loads ``deteval.a.b`` if b is a module."""
    if imp.target != "deteval" and not imp.target.startswith("deteval."):
        return []
    modules = _sources()
    subs = [f"{imp.target}.{n}" for n in imp.names if f"{imp.target}.{n}" in modules]
    if subs and len(subs) == len(imp.names):
        return subs
    return [imp.target, *subs]


def _layer(module: str) -> int:
    first = module.split(".")[1] if "." in module else ""
    for rank, names in enumerate(LAYERS):
        if first in names:
            return rank
    raise AssertionError(f"{module}: its package {first!r} is in no layer of LAYERS; place it there")


def _matches(module: str, pattern: str) -> bool:
    if pattern.endswith(".*"):
        return module == pattern[:-2] or module.startswith(pattern[:-1])
    return module == pattern


def _report(check: str, found: list[tuple[str, str, str]]) -> None:
    """Fail on the violations not in the allowlist; fail too on allowlist entries of this check that no longer
    occur (so the list only shrinks)."""
    found_set = set(found)
    new = sorted(v for v in found_set if v not in ALLOWLIST)
    stale = sorted(v for v in ALLOWLIST if v[0] == check and v not in found_set)
    assert not new, f"{check}: {len(new)} violation(s):\n" + "\n".join(f"  {v}" for v in new)
    assert not stale, f"{check}: allowlisted but gone (remove from ALLOWLIST):\n" + "\n".join(
        f"  {v}" for v in stale
    )


# --------------------------------------------------------------------------------------------- 1. cycles
def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for v in sorted(edges):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return out


def _module_edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for imp in _imports():
        if imp.in_function or imp.type_only:
            continue
        for target in _deteval_targets(imp):
            if target != imp.module:
                edges.setdefault(imp.module, set()).add(target)
    return edges


def test_no_import_cycle():
    edges = _module_edges()
    found = []
    for comp in _cycles(edges):
        members = set(comp)
        # Every import inside the cycle is a violation: the cycle is gone once any one of them is removed,
        # and listing them all names every place a fix may go.
        for m in comp:
            for t in sorted(edges.get(m, set()) & members):
                found.append(("cycle", m, t))
    _report("cycle", found)


def test_imports_inside_functions_are_heavy_optional_dependencies_only():
    found = []
    for imp in _imports():
        if not imp.in_function or imp.type_only:
            continue
        top = imp.target.split(".")[0]
        if top in HEAVY:
            continue
        found.append(("function_import", imp.module, imp.target))
    _report("function_import", found)


# ---------------------------------------------------------------------------------------------- 2. layers
def test_imports_follow_the_layer_order():
    found = []
    for imp in _imports():
        if imp.type_only:
            continue
        for target in _deteval_targets(imp):
            if _layer(target) > _layer(imp.module):
                found.append(("layer", imp.module, target))
    _report("layer", found)


# ------------------------------------------------------------------------------------ 3. private names
def test_no_private_name_is_imported_from_another_module():
    found = []
    for imp in _imports():
        if not (imp.target == "deteval" or imp.target.startswith("deteval.")):
            continue
        for name in imp.names:
            if name.startswith("_") and not name.startswith("__"):
                found.append(("private", imp.module, f"{imp.target}.{name}"))
    # module._name on a deteval module bound by ``import deteval.x as m`` / ``from deteval import x``
    for module, (_, tree) in _sources().items():
        aliases = {}
        for node, _, _ in _walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("deteval.") and a.asname:
                        aliases[a.asname] = a.name
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(module, node)
                for a in node.names:
                    if f"{target}.{a.name}" in _sources():
                        aliases[a.asname or a.name] = f"{target}.{a.name}"
        for node, _, _ in _walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and aliases[node.value.id] != module
            ):
                found.append(("private", module, f"{aliases[node.value.id]}.{node.attr}"))
    _report("private", found)


# --------------------------------------------------------------------------------------- 4. one home each
def _call_name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _number(node: ast.AST) -> float | None:
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
    ):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _number(node.operand)
        return None if v is None else -v
    return None


def _is_level_range(node: ast.AST) -> bool:
    """``linspace``/``arange`` between two literal numbers within [0, 1.1]: recall levels or IoU thresholds."""
    if not (
        isinstance(node, ast.Call) and _call_name(node) in ("linspace", "arange") and len(node.args) >= 2
    ):
        return False
    lo, hi = _number(node.args[0]), _number(node.args[1])
    return lo is not None and hi is not None and 0.0 <= lo < hi <= 1.1


def _is_level_comprehension(node: ast.AST) -> bool:
    """``[x / 100 for x in range(101)]`` or ``[k * 0.1 for k in range(11)]``: levels written as a list."""
    if not isinstance(node, (ast.ListComp, ast.GeneratorExp)) or len(node.generators) != 1:
        return False
    it = node.generators[0].iter
    if not (isinstance(it, ast.Call) and _call_name(it) == "range" and len(it.args) == 1):
        return False
    n = _number(it.args[0])
    has_scale = any(
        isinstance(b, ast.BinOp) and isinstance(b.op, (ast.Div, ast.Mult)) for b in ast.walk(node.elt)
    )
    return n in (11.0, 101.0) and has_scale


def _is_extent(node: ast.AST) -> bool:
    """``minimum(...) − maximum(...)``: the overlap of two intervals along one axis (or more)."""
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Sub)
        and _call_name(node.left) == "minimum"
        and _call_name(node.right) == "maximum"
    )


def _is_side_test(node: ast.AST) -> bool:
    """``a·(b − c) − d·(e − f)``: the side of an edge a point lies on (a 2-D cross product), the half-plane
    test of polygon clipping."""

    def scaled_difference(n: ast.AST) -> bool:
        return (
            isinstance(n, ast.BinOp)
            and isinstance(n.op, ast.Mult)
            and any(isinstance(x, ast.BinOp) and isinstance(x.op, ast.Sub) for x in (n.left, n.right))
        )

    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Sub)
        and scaled_difference(node.left)
        and scaled_difference(node.right)
    )


def _axes(extent: ast.AST) -> int:
    """2 when the extent spans coordinates at once (``a[..., 2:]``, ``a[:, :2]``), else 1 (``a[:, 0]``)."""
    sliced = any(
        isinstance(k, ast.Slice) and (k.lower is not None or k.upper is not None)
        for n in ast.walk(extent)
        if isinstance(n, ast.Subscript)
        for k in ast.walk(n.slice)
    )
    return 2 if sliced else 1


def _functions(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node


@cache  # (read by two tests per check)
def _kernel_uses(check: str) -> list[tuple[str, str, str]]:
    found = []
    for module, (_, tree) in _sources().items():
        if check == "envelope":
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Attribute)
                    and node.attr == "accumulate"
                    and _call_name(node.value) in ("maximum", "fmax")
                ):
                    found.append((check, module, f"{_call_name(node.value)}.accumulate"))
        elif check == "levels":
            for node in ast.walk(tree):
                if _is_level_range(node) or _is_level_comprehension(node):
                    found.append((check, module, ast.unparse(node)[:60]))
        elif check == "rotated_iou":
            for name, fn in _functions(tree):
                if any(_is_side_test(n) for n in ast.walk(fn)):
                    found.append((check, module, name))
        else:  # box IoU: overlap extents along two axes in one function
            for name, fn in _functions(tree):
                nested = {
                    n
                    for f in ast.walk(fn)
                    if f is not fn and isinstance(f, ast.FunctionDef)
                    for n in ast.walk(f)
                }
                if sum(_axes(n) for n in ast.walk(fn) if _is_extent(n) and n not in nested) >= 2:
                    found.append((check, module, name))
    return sorted(set(found))


def _outside_homes(check: str) -> list[tuple[str, str, str]]:
    homes = HOMES[check]
    return [v for v in _kernel_uses(check) if not any(_matches(v[1], h) for h in homes)]


@pytest.mark.parametrize("check", sorted(HOMES))
def test_each_kernel_has_one_home(check):
    _report(check, _outside_homes(check))


def test_every_home_exists_and_holds_its_kernel():
    # A home that no longer holds the kernel would be an exemption nobody needs: remove it from HOMES.
    for check, homes in HOMES.items():
        holders = {v[1] for v in _kernel_uses(check)}
        for home in homes:
            assert any(_matches(m, home) for m in holders), f"{check}: {home} holds no such kernel"


def test_the_checks_see_the_kernels_they_look_for():
    # The detectors must find what they are meant to find, on text written the usual ways.
    src = ast.parse(
        "def f(a, b):\n"
        "    iw = np.minimum(a[2], b[2]) - np.maximum(a[0], b[0])\n"
        "    ih = np.minimum(a[3], b[3]) - np.maximum(a[1], b[1])\n"
        "    return np.maximum.accumulate(iw * ih)\n"
        "L = np.linspace(0.0, 1.0, 101)\n"
        "V = np.arange(0.0, 1.1, 0.1)\n"
        "T = [x / 100 for x in range(101)]\n"
        "S = np.linspace(0, n, p + 1)\n"
    )
    fn = next(n for n in ast.walk(src) if isinstance(n, ast.FunctionDef))
    assert sum(_axes(n) for n in ast.walk(fn) if _is_extent(n)) == 2
    both = ast.parse("wh = np.minimum(a[..., 2:], b[..., 2:]) - np.maximum(a[..., :2], b[..., :2])").body[0]
    assert [_axes(n) for n in ast.walk(both) if _is_extent(n)] == [2]
    one = ast.parse("w = np.minimum(a[:, 1], b[:, 1]) - np.maximum(a[:, 0], b[:, 0])").body[0]
    assert [_axes(n) for n in ast.walk(one) if _is_extent(n)] == [1]  # one interval: not a box
    assert [
        _is_level_range(n)
        for n in ast.walk(src)
        if isinstance(n, ast.Call) and _call_name(n) in ("linspace", "arange")
    ] == [True, True, False]
    assert sum(_is_level_comprehension(n) for n in ast.walk(src)) == 1
    side = ast.parse("c = (ex - sx) * (py - sy) - (ey - sy) * (px - sx)").body[0]
    assert sum(_is_side_test(n) for n in ast.walk(side)) == 1


# ------------------------------------------------------------------------------------ 5. process code
def _process_uses(module: str, tree: ast.Module) -> Iterator[str]:
    for node, _, _ in _walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in PROCESS_MODULES or a.name.split(".")[0] in PROCESS_MODULES:
                    yield a.name
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node)
            if target in PROCESS_MODULES or target.split(".")[0] in PROCESS_MODULES:
                yield target
        elif isinstance(node, ast.Attribute):
            if node.attr == "fork" and isinstance(node.value, ast.Name) and node.value.id == "os":
                yield "os.fork"
            elif node.attr == "madvise" or node.attr.startswith("MADV_"):
                yield "madvise"
        elif isinstance(node, ast.Name) and (node.id == "madvise" or node.id.startswith("MADV_")):
            yield "madvise"


def test_process_code_lives_in_the_runner_only():
    found = []
    for module, (_, tree) in _sources().items():
        if _matches(module, RUNNER + ".*"):
            continue
        for what in _process_uses(module, tree):
            found.append(("process", module, what))
    _report("process", sorted(set(found)))


# ------------------------------------------------------------------------------------------------- docs
def test_architecture_doc_names_every_package():
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    packages = sorted(p.parent.name for p in PKG.glob("*/__init__.py"))
    missing = [p for p in packages if not re.search(rf"(deteval/{p}\b|`{p}/`|\b{p}/)", doc)]
    _report("docs", [("docs", f"deteval.{p}", "docs/architecture.md") for p in missing])


def test_every_package_has_a_layer():
    for p in sorted(PKG.glob("*/__init__.py")):
        _layer(f"deteval.{p.parent.name}")
    for p in sorted(PKG.glob("*.py")):
        _layer(_module_name(p))
