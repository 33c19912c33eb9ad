#!/usr/bin/env bash
# Set-up of `hal bench models` (not part of `make test`): Debian's PyTorch and ONNX for Python,
# then the three models exported with random weights into DIR (default: the directory the
# benchmark reads, ${XDG_CACHE_HOME:-$HOME/.cache}/hal/bench-models; a relative XDG_CACHE_HOME is
# ignored, as the XDG Base Directory spec asks).
set -euo pipefail
cache=${XDG_CACHE_HOME:-}
[[ $cache == /* ]] || cache=$HOME/.cache
cd "$(dirname "$0")/.."
out=${1:-${HAL_BENCH_MODELS_DIR:-$cache/hal/bench-models}}
if ! /usr/bin/python3 -c 'import torch, onnx, numpy' 2>/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y --no-install-recommends python3-torch python3-onnx python3-numpy
fi
/usr/bin/python3 scripts/export_bench_models.py "$out"
