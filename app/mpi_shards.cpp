#include "app/mpi_shards.h"

#include <exception>
#include <iostream>

#if defined(METRONOME_HAVE_MPI)
#include <mpi.h>
#endif

#include "base/config_error.h"

namespace metronome::cli {

int run_mpi_shards(const std::string& command, const std::function<std::string(Shard)>& shard,
                   const std::function<void(const std::vector<std::string>&)>& merge) {
#if defined(METRONOME_HAVE_MPI)
  MPI_Init(nullptr, nullptr);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int ok = 1;
  std::string mine;
  try {
    mine = shard(Shard{rank, size});
  } catch (const std::exception& e) {
    std::cerr << command << ": rank " << rank << ": " << e.what() << "\n";
    ok = 0;
  }
  int all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  int status = all_ok ? 0 : 1;
  if (all_ok) {
    // Every rank's return to rank 0: the lengths, then the bytes.
    int length = static_cast<int>(mine.size());
    std::vector<int> lengths(static_cast<size_t>(size)), offsets(static_cast<size_t>(size));
    MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::string all;
    if (rank == 0) {
      size_t total = 0;
      for (int r = 0; r < size; ++r) {
        offsets[static_cast<size_t>(r)] = static_cast<int>(total);
        total += static_cast<size_t>(lengths[static_cast<size_t>(r)]);
      }
      all.resize(total);
    }
    MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
                0, MPI_COMM_WORLD);
    if (rank == 0) {
      std::vector<std::string> parts;
      for (int r = 0; r < size; ++r) {
        parts.push_back(all.substr(static_cast<size_t>(offsets[static_cast<size_t>(r)]),
                                   static_cast<size_t>(lengths[static_cast<size_t>(r)])));
      }
      try {
        merge(parts);
      } catch (const std::exception& e) {
        std::cerr << command << ": merge on rank 0: " << e.what() << "\n";
        status = 1;
      }
    }
  }
  MPI_Finalize();
  return status;
#else
  (void)command;
  (void)shard;
  (void)merge;
  throw ConfigError("--mpi: this build has no MPI (install libopenmpi-dev and rebuild)");
#endif
}

}  // namespace metronome::cli
