#!/usr/bin/env bash
# Runs the built libFuzzer targets (build/fuzz/bin/NAME_fuzz), JOBS at a time, each for SECONDS
# from a copy of its seed corpus (fuzz/corpus/NAME, copied to build/fuzz/corpus/NAME: what a run
# finds is added there, never to the repository's). Each fuzzer runs on one thread, so two run
# side by side on two cores in the time of one. Every line a fuzzer prints is prefixed with its
# name; a crashing input is written to build/fuzz/. Fails if any fuzzer does.
# Usage: scripts/run-fuzzers.sh SECONDS JOBS NAME...
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=$1 jobs=$2
shift 2
# Drivers' own leaks at exit (lavapipe, PoCL: every fuzzer that lists devices loads them) are
# suppressed as in the ASan tests.
export LSAN_OPTIONS=suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0
export FUZZ_SECONDS=$seconds

run_one() {
  set -eo pipefail  # bash -c starts without the script's options; the fuzzer's status decides
  local name=$1
  mkdir -p "build/fuzz/corpus/$name"
  if [ -d "fuzz/corpus/$name" ]; then cp "fuzz/corpus/$name"/* "build/fuzz/corpus/$name/"; fi
  echo "[$name] build/fuzz/bin/${name}_fuzz -max_total_time=$FUZZ_SECONDS"
  "build/fuzz/bin/${name}_fuzz" -max_total_time="$FUZZ_SECONDS" -artifact_prefix=build/fuzz/ \
    "build/fuzz/corpus/$name" 2>&1 | sed -u "s/^/[$name] /"
}
export -f run_one

# xargs exits non-zero when any command does (123), or when one is killed (125).
if ! printf '%s\n' "$@" | xargs -P "$jobs" -I{} bash -c 'run_one "$1"' _ {}; then
  echo "run-fuzzers: a fuzzer failed (its lines above; a crashing input is in build/fuzz/)" >&2
  exit 1
fi
