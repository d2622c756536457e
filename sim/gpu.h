// A GPU's datasheet numbers, used to size the pool and by the roofline cost model.
#pragma once

#include <string>

namespace metronome {

struct GpuConfig {
  std::string name;
  double memory_bytes = 0;  // HBM capacity
  double memory_bandwidth_bytes_per_s = 0;
  double bf16_flops = 0;  // dense, not the sparse datasheet figure
};

}  // namespace metronome
