// Finds shipped descriptions (models/, gpus/, scenarios) by name. A file on disk wins, so a user
// adds a model by adding one JSON file; the copies embedded at build time make the binary work
// anywhere.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace metronome {

// `kind` is "models" or "gpus". Search order: <base_dir>/<kind>, its parent and grandparent, then
// $METRONOME_SCENARIOS/<kind>, then the embedded copy; `found_at`, when given, receives the file
// read. Throws ConfigError naming the nearest known name and listing them all.
nlohmann::json find_catalog_entry(std::string_view kind, const std::string& name,
                                  const std::string& base_dir, const std::string& referrer,
                                  std::string* found_at = nullptr);

// Embedded copy of scenarios/<relpath>, if it was shipped.
std::optional<std::string_view> embedded_scenario_file(std::string_view relpath);
std::vector<std::string> embedded_names(std::string_view kind);
// Every embedded file, as its path under scenarios/ ("canonical/moshi_h200_windowed.json").
std::vector<std::string> embedded_scenario_paths();

}  // namespace metronome
