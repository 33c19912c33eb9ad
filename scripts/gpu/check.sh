#!/usr/bin/env bash
# Runs hal's CUDA checks on a machine with an NVIDIA GPU from the bundle scripts/gpu/bundle.sh
# made (.gpu/*.tar.xz): the CUDA tests, the device suites on cuda:0, NCCL and NVML against the
# real driver, and the benchmarks whose baselines call the driver directly. Every step has a
# time limit; logs and JSON go to $OUT (default .gpu/out), a table of the steps is printed last.
#   scripts/gpu/check.sh [step...]   steps: info, tests, other, suites, correct (those three side
#   by side), bench, compare, models, sanitize; default: info correct bench compare models
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=${OUT:-$root/.gpu/out}
mkdir -p "$out/logs"
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(info correct bench compare models)
# Steps are cut short so that the whole run ends within GPU_CHECK_SECONDS (a lease is short).
deadline=${GPU_CHECK_SECONDS:-520}

# The build's programs look for their libraries and data under /work/main (their RUNPATH and
# the source paths compiled in): point that at this copy of the tree.
if [ "$root" != /work/main ]; then
  if [ -e /work/main ] && [ ! -L /work/main ]; then
    echo "check.sh: /work/main is a directory of its own; run from there, or move it" >&2; exit 2
  fi
  mkdir -p /work && ln -sfn "$root" /work/main
fi
# Unpacked where no build is (a GPU machine starts bare); a build here is left as it is.
if [ ! -x build/release/bin/hal ] && [ -f .gpu/build.tar.xz ]; then tar -xJf .gpu/build.tar.xz; fi
[ -d .gpu/lib ] || { [ -f .gpu/libs.tar.xz ] && tar -C .gpu -xJf .gpu/libs.tar.xz; }
bin=$root/build/release/bin
# The GPU machine's own CUDA libraries: NVRTC, cuBLAS, NCCL, NVTX where installed.
cuda_dirs=$(find /usr/local/cuda*/lib64 /usr/local/cuda*/targets/*/lib /usr/local/nvidia/lib64 \
  /usr/lib/x86_64-linux-gnu /opt /usr/local/lib -maxdepth 7 \
  \( -name 'libcublas.so*' -o -name 'libnvrtc.so*' -o -name 'libnccl.so*' -o -name 'libnvToolsExt.so*' \
     -o -name 'libnvidia-ml.so*' -o -name 'libcuda.so*' \) -printf '%h\n' 2>/dev/null |
  grep -v '/stubs$' | sort -u | paste -sd:)  # the toolkit's stubs would shadow the driver
export LD_LIBRARY_PATH=$root/.gpu/lib:${cuda_dirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export HAL_CACHE_DIR=$root/.gpu/cache
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] &&
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ ! -d /etc/OpenCL/vendors ] && ls /usr/local/nvidia/lib64/libnvidia-opencl.so.1 >/dev/null 2>&1; then
  mkdir -p "$root/.gpu/icd" && echo libnvidia-opencl.so.1 > "$root/.gpu/icd/nvidia.icd"
  export OCL_ICD_VENDORS=$root/.gpu/icd
fi

: > "$out/summary.txt"
# run NAME SECONDS COMMAND...: one step, its output in $out/logs/NAME.log.
run() {
  local name=$1 limit=$2; shift 2
  local start=$SECONDS left=$((deadline - SECONDS - 15))
  [ "$limit" -gt "$left" ] && limit=$left
  if [ "$limit" -le 0 ]; then echo "$name: not run (out of time)" >> "$out/summary.txt"; return 0; fi
  timeout -k 5 "$limit" "$@" > "$out/logs/$name.log" 2>&1
  local rc=$?
  local tests
  tests=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/logs/$name.log" | sed 's/ tests\?, listed below:\?//; s/\[ *//; s/ *\]//' | paste -sd' ' | cut -c1-60)
  # Appended, not kept in a variable: steps run in background subshells too.
  printf '%-28s rc=%-3s %4ss  %s\n' "$name" "$rc" $((SECONDS - start)) "$tests" >> "$out/summary.txt"
  return 0
}
# gtest PROGRAM FILTER SECONDS: a test program, its failures listed in the log's tail (rc 77:
# no test passed and none failed, every one skipped; tests/support/test_main.hpp).
gtest() { run "$1${4:+.$4}" "$3" "$bin/$1" --gtest_filter="$2" --gtest_brief=1 --gtest_output="xml:$out/logs/$1${4:+.$4}.xml"; }

# cts NAME JUNIT [FILTER]: hal cts on cuda:0 (the cases containing FILTER), each case's line as
# it ends after the seconds it came at; a case that hangs is the one after the last line.
cts() {
  run "$1" "${CTS_SECONDS:-140}" bash -c "set -o pipefail; '$bin/hal' cts --device cuda:0 --junit '$out/logs/$2.xml' \
    ${3:+--filter '$3'} 2>&1 | while IFS= read -r line; do printf '%4d %s\\n' \$SECONDS \"\$line\"; done"
}

