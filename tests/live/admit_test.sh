#!/usr/bin/env bash
# `metronome admit` runs the scenario's AIMD as the simulator's engine does: +increase per
# interval under low_fraction x deadline, x decrease_factor over high_fraction x deadline, a
# censored interval (null) counted as over (a cut only while the cap is at or above the live count:
# no windup); bad lines exit 2 naming the line and field, and so does a memory guard.
set -u
bin=$1 scen=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
# aimd_windowed: start 4, +2 under 0.88 x 40 ms, x0.9 over 0.9 x 40 ms.
out=$(printf '%s\n' '{"now_s":1,"latency_ms":10,"frames":8,"live":4}' \
  '{"now_s":2,"latency_ms":10,"frames":8,"live":6}' \
  '{"now_s":3,"latency_ms":39,"frames":8,"live":8}' \
  '{"now_s":4,"latency_ms":null,"frames":8,"live":7}' | "$bin" admit --scenario "$scen") ||
  fail "admit exited $?"
want=$'{"cap":4}\n{"cap":6}\n{"cap":8}\n{"cap":7}\n{"cap":6}'
[ "$out" = "$want" ] || fail "caps: got $(echo "$out" | tr '\n' ' '), want $(echo "$want" | tr '\n' ' ')"
err=$(echo '{"now_s":1,"latency_ms":"fast","frames":1,"live":1}' | "$bin" admit --scenario "$scen" 2>&1 >/dev/null)
rc=$?
[ $rc -eq 2 ] || fail "a bad line: exit $rc, want 2"
echo "$err" | grep -q "stdin line 1: field 'latency_ms'" || fail "message: $err"
echo '{"now_s":1,"latency_ms":1,"frames":1}' | "$bin" admit --scenario "$scen" >/dev/null 2>&1
[ $? -eq 2 ] || fail "a missing field: want exit 2"
# A memory guard reserves blocks in the engine's pool, which admit does not see: refused, not a cap
# that admits past it (the windowed guard's memory cap).
err=$("$bin" admit --scenario "$scen" --set admission.memory_guard=on </dev/null 2>&1 >/dev/null)
rc=$?
[ $rc -eq 2 ] || fail "a memory guard: exit $rc, want 2"
echo "$err" | grep -q 'admission.memory_guard: expected "off" for admit' || fail "message: $err"
echo "admit: 4 checks passed"
