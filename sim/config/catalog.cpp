#include "sim/config/catalog.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/config_error.h"
#include "base/json_file.h"
#include "base/nearest_name.h"
#include "sim/embedded_scenarios.h"

namespace metronome {
namespace fs = std::filesystem;

std::optional<std::string_view> embedded_scenario_file(std::string_view relpath) {
  for (const auto& f : kEmbeddedScenarioFiles) {
    if (f.path == relpath) return f.content;
  }
  return std::nullopt;
}

std::vector<std::string> embedded_scenario_paths() {
  std::vector<std::string> paths;
  for (const auto& f : kEmbeddedScenarioFiles) paths.emplace_back(f.path);
  return paths;
}

std::vector<std::string> embedded_names(std::string_view kind) {
  std::vector<std::string> names;
  const std::string prefix = std::string(kind) + "/";
  for (const auto& f : kEmbeddedScenarioFiles) {
    std::string_view p = f.path;
    if (p.substr(0, prefix.size()) == prefix &&
        p.find('/', prefix.size()) == std::string_view::npos && p.ends_with(".json")) {
      names.emplace_back(p.substr(prefix.size(), p.size() - prefix.size() - 5));
    }
  }
  return names;
}

nlohmann::json find_catalog_entry(std::string_view kind, const std::string& name,
                                  const std::string& base_dir, const std::string& referrer,
                                  std::string* found_at) {
  const bool safe =
      !name.empty() && name.find('/') == std::string::npos && name.find("..") == std::string::npos;
  if (safe) {
    std::vector<fs::path> dirs;
    if (!base_dir.empty()) {
      fs::path b(base_dir);
      dirs = {b / kind, b.parent_path() / kind, b.parent_path().parent_path() / kind};
    }
    if (const char* env = std::getenv("METRONOME_SCENARIOS")) dirs.push_back(fs::path(env) / kind);
    for (const auto& d : dirs) {
      fs::path p = d / (name + ".json");
      std::error_code ec;
      if (fs::is_regular_file(p, ec)) {
        if (found_at) *found_at = p.lexically_normal().string();
        return read_json_file(p.string(), kind == "models" ? "model file" : "GPU file");
      }
    }
    const std::string rel = std::string(kind) + "/" + name + ".json";
    if (auto text = embedded_scenario_file(rel)) {
      if (found_at) *found_at = "(built-in) scenarios/" + rel;
      return parse_json(*text, "(built-in) scenarios/" + rel);
    }
  }
  const std::vector<std::string> names = embedded_names(kind);
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  const std::string field = kind == "models" ? "model" : "gpu";
  throw ConfigError(referrer + ": " + field + ": unknown " + field + " \"" + name + "\"" +
                    did_you_mean(name, names) + "; known: " + known + "; or give a file, " + field +
                    "=PATH.json" +
                    (kind == "models" ? std::string(" or model=hf:PATH/config.json") : "") +
                    ", or add scenarios/" + std::string(kind) + "/" + name + ".json");
}

}  // namespace metronome
