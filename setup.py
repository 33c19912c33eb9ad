"""The hal package's build: CMake builds the module (target hal_python) as `make` does, then
installs its component `python` (the module, with libhal, libhal_model, libhal_train and
libhal_dist beside it, found through the module's RPATH $ORIGIN) into the package.
pyproject.toml has the package's metadata."""

import os
import pathlib
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

SOURCE = pathlib.Path(__file__).resolve().parent


def version():
    text = (SOURCE / "CMakeLists.txt").read_text()
    return re.search(r"project\(hal VERSION ([0-9.]+)", text).group(1)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = pathlib.Path(self.build_temp).resolve() / "cmake"
        stage = pathlib.Path(self.build_temp).resolve() / "stage"
        package = pathlib.Path(self.get_ext_fullpath(ext.name)).resolve().parent
        configure = [
            "cmake", "-S", str(SOURCE), "-B", str(build), "-G", "Ninja",
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DPython3_EXECUTABLE={sys.executable}",
            "-DHAL_BUILD_TESTS=OFF", "-DHAL_BUILD_BENCHMARKS=OFF", "-DHAL_BUILD_EXAMPLES=OFF",
            "-DHAL_PYTHON_WHEEL=ON", "-DHAL_PYTHON_INSTALL_DIR=.",
        ]
        # A compiler cache in the environment (CMAKE_CXX_COMPILER_LAUNCHER=ccache) applies.
        for variable in ("CMAKE_CXX_COMPILER_LAUNCHER", "CMAKE_C_COMPILER_LAUNCHER"):
            if os.environ.get(variable):
                configure.append(f"-D{variable}={os.environ[variable]}")
        subprocess.run(configure, check=True)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        subprocess.run(["cmake", "--build", str(build), "--target", "hal_python", "-j", jobs],
                       check=True)
        shutil.rmtree(stage, ignore_errors=True)
        subprocess.run(["cmake", "--install", str(build), "--component", "python",
                        "--prefix", str(stage)], check=True)
        package.mkdir(parents=True, exist_ok=True)
        # The module, and each library once under the name the module asks for (its soname).
        for built in (stage / "hal").iterdir():
            if built.suffix == ".so" or re.fullmatch(r".*\.so\.[0-9]+", built.name):
                shutil.copy2(built, package / built.name, follow_symlinks=True)


setup(
    version=version(),
    ext_modules=[Extension("hal._hal", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
)
