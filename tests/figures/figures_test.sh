#!/usr/bin/env bash
# figures_test.sh METRONOME SOURCE_DIR WORK_DIR
set -euo pipefail
metronome=$1 src=$2 work=$3
if ! /usr/bin/python3 -c 'import matplotlib, numpy' 2>/dev/null; then
  echo "SKIP: /usr/bin/python3 lacks matplotlib or numpy (apt-get install python3-matplotlib python3-numpy); figures not checked"
  exit 77
fi
rm -rf "$work"
mkdir -p "$work"
start=$(date +%s)
"$src/scripts/make_figures.sh" --quick --out "$work" --metronome "$metronome"
echo "figures_test: make_figures.sh --quick took $(( $(date +%s) - start )) s"
/usr/bin/python3 "$src/tests/figures/check_figures.py" "$work"
# The main command must leave a clean checkout clean: a second run over the same folder rewrites
# every file with the same bytes (the run log, untracked, excepted). The second run keeps the data
# of figure 8 (its model run is half of a run's time) and figure 10 (its four plans, a quarter)
# and plots them and writes the report again; that those runs give the same bytes each time and
# on any thread count is for quality.deterministic, SmolLM2.SameBytesForAnyThreadCountAndAnyCompany
# and the fleet and plan tests (Fleet.SameSeedSameBytesAnyThreadCount, Plan.SameAnswerAnyThreadCount) to check.
if [[ -z "${METRONOME_FIGURES_NO_RERUN:-}" ]]; then
  sums() { (cd "$work" && find . -type f ! -name runs_log.json ! -name runs.jsonl -print0 | sort -z |
            xargs -0 sha256sum); }
  sums > "$work.first.sha256"
  start=$(date +%s)
  reuse=8,10
  if [[ -n "${METRONOME_FIGURES_NO_QUALITY:-}" ]]; then reuse=10; fi
  "$src/scripts/make_figures.sh" --quick --out "$work" --metronome "$metronome" ${reuse:+--reuse $reuse} > /dev/null
  echo "figures_test: the second make_figures.sh --quick${reuse:+ --reuse $reuse} took $(( $(date +%s) - start )) s"
  # Every file, PNGs included, byte for byte: plots.finish fixes the layout's positions, which
  # kiwisolver could otherwise move in their last bit from run to run.
  if ! sums | diff "$work.first.sha256" -; then
    echo "FAIL: a second make_figures.sh --quick changed the files above"
    exit 1
  else
    echo "figures_test: a second run left every file byte-identical"
  fi
fi
