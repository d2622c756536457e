// `--mpi` for the commands that split their work into shards (sweep, plan): under mpirun, rank I
// of N does shard I/N, and rank 0 merges what the ranks did into the single-process result.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/shard.h"

namespace metronome::cli {

// `shard` runs on every rank with its Shard{rank, size} and returns what rank 0 needs of it (a
// sweep's ranks write files and return nothing; a plan's return their partial result); it may
// throw. When every rank's shard succeeded, `merge` runs on rank 0 with those returns in rank
// order. Returns the exit status of this rank: 0 if every shard and the merge succeeded, else 1
// (each failure said on stderr, prefixed by `command`). ConfigError where the build has no MPI.
int run_mpi_shards(const std::string& command, const std::function<std::string(Shard)>& shard,
                   const std::function<void(const std::vector<std::string>&)>& merge);

}  // namespace metronome::cli
