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
# every file with the same bytes (the run log, untracked, excepted).
if [[ -z "${METRONOME_FIGURES_NO_RERUN:-}" ]]; then
  sums() { (cd "$work" && find . -type f ! -name runs_log.json ! -name runs.jsonl -print0 | sort -z |
            xargs -0 sha256sum); }
  sums > "$work.first.sha256"
  "$src/scripts/make_figures.sh" --quick --out "$work" --metronome "$metronome" > /dev/null
  if ! sums | diff "$work.first.sha256" - ; then
    echo "FAIL: a second make_figures.sh --quick changed the files above"
    exit 1
  fi
  echo "figures_test: a second run left every file byte-identical"
fi
