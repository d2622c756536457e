// --shard I/N: this process does the items (sweep runs, plan candidates) numbered i with
// i % N == I: round robin, so every shard gets a similar mix.
#pragma once

#include <cstdint>

namespace metronome {

struct Shard {
  int64_t index = 0;
  int64_t count = 1;
  bool owns(int64_t item) const { return item % count == index; }
};

}  // namespace metronome
