// The decoder shapes the benchmarks build, by the names the simulator's scenarios use
// (scenarios/models/<name>.json). The kernels' table (kernels/model_shapes.h) names Moshi's
// backbone differently and has no toy model, so this adds "tiny" (scenarios/models/tiny.json: small
// enough for the CPU references) and maps the scenario names onto it. A test pins the shapes to the
// JSON files.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/model_shapes.h"

namespace metronome::calibrate {

std::optional<kernels::ModelShape> bench_model(std::string_view scenario_name);
std::vector<std::string> bench_model_names();

}  // namespace metronome::calibrate
