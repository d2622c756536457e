#include "base/json_section.h"

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "base/json_file.h"
#include "base/nearest_name.h"

namespace metronome {

const nlohmann::json JsonSection::kEmpty = nlohmann::json::object();

JsonSection::JsonSection(const nlohmann::json& j, std::string source, std::string path)
    : j_(j), source_(std::move(source)), path_(std::move(path)) {
  if (!j_.is_object()) {
    throw ConfigError(source_ + ": " + (path_.empty() ? "scenario" : path_) +
                      ": expected a JSON object, got " + json_preview(j_));
  }
}

std::string JsonSection::field(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

void JsonSection::fail(std::string_view key, std::string_view expected) const {
  auto it = j_.find(std::string(key));
  // A bounded preview: the offending value may be megabytes or deeply nested.
  const std::string got = it == j_.end() ? "nothing (the field is missing)" : json_preview(*it);
  // A time field takes a bare number of seconds: say so, since "150ms" or 150 are what users try.
  std::string want(expected);
  if (key.ends_with("_s") && !key.ends_with("_per_s") && want.find("number") != std::string::npos) {
    want += " of seconds (150 ms is 0.15)";
  }
  throw ConfigError(source_ + ": " + field(key) + ": expected " + want + ", got " + got);
}

bool JsonSection::has(std::string_view key) const {
  auto it = j_.find(std::string(key));
  // A section that asks for a field knows it: an absent or null one is read (finish() must not
  // call profile_file: null beside an inline profile unknown, and a typo's suggestions include
  // it: max_num_seq was offered nothing, as only its alias was read). A present one must still be
  // read.
  if (it == j_.end() || it->is_null()) {
    read_.emplace(key);
    return false;
  }
  return true;
}

const nlohmann::json* JsonSection::find(std::string_view key) {
  read_.emplace(key);
  auto it = j_.find(std::string(key));
  if (it == j_.end() || it->is_null()) return nullptr;
  return &*it;
}

double JsonSection::number(std::string_view key, std::optional<double> def) {
  const nlohmann::json* v = find(key);
  if (!v) {
    if (!def) fail(key, "a number");
    return *def;
  }
  if (!v->is_number()) fail(key, "a number");
  double x = v->get<double>();
  if (!std::isfinite(x)) fail(key, "a finite number");
  return x;
}

double JsonSection::positive(std::string_view key, std::optional<double> def) {
  double x = number(key, def);
  if (!(x > 0)) fail(key, "a number > 0");
  return x;
}

double JsonSection::non_negative(std::string_view key, std::optional<double> def) {
  double x = number(key, def);
  if (x < 0) fail(key, "a number >= 0");
  return x;
}

double JsonSection::in_range(std::string_view key, std::optional<double> def, double lo,
                             double hi) {
  double x = number(key, def);
  if (x < lo || x > hi) {
    fail(key, "a number in [" + nlohmann::json(lo).dump() + ", " + nlohmann::json(hi).dump() + "]");
  }
  return x;
}

std::optional<double> JsonSection::optional_positive(std::string_view key) {
  if (!has(key)) {
    read_.emplace(key);
    return std::nullopt;
  }
  return positive(key, std::nullopt);
}

std::optional<double> JsonSection::optional_non_negative(std::string_view key) {
  if (!has(key)) {
    read_.emplace(key);
    return std::nullopt;
  }
  return non_negative(key, std::nullopt);
}

int64_t JsonSection::integer(std::string_view key, std::optional<int64_t> def, int64_t lo,
                             int64_t hi) {
  const nlohmann::json* v = find(key);
  const std::string range =
      "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (!v) {
    if (!def) fail(key, range);
    return *def;
  }
  int64_t x = 0;
  if (v->is_number_integer()) {
    if (v->is_number_unsigned() &&
        v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail(key, range);
    }
    x = v->get<int64_t>();
  } else if (v->is_number_float()) {
    // 1e6 is a natural way to write a count; accept it when it is exactly an integer.
    double d = v->get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.0e18) fail(key, range);
    x = static_cast<int64_t>(d);
  } else {
    fail(key, range);
  }
  if (x < lo || x > hi) fail(key, range);
  return x;
}

std::optional<int64_t> JsonSection::optional_integer(std::string_view key, int64_t lo, int64_t hi) {
  if (!has(key)) {
    read_.emplace(key);
    return std::nullopt;
  }
  return integer(key, std::nullopt, lo, hi);
}

std::string JsonSection::string(std::string_view key, std::optional<std::string> def) {
  const nlohmann::json* v = find(key);
  if (!v) {
    if (!def) fail(key, "a string");
    return *def;
  }
  if (!v->is_string()) fail(key, "a string");
  try {
    (void)v->dump();  // strings reach JSON outputs: they must be valid UTF-8
  } catch (const nlohmann::json::type_error&) {
    fail(key, "a valid UTF-8 string");
  }
  return v->get<std::string>();
}

std::string JsonSection::one_of(std::string_view key, std::optional<std::string> def,
                                std::initializer_list<std::string_view> allowed) {
  return one_of(key, std::move(def), std::vector<std::string>(allowed.begin(), allowed.end()));
}

std::string JsonSection::one_of(std::string_view key, std::optional<std::string> def,
                                const std::vector<std::string>& allowed) {
  std::string expected = "one of";
  for (const auto& a : allowed) expected += " \"" + a + "\"";
  const nlohmann::json* v = find(key);
  if (!v) {
    if (!def) fail(key, expected);
    return *def;
  }
  if (v->is_string()) {
    std::string s = v->get<std::string>();
    for (const auto& a : allowed) {
      if (s == a) return s;
    }
  }
  fail(key, expected);
}

bool JsonSection::boolean(std::string_view key, bool def) {
  const nlohmann::json* v = find(key);
  if (!v) return def;
  if (!v->is_boolean()) fail(key, "true or false");
  return v->get<bool>();
}

JsonSection JsonSection::section(std::string_view key, bool required) {
  const nlohmann::json* v = find(key);
  if (!v) {
    if (required) fail(key, "an object");
    return JsonSection(kEmpty, source_, field(key));
  }
  if (!v->is_object()) fail(key, "an object");
  return JsonSection(*v, source_, field(key));
}

const nlohmann::json& JsonSection::raw(std::string_view key) {
  const nlohmann::json* v = find(key);
  return v ? *v : kEmpty;
}

void JsonSection::finish() const {
  for (auto it = j_.begin(); it != j_.end(); ++it) {
    if (!read_.count(it.key())) {
      std::string key =
          nlohmann::json(it.key()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      key = key.substr(1, key.size() - 2);  // without the quotes dump() adds
      if (key.size() > 80) key = key.substr(0, 77) + "...";
      // Every field this section knows was read before finish(): those are the candidates.
      const std::vector<std::string> known(read_.begin(), read_.end());
      throw ConfigError(source_ + ": " + field(key) + ": unknown field" + did_you_mean(key, known) +
                        " (check its spelling against docs/scenarios.md)");
    }
  }
}

}  // namespace metronome
