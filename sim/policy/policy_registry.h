// One registry per kind of policy (KV policy, exhaustion, admission): the JSON `type` names a
// registered policy, and that policy's parse reads the rest of its section. Adding a policy is one
// file (the policy, its parse and its write) and one add() line in the kind's registry
// (docs/how_to_add_a_policy.md); tests add toy policies the same way.
//
// Keys that another registered type of the same kind reads are accepted and ignored under the
// chosen type, so `--set kv_policy.type=...` flips a scenario without removing the old type's
// fields; any other key is an error naming it. ignored_keys() names them, so that the scenario can
// say so (a window left behind by a type flip must not look as if it applied).
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/config_error.h"
#include "base/json_section.h"

namespace metronome {

template <class Policy>
class PolicyRegistry {
 public:
  using Ptr = std::shared_ptr<const Policy>;
  // Reads the chosen type's fields from the section (never `type`); throws ConfigError (through
  // JsonSection) on a bad value.
  using Parse = std::function<Ptr(JsonSection&)>;

  // `fields`: the keys `parse` may read. A type registered twice is a programming error.
  void add(std::string type, std::vector<std::string> fields, Parse parse) {
    for (const auto& e : entries_) {
      if (e.type == type) throw std::logic_error("policy type \"" + type + "\" registered twice");
    }
    entries_.push_back({std::move(type), std::move(fields), std::move(parse)});
  }

  // The section's policy; `def` is the type when the section names none (nullopt: required).
  Ptr parse(JsonSection& section, const std::optional<std::string>& def) const {
    const std::string type = section.one_of("type", def, types());
    const Entry* chosen = nullptr;
    for (const auto& e : entries_) {
      if (e.type == type) chosen = &e;
    }
    Ptr p = chosen->parse(section);
    for (const auto& e : entries_) {
      if (&e == chosen) continue;
      for (const auto& f : e.fields) section.raw(f);  // another type's key: accepted, ignored
    }
    section.finish();
    return p;
  }

  // A policy named by a bare string, `parent.key` (a kind whose types take no fields).
  Ptr parse_type(JsonSection& parent, std::string_view key,
                 const std::optional<std::string>& def) const {
    const std::string type = parent.one_of(key, def, types());
    const nlohmann::json empty = nlohmann::json::object();
    JsonSection none(empty, "", parent.field(key));
    for (const auto& e : entries_) {
      if (e.type == type) return e.parse(none);
    }
    return nullptr;  // unreachable: one_of accepted a registered type
  }

  // The keys of `section` (a parsed section of this kind, whose type is `type`) that only other
  // types read, each with the first type that reads it; null values are no values.
  std::vector<std::pair<std::string, std::string>> ignored_keys(const nlohmann::json& section,
                                                                const std::string& type) const {
    std::vector<std::pair<std::string, std::string>> out;
    const Entry* chosen = nullptr;
    for (const auto& e : entries_) {
      if (e.type == type) chosen = &e;
    }
    if (chosen == nullptr || !section.is_object()) return out;
    for (const auto& [key, value] : section.items()) {
      if (value.is_null() || key == "type" ||
          std::ranges::find(chosen->fields, key) != chosen->fields.end()) {
        continue;
      }
      for (const auto& e : entries_) {
        if (std::ranges::find(e.fields, key) != e.fields.end()) {
          out.emplace_back(key, e.type);
          break;
        }
      }
    }
    return out;
  }

  std::vector<std::string> types() const {
    std::vector<std::string> t;
    for (const auto& e : entries_) t.push_back(e.type);
    return t;
  }

 private:
  struct Entry {
    std::string type;
    std::vector<std::string> fields;
    Parse parse;
  };
  std::vector<Entry> entries_;
};

}  // namespace metronome
