#include "sim/json_file.h"

#include <fstream>
#include <sstream>

#include "sim/config_error.h"

namespace metronome {

std::string read_text_file(const std::string& path, std::string_view what) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open the " + std::string(what));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::json parse_json(std::string_view text, const std::string& where) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(where + ": not valid JSON: " + e.what());
  }
}

}  // namespace metronome
