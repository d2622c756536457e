// metronome_calibrate_bench: the benchmark half of `metronome calibrate run` without the simulator,
// JSON or CLI libraries, for the device machine (scripts/gpu_calibrate.sh builds it standalone).
//
//   metronome_calibrate_bench --model NAME --out FILE [--backend gpu|cpu] [--grid NAME]
//                             [--benchmark_* flags]
// Exit: 0 ok, 2 bad arguments or no CUDA device.
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>

#include "calibrate/benchmarks.h"

int main(int argc, char** argv) {
  metronome::calibrate::BenchRequest r;
  r.backend = "gpu";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + ": missing value");
      return argv[++i];
    };
    try {
      if (a == "--model")
        r.model = value();
      else if (a == "--backend")
        r.backend = value();
      else if (a == "--grid")
        r.grid = value();
      else if (a == "--out")
        r.out = value();
      else if (a.rfind("--benchmark_", 0) == 0)
        r.benchmark_args.push_back(a);
      else
        throw std::invalid_argument("unknown argument \"" + a + "\"");
    } catch (const std::invalid_argument& e) {
      std::cerr << "metronome_calibrate_bench: " << e.what() << "\n";
      return 2;
    }
  }
  if (r.model.empty() || r.out.empty()) {
    std::cerr << "usage: metronome_calibrate_bench --model NAME --out FILE [--backend gpu|cpu] "
                 "[--grid NAME] [--benchmark_* ...]\n";
    return 2;
  }
  if (r.grid.empty()) r.grid = r.backend == "gpu" ? "gpu" : "cpu";
  try {
    return metronome::calibrate::run_benchmarks(r);
  } catch (const std::invalid_argument& e) {
    std::cerr << "metronome_calibrate_bench: " << e.what() << "\n";
    return 2;
  }
}