step() {
  case $1 in
    info)
      { nvidia-smi; nvidia-smi -q | grep -i -E 'product name|driver version|cuda version|vbios|clocks|power draw' | head -20
        echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"; uname -a; cat /etc/os-release | head -2; nproc
        ldd "$bin/hal" | grep 'not found'; } > "$out/logs/machine.log" 2>&1
      run devices 60 "$bin/hal" devices
      run summary 60 "$bin/hal" summary
      run calibrate 60 "$bin/hal" calibrate --device cuda:0
      ;;
    tests)  # the CUDA backend's own tests, side by side
      gtest cuda_nvrtc_test '*' 120 & gtest cuda_cublas_test '*' 120 & gtest cuda_backend_test '*' 180 &
      gtest cuda_staging_test '*' 120 & gtest cuda_stream_host_test '*' 120 &
      wait
      ;;
    suites)  # every device suite on cuda:0, side by side
      for t in core_device_suite_test tensor_test bad_input_test model_suite_test \
               autograd_gradient_test; do gtest $t '*cuda_*' 140 & done
      # The conformance cases through hal cts, which names each as it ends: seconds since the
      # start before each line; again with host callbacks held on the driver's thread (blocking).
      cts cts cts-cuda & HAL_CUDA_HOST_CALLS=blocking cts cts.blocking cts-cuda-blocking &
      # Each group alone too (op.* by its second part), so that a case that hangs leaves the
      # other groups' results.
      # (a group's filter ends in a dot; an op case of two parts is a group of its own).
      for group in $("$bin/hal" cts --list |
                     awk -F. '{print ($1 != "op" ? $1 "." : NF > 2 ? $1 "." $2 "." : $0)}' | sort -u); do
        cts cts.${group%.} cts-cuda-${group%.} $group &
      done
      HAL_CUDA_HOST_CALLS=blocking gtest core_device_suite_test '*cuda_*' 140 blocking &
      wait
      ;;
    other)  # NCCL, NVML, NVTX, traces
      gtest dist_nccl_test '*' 120 & gtest energy_test '*' 60 & gtest nvtx_test '*' 60 &
      gtest trace_test '*' 120 &
      wait
      ;;
    compare)
      run compare_energy 45 "$bin/hal" compare --a cuda:0 --b cuda:0 --workload matmul:4096 --metric energy --max-time 10s --first-look 5 --json
      run compare_cpu_cuda 40 "$bin/hal" compare --a cpu:0 --b cuda:0 --workload matmul:1024 --max-time 20s --json --html "$out/compare.html"
      ;;
    bench)
      for suite in dispatch copy ops; do
        run bench_$suite 80 "$bin/hal" bench $suite --quick --device cuda:0 \
          --output "$out/bench_$suite.json"
      done
      ;;
    models)  # the transformer encoder on cuda:0 against its expected output, with a trace
      run transformer 90 bash -c "'$bin/hal' run models/transformer_encoder.onnx --device cuda:0 \
        --input tokens=models/transformer_encoder.input.npy --output '$out/transformer' \
        --trace '$out/trace_cuda.json' && python3 -c \"import numpy as np, glob; \
        got = np.load(glob.glob('$out/transformer/*.npy')[0]); \
        want = np.load('models/transformer_encoder.expected.npy'); \
        d = float(np.abs(got - want).max()); print('max abs difference', d); \
        raise SystemExit(0 if d < 1e-3 else 1)\""
      run tune 90 "$bin/hal" tune --device cuda:0 --budget 60s --json
      ;;
    sanitize)  # compute-sanitizer over the CUDA tests and the device suites on cuda:0, side by side
      run memcheck 240 compute-sanitizer --tool memcheck "$bin/cuda_backend_test" --gtest_brief=1 &
      for t in tensor_test autograd_gradient_test model_suite_test; do
        run memcheck.$t 240 compute-sanitizer --tool memcheck "$bin/$t" --gtest_filter='*cuda_*' --gtest_brief=1 &
      done
      run racecheck 240 compute-sanitizer --tool racecheck "$bin/core_device_suite_test" --gtest_filter='*cuda_*' --gtest_brief=1 &
      wait
      ;;
    correct)  # the checks of results, side by side (the benchmarks run alone)
      step tests & step other & step suites &
      wait
      ;;
    *) echo "unknown step $1" >&2 ;;
  esac
}
for s in "${steps[@]}"; do step "$s"; done

# The failures and skips of every test program, then the table.
for f in "$out"/logs/*.log; do
  grep -E '^\[  FAILED  \]|^\[  SKIPPED \]' "$f" | sort -u | head -15 | sed "s|^|$(basename "$f" .log): |"
done > "$out/failures.txt"
# Everything but the two tables in one archive: the device tool brings back only a few files.
archive=$(mktemp)
tar -C "$out" -czf "$archive" --exclude=./summary.txt --exclude=./failures.txt . &&
  find "$out" -mindepth 1 -maxdepth 1 ! -name summary.txt ! -name failures.txt -exec rm -rf {} + &&
  mv "$archive" "$out/results.tar.gz"
cat "$out/failures.txt" | cut -c1-200 | head -60
cat "$out/summary.txt"
