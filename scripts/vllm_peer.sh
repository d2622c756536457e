#!/usr/bin/env bash
# The vLLM peer: replay every case of tests/sim/vllm/cases/ through vLLM V1's real Scheduler and
# KVCacheManager (on the CPU, no weights, no hub) and write the goldens to tests/sim/vllm/golden/.
# CI never runs this: it compares the simulator against the committed goldens.
#
#   scripts/vllm_peer.sh [--venv DIR] [--out DIR] [--date YYYY-MM-DD] [NAME ...]
#
#   --venv DIR   virtual environment with vllm==0.33.0 (default
#                ${METRONOME_VLLM_VENV:-$HOME/.cache/metronome/vllm-venv}); created if missing
#                (python3 -m venv + pip install vllm==0.33.0 from PyPI: about 9 GB, 9 minutes)
#   --out DIR    goldens folder (default tests/sim/vllm/golden)
#   --date D     the "generated" date written into the goldens (default today, UTC)
#   NAME ...     cases to run (default all)
# Exit status: 0 done; 2 a bad argument or case file (checked before the venv is made); 1 anything
# else.
set -euo pipefail
cd "$(dirname "$0")/.."

VLLM_VERSION=0.33.0
venv=${METRONOME_VLLM_VENV:-$HOME/.cache/metronome/vllm-venv}
out=tests/sim/vllm/golden
extra=()
names=()
while [ $# -gt 0 ]; do
  case "$1" in
    --venv|--out|--date)
      if [ $# -lt 2 ] || [ -z "$2" ]; then echo "vllm_peer.sh: $1 needs a value" >&2; exit 2; fi ;;
  esac
  case "$1" in
    --venv) venv=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --date) extra+=(--date "$2"); shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    -*) echo "vllm_peer.sh: unknown option $1" >&2; exit 2 ;;
    *) names+=("$1"); shift ;;
  esac
done

# The arguments and every case are checked first (no vLLM needed): a mistake must not wait for, or
# trigger, a 9 GB install.
python3 scripts/vllm_peer.py --check --cases tests/sim/vllm/cases --out "$out" "${extra[@]}" "${names[@]}"

py=$venv/bin/python
if [ ! -x "$py" ]; then
  echo "vllm_peer.sh: creating $venv (pip install vllm==$VLLM_VERSION)" >&2
  python3 -m venv "$venv"
  "$py" -m pip install --upgrade pip
  "$py" -m pip install "vllm==$VLLM_VERSION"
fi
have=$("$py" -c 'import vllm; print(vllm.__version__)' 2>/dev/null | tail -n 1)
if [ "$have" != "$VLLM_VERSION" ]; then
  echo "vllm_peer.sh: $venv has vllm '$have', expected $VLLM_VERSION" >&2
  exit 1
fi

# vLLM's import chatter goes to stderr; keep it out of the way unless the run fails.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
"$py" scripts/vllm_peer.py --cases tests/sim/vllm/cases --out "$out" "${extra[@]}" "${names[@]}" \
  2>"$log"
rc=$?
set -e
if [ $rc -ne 0 ]; then
  grep -v -e '^W[0-9]' -e 'deprecated' "$log" >&2 || true
fi
exit $rc
