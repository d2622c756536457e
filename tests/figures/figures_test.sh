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
