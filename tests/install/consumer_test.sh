#!/usr/bin/env bash
# Installs hal from a build tree into a scratch prefix, then builds and runs a small consumer
# against it twice: through find_package(hal CONFIG) and through pkg-config.
set -euo pipefail
build_dir=$1
consumer_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
test -L "$work/prefix/lib/libhal.so"
ls "$work"/prefix/lib/libhal.so.[0-9]* >/dev/null
"$work/prefix/bin/hal" --version
# The simulated accelerator is installed in lib/hal/plugins, where the installed hal finds it.
test -f "$work/prefix/lib/hal/plugins/libhal_plugin_sim.so"
test -f "$work/prefix/include/hal/plugin.h"
HAL_SIM_CONFIG=devices=1 "$work/prefix/bin/hal" devices | grep -q '^\[sim:0\]'
if [[ -x "$work/prefix/libexec/hal/hal_bench_memory" ]]; then
  "$work/prefix/bin/hal" bench memory --json --benchmark_filter=alloc_free/4096 \
    --benchmark_min_time=0.01 | grep -q '"schema": "hal.bench/1"'
fi

cmake -S "$consumer_dir" -B "$work/cmake-build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
"$work/cmake-build/consumer"
"$work/cmake-build/dist_consumer"

export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
pkg-config --exists --print-errors "hal >= 0.1"
# shellcheck disable=SC2046
c++ "$consumer_dir/main.cpp" -o "$work/pc-consumer" $(pkg-config --cflags --libs hal) \
  -Wl,-rpath,"$work/prefix/lib"
"$work/pc-consumer"
# The Python module, in Debian Python's site-packages under the prefix, loads the installed
# libhal through its RPATH (not the build tree's).
python_dir=$(echo "$work"/prefix/lib/python3*/dist-packages)
if [[ -d "$python_dir/hal" ]]; then
  PYTHONPATH="$python_dir" /usr/bin/python3 - "$work/prefix" <<'PYTHON'
import sys

import hal

prefix = sys.argv[1]
assert hal.__file__.startswith(prefix), hal.__file__
with open("/proc/self/maps") as maps:
    loaded = {line.split()[-1] for line in maps if "libhal" in line}
assert loaded and all(path.startswith(prefix) for path in loaded), loaded
assert (hal.ones((3,), device="cpu:0") * 2).tolist() == [2.0, 2.0, 2.0]
print("installed Python module: ok")
PYTHON
fi
echo "install consumer: ok"
