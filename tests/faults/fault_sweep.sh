#!/usr/bin/env bash
# Runs the conformance suite and the demo on sim with injected faults (failed allocations,
# failed ops, a device lost at different points) and fails on any run that did not end with an
# answer: a signal, a sanitizer's abort, a hang (timeout), or no summary. Failed cases and a
# demo that exits 1 naming the device are the right answers to a fault. Run by CTest in every
# preset, so the sanitizers see hal's error paths, not only its happy ones.
#   fault_sweep.sh HAL_BINARY
set -uo pipefail
hal=$1
status=0

# run LABEL EXPECT_TEXT COMMAND...: the command must exit 0 or 1 and print EXPECT_TEXT.
run() {
  local label=$1 expect=$2
  shift 2
  local out rc
  out=$(timeout 300 "$@" 2>&1)
  rc=$?
  if ((rc != 0 && rc != 1)); then
    echo "FAIL $label: exit $rc"
    echo "$out" | tail -20
    status=1
  elif ! grep -q -- "$expect" <<<"$out"; then
    echo "FAIL $label: no '$expect' in its output"
    echo "$out" | tail -20
    status=1
  else
    echo "ok   $label (exit $rc)"
  fi
}

for fault in fail_alloc_at=1 fail_alloc_at=5 fail_op_at=1 fail_op_at=30 lose_device_at=1 \
  lose_device_at=25; do
  HAL_SIM_CONFIG="devices=1,$fault" run "cts on sim:0 with $fault" "sim:0: " \
    "$hal" cts --device sim:0 --filter op.table.add
  HAL_SIM_CONFIG="devices=1,$fault" run "cts streams on sim:0 with $fault" "sim:0: " \
    "$hal" cts --device sim:0 --filter stream.
done
# A failed op names the op and the device once: not its number in plugin.h ("op 0") nor the
# device again where the plugin's own message names it ("sim:0: op 0: sim:0: op 1 failed").
HAL_SIM_CONFIG="devices=1,fail_op_at=1" run "a failed op on sim:0 names the op" \
  "hal: Internal: sim:0: add: op 1 failed (injected fault)" \
  "$hal" cts --device sim:0 --filter op.table.add.f32
for fault in fail_op_at=1 lose_device_at=40; do
  HAL_SIM_CONFIG="devices=1,$fault" HAL_DEVICES='sim:*;cpu:*' \
    run "demo with $fault" '"schema"' "$hal" demo --quick --json
done
exit $status
