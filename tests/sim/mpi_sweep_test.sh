#!/bin/sh
# mpirun -np 2 metronome sweep --mpi writes exactly the files a single process writes.
#   mpi_sweep_test.sh <work dir> <metronome> <mpirun> <sweep arguments...>
set -eu
dir=$1 bin=$2 mpirun=$3
shift 3
rm -rf "$dir" && mkdir -p "$dir"
"$bin" sweep "$@" --out "$dir/one"
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  "$mpirun" --oversubscribe -np 2 "$bin" sweep --mpi "$@" --out "$dir/mpi"
for f in runs.csv aggregate.csv aggregate.json sweep.json; do
  cmp "$dir/one/$f" "$dir/mpi/$f"
done
test ! -e "$dir/mpi/.rank-0"  # the shards were merged and removed
echo "mpi sweep: identical to one process"
