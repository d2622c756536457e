#!/bin/sh
# mpirun -np 2 metronome plan --mpi prints exactly what a single process prints.
#   mpi_plan_test.sh <work dir> <metronome> <mpirun> <plan arguments...>
set -eu
dir=$1 bin=$2 mpirun=$3
shift 3
rm -rf "$dir" && mkdir -p "$dir"
"$bin" plan "$@" >"$dir/one.json" 2>/dev/null
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  "$mpirun" --oversubscribe -np 2 "$bin" plan --mpi "$@" >"$dir/mpi.json" 2>"$dir/mpi.err"
cmp "$dir/one.json" "$dir/mpi.json"
echo "mpi plan: identical to one process"
