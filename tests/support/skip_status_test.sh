#!/bin/sh
# The exit status of a test binary (test_main.hpp), which CTest reads: 0 when a test passed, 77
# (skipped) when none passed and none failed, anything else for a crash, even one after a skip.
probe=$1
status=0
expect() {  # expect FILTER WANTED: WANTED is a status, or "crash" (neither 0 nor 77)
  "$probe" --gtest_filter="$1" >/dev/null 2>&1
  got=$?
  case $2 in
    crash) [ "$got" -ne 0 ] && [ "$got" -ne 77 ] ;;
    *) [ "$got" -eq "$2" ] ;;
  esac || { echo "FAILED: --gtest_filter=$1 exited $got, wanted $2"; status=1; }
}
expect 'Probe.Passes' 0
expect 'Probe.*' 0            # one passed, one skipped: passed
expect 'Probe.Skips' 77       # every test skipped
expect 'NoSuch.Test' 77       # the filter leaves nothing here
expect 'ProbeAtExit.*' crash  # skipped, then crashed at exit: a failure, not a skip
[ $status -eq 0 ] && echo "every exit status as CTest should read it"
exit $status
