"""Every public name of the module, and every public method of its classes, is used by some test
here (by name, or as the string a parametrized test looks it up by): a new function without a
test fails this one."""

import pathlib
import re

import hal

TESTS = "\n".join(p.read_text() for p in pathlib.Path(__file__).parent.glob("*.py")
                  if p.name != pathlib.Path(__file__).name)
CLASSES = ("Tensor", "Device", "Stream", "Event", "Model", "Workload", "Selection", "GradMode")
ERRORS = {name for name in dir(hal) if isinstance(getattr(hal, name), type)
          and issubclass(getattr(hal, name), BaseException)}


def test_every_function_is_called_by_a_test():
    missing = [name for name in dir(hal)
               if not name.startswith("_") and name not in ERRORS
               and not re.search(rf"\bhal\.{name}\b|[\"']{name}[\"']", TESTS)]
    assert not missing, f"no test uses hal.{', hal.'.join(missing)}"


def test_every_method_is_called_by_a_test():
    missing = []
    for cls_name in CLASSES:
        cls = getattr(hal, cls_name)
        for name in dir(cls):
            if name.startswith("_") and name not in ("__dlpack__", "__dlpack_device__"):
                continue
            if not re.search(rf"\.{name}\b|[\"']{name}[\"']", TESTS):
                missing.append(f"{cls_name}.{name}")
    assert not missing, f"no test uses {', '.join(missing)}"


def test_every_name_of_hal_optim_is_used_by_a_test():
    missing = [f"hal.optim.{name}" for name in dir(hal.optim)
               if not name.startswith("_") and not re.search(rf"\b{name}\b", TESTS)]
    for cls in (hal.optim.Optimizer, hal.optim.SGD, hal.optim.AdamW):
        missing += [f"{cls.__name__}.{name}" for name in dir(cls)
                    if not name.startswith("_") and not re.search(rf"\.{name}\b", TESTS)]
    assert not missing, f"no test uses {', '.join(missing)}"
