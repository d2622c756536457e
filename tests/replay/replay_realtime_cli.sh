#!/usr/bin/env bash
# A wall-clock replay through the CLI whose verdict needs real time (real_time_guard.h says why):
# passes when the JSON says saturation is within 10% of the simulator, skips (exit 77, with the
# engine's measured lag) when the engine fell more than one frame period behind, fails otherwise.
#   replay_realtime_cli.sh <metronome> <replay args...>
set -u
bin=$1
shift
out=$("$bin" replay "$@" --json) || { echo "FAIL: metronome replay $* exited $?"; exit 1; }
printf '%s\n' "$out" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
ok = r["agreement"]["saturation_within_10pct"]
lag = r["measured_engine"]["max_start_lag_ms"] / 1e3
period = r["scenario"]["workload"]["frame_period_s"]
if ok:
    print(f"saturation within 10% (engine lag {lag:.3f} s)")
    sys.exit(0)
if lag > period:
    print(f"SKIP: the machine could not keep real time: the engine started a step {lag:.3f} s after "
          f"its oldest frame (more than one frame period, {period} s); the verdict needs a "
          "real-time run (is the machine loaded?)")
    sys.exit(77)
print(f"FAIL: saturation not within 10% although the engine kept real time (lag {lag:.3f} s)")
print(json.dumps(r["saturation"], indent=1))
sys.exit(1)
'
