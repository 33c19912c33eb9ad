#!/usr/bin/env bash
# Installs the Debian packages hal needs to build and test. Idempotent: does nothing when
# everything is present. As a non-root user it prints the exact command to run instead.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev
  libhwloc-dev nlohmann-json3-dev libcli11-dev
  libboost-math-dev  # hal compare's statistics: Boost.Math's distributions and quantiles
  libboost-dev  # Boost.Container's small_vector (header-only): inline dimensions in the ops
  python3-websocket  # scripts/trace_screenshot.py: a trace in Chromium's DevTools, for the docs
  chromium  # renders hal report's page headless in its test (console errors, figures, screenshot)
  libopenblas-dev  # the CPU's matrix products
  libdnnl-dev      # the CPU's convolutions and bf16/f16 matrix products (oneDNN)
  libhwy-dev       # the CPU's vector kernels (Google Highway), chosen at run time
  libclblast-dev   # OpenCL's matrix products (opened at run time)
  libtbb-dev  # only for the benchmark that compares our thread pool with oneTBB
  libonnx-dev libprotobuf-dev  # ONNX models: ONNX's protobuf classes, checker and op schemas
  libonnx-testdata  # ONNX's backend test data, which `hal onnx-tests` runs as a conformance suite
  python3-numpy  # the tests check that NumPy reads the .npy files hal writes, and the other way
  # The Python module (python/): pybind11 and Python's headers to build it, DLPack's header for
  # zero-copy exchange, pytest to test it, and PyTorch, whose exchange with hal the tests check
  # (about 225 MB to download and 840 MB installed beyond the rest of this list; without it the
  # PyTorch tests skip, saying so).
  pybind11-dev python3-dev libdlpack-dev python3-pytest python3-torch
  python3-onnx  # the Python tests build small ONNX models with onnx.helper
  libcpp-httplib-dev  # hal serve and hal loadgen: HTTP (KServe v2 protocol)
  libopenmpi-dev openmpi-bin  # hal_dist's MPI engine, and mpirun for its tests
  clang libclang-rt-14-dev  # the fuzz targets (libFuzzer), built with Clang
  # OpenCL: headers to build the backend, the ICD loader it opens at run time, and PoCL, a
  # real OpenCL driver for the CPU, so that the backend is tested on every machine.
  opencl-headers ocl-icd-libopencl1 ocl-icd-opencl-dev pocl-opencl-icd
  # Vulkan: headers and loader to build the backend (the loader is opened at run time), glslc
  # to compile its shaders to SPIR-V, Mesa's lavapipe (a real Vulkan driver on the CPU) and the
  # validation layer, so that the backend is tested on every machine; vulkan-tools for
  # `vulkaninfo`, to see what the loader finds.
  libvulkan-dev glslc mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
)

missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

install_line="apt-get install -y --no-install-recommends ${missing[*]}"
if [[ $(id -u) -ne 0 ]]; then
  echo "hal: missing Debian packages: ${missing[*]}" >&2
  echo "hal: install them as root with:" >&2
  echo "  apt-get update && $install_line" >&2
  exit 1
fi

echo "hal: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
$install_line
