"""The type stub (hal/__init__.pyi) says what the module has: every public name and every public
method of its classes, no more and no fewer, each bound function with the parameters and defaults
the module gives it, and it is valid Python."""

import ast
import pathlib

import hal

STUB = pathlib.Path(hal.__file__).with_name("__init__.pyi")
OPTIM_STUB = pathlib.Path(hal.__file__).with_name("optim.pyi")
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
        elif isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is None:
            names.update(alias.asname or alias.name for alias in node.names)  # a submodule
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


def split_top_level(text):
    """`text` cut at the commas outside brackets (List[int, str] stays one piece)."""
    pieces, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char in "[(":
            depth += 1
        elif char in "])":
            depth -= 1
        elif char == "," and depth == 0:
            pieces.append(text[start:i].strip())
            start = i + 1
    pieces.append(text[start:].strip())
    return [piece for piece in pieces if piece]


def pybind_signature(function, name):
    """The parameters pybind11 writes in `function`'s docstring ("name(a: int, b: handle = None)
    -> ..."), as (name, default text or None), self left out; None where it has no such line or
    several (an overloaded function)."""
    doc = getattr(function, "__doc__", None) or ""
    lines = [line for line in doc.splitlines() if line.startswith(f"{name}(") and ") -> " in line]
    if len(lines) != 1:
        return None
    text = lines[0][len(name) + 1:lines[0].rindex(") -> ")]
    result = []
    for param in split_top_level(text):
        head, _, default = param.partition(" = ")
        result.append((head.partition(":")[0].strip(), default or None))
    return [p for p in result if p[0] != "self"]


def stub_signature(function):
    """The parameters a stub's def declares, as pybind_signature gives them (defaults as ast)."""
    args = function.args
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    result = list(zip((a.arg for a in positional), defaults))
    if args.vararg:
        result.append(("*" + args.vararg.arg, None))
    elif args.kwonlyargs:
        result.append(("*", None))
    result += list(zip((a.arg for a in args.kwonlyargs), args.kw_defaults))
    if args.kwarg:
        result.append(("**" + args.kwarg.arg, None))
    return [p for p in result if p[0] != "self"]


def same_default(stub, actual):
    """A stub's default (an expression) against pybind11's repr of the real one. `...` stands for
    a value a stub cannot spell (hal.DType.f32, which pybind11 writes <DType.f32: 0>)."""
    if (stub is None) != (actual is None):
        return False
    if stub is None or (isinstance(stub, ast.Constant) and stub.value is Ellipsis):
        return True
    try:
        return ast.literal_eval(stub) == ast.literal_eval(actual)
    except ValueError:
        return False


def same_name(declared, actual):
    # argN: pybind11's name for a parameter the binding left unnamed (an operator's other side);
    # *args and **kwargs are no names a caller gives.
    if declared.startswith("*") or actual.startswith("*"):
        return len(declared) - len(declared.lstrip("*")) == len(actual) - len(actual.lstrip("*"))
    return declared == actual or (actual.startswith("arg") and actual[3:].isdigit())


def test_the_optim_stub_declares_every_name_and_method_of_hal_optim():
    tree = ast.parse(OPTIM_STUB.read_text(), filename=str(OPTIM_STUB))
    assert public(declared_names(tree.body)) == public(set(dir(hal.optim)))
    for node in tree.body:
        if isinstance(node, ast.ClassDef):  # what each class adds to its bases
            cls = getattr(hal.optim, node.name)
            assert public(declared_names(node.body)) == public(set(vars(cls))), node.name


def stub_scopes(module, prefix, body):
    scopes = [(module, prefix, body)]
    scopes += [(getattr(module, node.name), f"{prefix}{node.name}.", node.body)
               for node in body if isinstance(node, ast.ClassDef)]
    return scopes


def test_the_stub_gives_each_bound_function_its_parameters_and_defaults():
    # Names, order, keyword-only marks, which have defaults and what they are, as the module's
    # own signatures (pybind11's docstrings) say.
    scopes = stub_scopes(hal, "hal.", stub_tree().body)
    scopes += stub_scopes(hal.optim, "hal.optim.", ast.parse(OPTIM_STUB.read_text()).body)
    checked, wrong = 0, []
    for owner, prefix, body in scopes:
        for node in body:
            if not isinstance(node, ast.FunctionDef):
                continue
            if {ast.unparse(d) for d in node.decorator_list} & {"property", "overload"}:
                continue
            actual = pybind_signature(getattr(owner, node.name), node.name)
            if actual is None:
                continue  # a Python function (hal.from_numpy), or one of object's (__hash__)
            checked += 1
            declared = stub_signature(node)
            if len(declared) != len(actual) or not all(
                    same_name(d[0], a[0]) and same_default(d[1], a[1])
                    for d, a in zip(declared, actual)):
                stub = [(name, default and ast.unparse(default)) for name, default in declared]
                wrong.append(f"{prefix}{node.name}: stub {stub}, module {actual}")
    assert checked > 150, checked
    assert not wrong, "\n".join(wrong)
