// Reads one JSON object field by field, validating each value and remembering which keys were read,
// so that finish() can reject unknown keys (a typo must not silently become a default).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/config_error.h"

namespace metronome {

class JsonSection {
 public:
  // `source` names the file (or "--set") for error messages; `path` is the dotted path of this
  // object.
  JsonSection(const nlohmann::json& j, std::string source, std::string path);

  bool has(std::string_view key) const;

  // Numbers must be finite. Bounds are inclusive unless named otherwise.
  double number(std::string_view key, std::optional<double> def);
  double positive(std::string_view key, std::optional<double> def);
  double non_negative(std::string_view key, std::optional<double> def);
  double in_range(std::string_view key, std::optional<double> def, double lo, double hi);
  std::optional<double> optional_positive(std::string_view key);
  std::optional<double> optional_non_negative(std::string_view key);

  int64_t integer(std::string_view key, std::optional<int64_t> def, int64_t lo, int64_t hi);
  std::optional<int64_t> optional_integer(std::string_view key, int64_t lo, int64_t hi);

  std::string string(std::string_view key, std::optional<std::string> def);
  std::string one_of(std::string_view key, std::optional<std::string> def,
                     std::initializer_list<std::string_view> allowed);
  std::string one_of(std::string_view key, std::optional<std::string> def,
                     const std::vector<std::string>& allowed);
  bool boolean(std::string_view key, bool def);

  // A nested object; a missing key yields an empty object when `required` is false.
  JsonSection section(std::string_view key, bool required = false);
  const nlohmann::json& raw(std::string_view key);

  // Throws ConfigError naming the first key that was never read.
  void finish() const;

  [[noreturn]] void fail(std::string_view key, std::string_view expected) const;
  std::string field(std::string_view key) const;
  const std::string& source() const { return source_; }

 private:
  const nlohmann::json* find(std::string_view key);

  const nlohmann::json& j_;
  std::string source_;
  std::string path_;
  mutable std::set<std::string, std::less<>> read_;  // has() marks an absent or null field read
  static const nlohmann::json kEmpty;
};

}  // namespace metronome
