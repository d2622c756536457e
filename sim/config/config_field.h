// A config section's fields, each written once: its JSON key, how it is read (default, bounds,
// check) and how it is written, side by side in one list that the section's parse and to_json
// both walk, so the two cannot drift and adding a field is one line. Reading follows the list's
// order (the first bad field in it is the one reported); a JSON object's keys are sorted, so the
// writing order does not matter. What joins sections (a GPU block written only under the cost
// model that uses it) stays in the scenario's own code.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/json_section.h"

namespace metronome {

template <class C>
struct ConfigField {
  std::function<void(JsonSection&, C&)> read;
  std::function<void(const C&, nlohmann::json&)> write;  // null: read, never written
};

template <class C>
using ConfigFields = std::vector<ConfigField<C>>;

template <class C>
void read_fields(const ConfigFields<C>& fields, JsonSection& section, C& c) {
  for (const auto& f : fields) f.read(section, c);
}

// A whole section: its fields, then no key left unread.
template <class C>
C parse_fields(const ConfigFields<C>& fields, JsonSection& section) {
  C c;
  read_fields(fields, section, c);
  section.finish();
  return c;
}

template <class C>
void write_fields(const ConfigFields<C>& fields, const C& c, nlohmann::json& section) {
  for (const auto& f : fields) {
    if (f.write) f.write(c, section);
  }
}

// When a field is written: always; only where it differs from the struct's default, so the
// resolved form of a scenario that never states it stays as it was; or never.
enum class Write { kAlways, kUnlessDefault, kReadOnly };

// A field's default: the value the struct starts with (kInitial), none (kRequired), or a value.
inline constexpr struct Initial {
} kInitial;
inline constexpr struct Required {
} kRequired;

namespace config_field {

template <class T>
std::optional<T> fallback(const T& initial, Initial) {
  return initial;
}
template <class T>
std::optional<T> fallback(const T&, Required) {
  return std::nullopt;
}
template <class T, class V>
std::optional<T> fallback(const T&, const V& v) {
  return T(v);
}

template <class C, class T>
std::function<void(const C&, nlohmann::json&)> writer(const std::string& key, T C::*m, Write w) {
  if (w == Write::kReadOnly) return nullptr;
  return [key, m, w](const C& c, nlohmann::json& j) {
    if (w == Write::kUnlessDefault && c.*m == C{}.*m) return;
    j[key] = c.*m;
  };
}

}  // namespace config_field

// An integer in [lo, hi].
template <class C, class D = Initial>
ConfigField<C> int_field(std::string key, int64_t C::*m, int64_t lo, int64_t hi, D d = {},
                         Write w = Write::kAlways) {
  return {[key, m, lo, hi, d](JsonSection& s, C& c) {
            c.*m = s.integer(key, config_field::fallback(c.*m, d), lo, hi);
          },
          config_field::writer(key, m, w)};
}

// A finite number in [lo, hi].
template <class C, class D = Initial>
ConfigField<C> number_field(std::string key, double C::*m, double lo, double hi, D d = {},
                            Write w = Write::kAlways) {
  return {[key, m, lo, hi, d](JsonSection& s, C& c) {
            c.*m = s.in_range(key, config_field::fallback(c.*m, d), lo, hi);
          },
          config_field::writer(key, m, w)};
}

// A string; with `allowed`, one of those.
template <class C, class D = Initial>
ConfigField<C> string_field(std::string key, std::string C::*m, std::vector<std::string> allowed,
                            D d = {}, Write w = Write::kAlways) {
  return {[key, m, allowed, d](JsonSection& s, C& c) {
            const auto def = config_field::fallback(c.*m, d);
            c.*m = allowed.empty() ? s.string(key, def) : s.one_of(key, def, allowed);
          },
          config_field::writer(key, m, w)};
}

template <class C>
ConfigField<C> bool_field(std::string key, bool C::*m, Write w = Write::kAlways) {
  return {[key, m](JsonSection& s, C& c) { c.*m = s.boolean(key, c.*m); },
          config_field::writer(key, m, w)};
}

// A list of strings, empty by default; `expected` names it in the message. Written where not
// empty.
template <class C>
ConfigField<C> strings_field(std::string key, std::vector<std::string> C::*m,
                             std::string expected) {
  return {[key, m, expected](JsonSection& s, C& c) {
            if (!s.has(key)) return (void)s.raw(key);
            const auto& v = s.raw(key);
            if (!v.is_array()) s.fail(key, expected);
            for (const auto& e : v) {
              if (!e.is_string()) s.fail(key, expected);
              (c.*m).push_back(e.get<std::string>());
            }
          },
          config_field::writer(key, m, Write::kUnlessDefault)};
}

// A string a reader may leave for people (a comment, a source), accepted and not kept.
template <class C>
ConfigField<C> note_field(std::string key) {
  return {[key](JsonSection& s, C&) { s.string(key, ""); }, nullptr};
}

// Any JSON a reader may leave for people (a table of a fit's errors), accepted and not kept.
template <class C>
ConfigField<C> any_note_field(std::string key) {
  return {[key](JsonSection& s, C&) { s.raw(key); }, nullptr};
}

// `f`, written only where `when` holds (a field only one mode uses).
template <class C>
ConfigField<C> written_if(ConfigField<C> f, std::function<bool(const C&)> when) {
  auto write = std::move(f.write);
  f.write = [write, when](const C& c, nlohmann::json& j) {
    if (when(c)) write(c, j);
  };
  return f;
}

}  // namespace metronome
