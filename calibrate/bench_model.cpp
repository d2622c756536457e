#include "calibrate/bench_model.h"

namespace metronome::calibrate {
namespace {

constexpr kernels::ModelShape kTiny{"tiny", 2, 256, 4, 2, 64, 512};

struct Alias {
  std::string_view scenario;
  std::string_view kernels;
};
constexpr Alias kAliases[] = {{"moshi", "moshi-helium-7b"}};

}  // namespace

std::optional<kernels::ModelShape> bench_model(std::string_view name) {
  if (name == kTiny.name) return kTiny;
  for (const auto& a : kAliases) {
    if (a.scenario == name) name = a.kernels;
  }
  auto shape = kernels::find_model_shape(name);
  if (shape) {
    for (const auto& a : kAliases) {
      if (a.kernels == shape->name) shape->name = a.scenario;
    }
  }
  return shape;
}

std::vector<std::string> bench_model_names() {
  std::vector<std::string> names{std::string(kTiny.name)};
  for (const auto& m : kernels::kModelShapes) {
    std::string n(m.name);
    for (const auto& a : kAliases) {
      if (a.kernels == n) n = a.scenario;
    }
    names.push_back(n);
  }
  return names;
}

}  // namespace metronome::calibrate
