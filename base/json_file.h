// Reading JSON inputs with errors that name the file: one place for "cannot open", "too large",
// "not valid JSON" and the limits every input obeys whoever wrote it. JSON itself allows duplicate
// keys, numbers beyond a double and any nesting; we refuse all three at load, so that a typo cannot
// silently win (last key wins), 1e309 cannot become infinity, and no later recursive walk (dump,
// compare, error message) can overflow the stack.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace metronome {

// Scenario, sweep and calibration files are kilobytes; a calibration with every benchmark point is
// well under a megabyte. 64 MiB leaves room and stops `--scenario /dev/zero` from eating memory.
inline constexpr size_t kMaxJsonFileBytes = size_t{64} << 20;
// Deepest nesting of objects and arrays: scenarios use 4 levels.
inline constexpr int kMaxJsonDepth = 64;

// Every file input is a regular file: a FIFO without a writer would block open() forever, a device
// such as /dev/zero never ends, a socket cannot be opened. One check for every reader (scenario,
// model, sweep, calibration, quality and benchmark files, profiles, GGUF models, texts): nothing is
// opened, so it never blocks. ConfigError "<path>: is a FIFO (named pipe), expected the <what> as a
// regular file", "<path>: is a directory, expected the <what>" or "<path>: cannot open the <what>
// (<reason>)". The file is noted as an input, which no output may replace (base/input_files.h).
void require_regular_file(const std::string& path, std::string_view what);

// The whole file; ConfigError "<path>: cannot open the <what>" when it cannot be read or is not a
// regular file (require_regular_file), and "<path>: larger than 64 MiB" (without reading the rest)
// when it is bigger than max_bytes.
std::string read_text_file(const std::string& path, std::string_view what,
                           size_t max_bytes = kMaxJsonFileBytes);

// ConfigError "<where>: not valid JSON: ..." when the text does not parse, "<where>: <field>: ..."
// for a duplicate key, a number out of range of a double, or nesting deeper than kMaxJsonDepth.
nlohmann::json parse_json(std::string_view text, const std::string& where);
nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& where);

// For values that are "JSON where they parse, else a string" (--set, --grid): nullopt when the
// text is not JSON syntax; ConfigError when it is JSON that breaks one of the limits above.
std::optional<nlohmann::json> parse_json_if_json(std::string_view text, const std::string& where);

inline nlohmann::json read_json_file(const std::string& path, std::string_view what) {
  return parse_json(read_text_file(path, what), path);
}

// A short description of a value for an error message: scalars as JSON (long strings cut),
// objects and arrays by their size. Never walks the whole value.
std::string json_preview(const nlohmann::json& v);
std::string json_preview(const nlohmann::ordered_json& v);
// An argument quoted in a message, cut to its first 120 characters (a --set value may be huge).
std::string argument_preview(const std::string& arg);

}  // namespace metronome
