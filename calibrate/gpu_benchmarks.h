// The GPU half of benchmarks.h: LayerStep, attention and cuBLAS GEMM benchmarks. Only built where
// CUDA is (METRONOME_HAVE_CUDA); includes no CUDA header so benchmarks.cpp stays plain C++.
#pragma once

#include <string>

#include "calibrate/grid.h"
#include "kernels/model_shapes.h"

namespace metronome::calibrate {

struct GpuInfo {
  std::string name;     // cudaDeviceProp::name, e.g. "NVIDIA H200"
  std::string driver;   // cudaDriverGetVersion, "13.0"
  std::string runtime;  // cudaRuntimeGetVersion
};

// Registers one benchmark per grid point. False, with `why`, when no CUDA device is usable.
bool register_gpu_benchmarks(const kernels::ModelShape& m, const Grid& g, GpuInfo& info,
                             std::string& why);

}  // namespace metronome::calibrate
