// libFuzzer target over the HuggingFace config.json reader (sim/config/hf_config.h): the input is a
// config.json text, read as `model=hf:` reads one (flat, text_config, an omni model's
// thinker_config.text_config), then loaded as the default scenario's model and its pool sized and
// predicted. Any outcome but success or a ConfigError is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/config_error.h"
#include "base/json_file.h"
#include "sim/closed_form/first_order.h"
#include "sim/config/hf_config.h"
#include "sim/config/scenario.h"

using namespace metronome;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto parsed = parse_json_if_json(text, "fuzz/config.json");
    if (!parsed) return 0;
    nlohmann::json scenario = read_scenario_json("");
    scenario["model"] = model_from_hf_config(*parsed, "fuzz/config.json");
    const Scenario s = parse_scenario(scenario, "fuzz");
    predict_first_order(s);
  } catch (const ConfigError&) {
  }
  return 0;
}
