#!/usr/bin/env bash
# One misbehaving predicate per mode; the property's name (fault.<mode>) picks it.
case "${TEST_TARGET#//:fault.}" in
  hang) sleep 600 ;;
  sigkill) kill -KILL $$ ;;
  sigsegv) kill -SEGV $$ ;;
  split) exit $((TEST_RUN_NUMBER - 1)) ;;
  env)
    [[ $TEST_RUN_NUMBER == 1 || $TEST_RUN_NUMBER == 2 ]] || exit 10
    [[ $TZ == UTC && $LC_ALL == C.UTF-8 && $PYTHONHASHSEED == 0 ]] || exit 11
    [[ -n $SOURCE_DATE_EPOCH && -d $TEST_TMPDIR && -d $TEST_UNDECLARED_OUTPUTS_DIR ]] || exit 12
    [[ $TEST_WORKSPACE == faults && $TEST_TARGET == //:fault.env ]] || exit 13
    [[ -f fixtures/data/a.txt ]] || exit 14
    [[ ! -e $TEST_TMPDIR/left_by_run_1 ]] || exit 15
    touch "$TEST_TMPDIR/left_by_run_1"
    ;;
  network)
    # Exit 0 only if the host's loopback listener is unreachable: no network.
    if exec 3<>/dev/tcp/127.0.0.1/47613; then exit 1; fi
    exit 0
    ;;
  *) exit 99 ;;
esac
