#!/usr/bin/env bash
# One attack on the double runner per mode; the property's name (fault.<mode>)
# picks it. The runner must turn each into data (an exit code), or fail the
# build; the gate must never promote.
case "${TEST_TARGET#//:fault.}" in
  pass) exit 0 ;;
  fail) exit 1 ;;
  orphan)
    # A daemon in its own session that ignores TERM, HUP and INT: killing the
    # run's process group misses it. Run 2 passes only if run 1's daemon is
    # still alive, so exits 1, 1 prove the runner killed it between the runs.
    pidfile="$RUNFILES_DIR.orphan.pid"
    [[ $TEST_RUN_NUMBER == 1 ]] && rm -f "$pidfile"
    if [[ -s $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      echo "the daemon of an earlier run is alive"
      exit 0
    fi
    setsid bash -c 'echo $$ > "$1"; trap "" TERM HUP INT; exec -a agent-gate-orphan-probe sleep 300' \
      _ "$pidfile" </dev/null >/dev/null 2>&1 &
    sleep 0.3
    echo "started daemon $(cat "$pidfile"); no daemon of an earlier run was alive"
    exit 1
    ;;
  memory)
    # Allocate and touch 64 MiB blocks until the allocation fails. ulimit -v
    # bounds this run (and only it) to 1 GiB of address space, so the machine
    # never gives more than that.
    ulimit -v 1048576
    exec python3 -c '
blocks = []
while True:
    blocks.append(bytearray(b"\x01") * (64 << 20))
    print(f"{len(blocks) * 64} MiB", flush=True)
'
    ;;
  chatty)
    # 30 MB on stdout in one line, then a failure: the log is data, its tail is bounded.
    head -c 30000000 /dev/zero | tr '\0' 'x'
    exit 3
    ;;
  kill_runner)
    # Kill the double runner (this script's parent) in the middle of run 1.
    echo "killing the runner, pid $PPID"
    kill -KILL "$PPID"
    sleep 2
    exit 0
    ;;
  fixture_writer)
    # Write into a sealed fixture during the run; say whether the write landed.
    if { echo "tampered" >> data/cases.txt; } 2>/dev/null; then
      echo "fixture write landed"
    else
      echo "fixture write refused"
    fi
    exit 0
    ;;
  leak)
    # Run 1 leaves a mark in every place it can reach; run 2 fails if it finds
    # one. Exits 0, 0 only if the runs share no writable path. Each place tried
    # is logged as `place <path>` so the test can check the host afterwards.
    mark=agent-gate-leak-probe
    self=$(readlink -f "$0")
    places=(/tmp /dev/shm /var/tmp /root / "$TMPDIR" "$TEST_TMPDIR" "$HOME"
      "$TEST_UNDECLARED_OUTPUTS_DIR" "$PWD" "$RUNFILES_DIR" "$RUNFILES_DIR/.."
      "$RUNFILES_DIR/../../.." "$RUNFILES_DIR/../../../../.." "$(dirname "$0")"
      "$(dirname "$self")" "$(dirname "$self")/bazel-bin")
    for pid in /proc/[0-9]*; do places+=("$pid/cwd" "$pid/root/tmp"); done
    for place in "${places[@]}"; do
      echo "place $(readlink -f "$place" 2>/dev/null || echo "$place")"
      if [[ $TEST_RUN_NUMBER == 1 ]]; then
        { echo left > "$place/$mark"; } 2>/dev/null && echo "wrote $place"
      elif [[ -e $place/$mark ]]; then
        echo "found run 1's mark in $place"
        exit 1
      fi
    done
    # Run 1's log is an output of the action; run 2 must not read it meanwhile.
    log="$RUNFILES_DIR/../agent_gate.runs/fault.leak.run1.log"
    echo "log $log"
    if [[ $TEST_RUN_NUMBER == 2 && -e $log ]]; then
      echo "found run 1's log"
      exit 1
    fi
    if [[ $TEST_RUN_NUMBER == 1 ]]; then
      ipcmk -Q >/dev/null 2>&1 && echo "made a message queue"
    elif [[ -n $(ipcs -q 2>/dev/null | awk '$1 ~ /^0x/') ]]; then
      echo "found a message queue"
      exit 1
    fi
    exit 0
    ;;
  *) exit 99 ;;
esac
