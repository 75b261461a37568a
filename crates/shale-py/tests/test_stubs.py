"""The type stubs (shale/_shale.pyi) say what the native module has: every class, method,
property and function in one is in the other, with the same parameters (names, kinds and
defaults). Catches a method added in Rust and forgotten in the stubs, or the reverse."""

import ast
import inspect
from pathlib import Path

import pytest

import shale
from shale import _shale

STUB = Path(_shale.__file__).with_name("_shale.pyi")
if not STUB.exists():  # an editable install keeps the stub beside the package sources
    STUB = Path(shale.__file__).with_name("_shale.pyi")

KINDS = {
    "posonly": inspect.Parameter.POSITIONAL_ONLY,
    "args": inspect.Parameter.POSITIONAL_OR_KEYWORD,
    "vararg": inspect.Parameter.VAR_POSITIONAL,
    "kwonly": inspect.Parameter.KEYWORD_ONLY,
    "kwarg": inspect.Parameter.VAR_KEYWORD,
}
# The special methods a stub must list (plyvel's context managers and iterators).
DUNDERS_CHECKED = {"__enter__", "__exit__", "__iter__", "__next__"}


def stub_params(fn):
    """(name, kind, default) of a stub function's parameters, `self`/`cls` left out."""
    a = fn.args
    out = []
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    for i, (arg, d) in enumerate(zip(positional, defaults)):
        if i == 0 and arg.arg in ("self", "cls"):
            continue
        kind = "posonly" if arg in a.posonlyargs else "args"
        out.append((arg.arg, KINDS[kind], d))
    if a.vararg:
        out.append(("*", KINDS["vararg"], None))
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append((arg.arg, KINDS["kwonly"], d))
    if a.kwarg:
        out.append(("**", KINDS["kwarg"], None))
    return [(n, k, None if d is None else ast.literal_eval(d)) for n, k, d in out]


def runtime_params(obj):
    out = []
    for p in inspect.signature(obj).parameters.values():
        if p.name in ("self", "cls") and p.kind == p.POSITIONAL_ONLY:
            continue
        kind = p.kind
        name = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(kind, p.name)
        default = None if p.default is p.empty else p.default
        out.append((name, kind, default))
    return out


def stub_tree():
    tree = ast.parse(STUB.read_text())
    classes, functions = {}, {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            members = {}
            for f in node.body:
                if isinstance(f, ast.FunctionDef):
                    members.setdefault(f.name, []).append(f)
            classes[node.name] = members
        elif isinstance(node, ast.FunctionDef):
            functions[node.name] = [node]
    return classes, functions


CLASSES, FUNCTIONS = stub_tree()


def is_property(fns):
    return any(
        isinstance(d, ast.Name) and d.id == "property" for f in fns for d in f.decorator_list
    )


def public(names):
    return {n for n in names if not n.startswith("_") or n in DUNDERS_CHECKED}


def test_stub_lists_the_module():
    runtime = {n for n in vars(_shale) if not n.startswith("_")}
    assert set(CLASSES) | set(FUNCTIONS) == runtime


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_class_members(name):
    cls = getattr(_shale, name)
    stub = CLASSES[name]
    assert public(stub) == public(vars(cls)), name
    for member, fns in stub.items():
        if member not in vars(cls) or is_property(fns) or member in ("__next__", "__iter__"):
            continue
        # The constructor's signature is the class's (pyo3 sets `__text_signature__`).
        got = runtime_params(cls if member == "__new__" else vars(cls)[member])
        if len(fns) == 1:
            assert stub_params(fns[0]) == got, f"{name}.{member}"
        else:  # overloads: each is the runtime signature less some optional parameters
            for f in fns:
                want = stub_params(f)
                names = {n for n, _, _ in want}
                assert want == [p for p in got if p[0] in names], f"{name}.{member}"
            assert set().union(*({n for n, _, _ in stub_params(f)} for f in fns)) == {
                n for n, _, _ in got
            }, f"{name}.{member}"


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_functions(name):
    want = stub_params(FUNCTIONS[name][0])
    got = runtime_params(getattr(_shale, name))
    # `**options` in the stub is `**_options` at runtime: `*` and `**` are compared by kind.
    assert want == got, name
