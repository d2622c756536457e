// Reading JSON inputs with errors that name the file: one place for "cannot open" and "not valid
// JSON".
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace metronome {

// The whole file; ConfigError "<path>: cannot open the <what>" when it cannot be read.
std::string read_text_file(const std::string& path, std::string_view what);
// ConfigError "<where>: not valid JSON: ..." when the text does not parse.
nlohmann::json parse_json(std::string_view text, const std::string& where);

inline nlohmann::json read_json_file(const std::string& path, std::string_view what) {
  return parse_json(read_text_file(path, what), path);
}

}  // namespace metronome
