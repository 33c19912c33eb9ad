"""The type stub (hal/__init__.pyi) says what the module has: every public name and every public
method of its classes, no more and no fewer, and it is valid Python."""

import ast
import pathlib

import hal

STUB = pathlib.Path(hal.__file__).with_name("__init__.pyi")
ALIASES = {"DTypeLike", "DeviceLike", "ShapeLike", "Number", "Operand", "Axes"}
DUNDERS = {"__dlpack__", "__dlpack_device__", "__enter__", "__exit__", "__array__", "__len__",
           "__getitem__"}


def stub_tree():
    return ast.parse(STUB.read_text(), filename=str(STUB))


def declared_names(body):
    names = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def public(names):
    return {n for n in names if not n.startswith("_") or n in DUNDERS}


def test_the_stub_declares_every_public_name_and_no_other():
    declared = public(declared_names(stub_tree().body)) - ALIASES
    assert declared == public(set(dir(hal)))


def test_the_stub_declares_every_method_of_each_class():
    classes = {n.name: n for n in stub_tree().body if isinstance(n, ast.ClassDef)}
    for name in ("Tensor", "Device", "Stream", "Event", "Model", "Workload", "Selection",
                 "DeviceScope", "CpuFallback"):
        cls = getattr(hal, name)
        declared = public(declared_names(classes[name].body))
        actual = public(set(dir(cls))) - public(set(dir(object)))
        assert declared == actual, name
