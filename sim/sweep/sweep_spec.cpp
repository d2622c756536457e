#include "sim/sweep/sweep_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "base/config_error.h"
#include "base/json_file.h"
#include "sim/config/config_limits.h"
#include "sim/fleet/fleet_config.h"

namespace metronome {

int64_t SweepSpec::points() const {
  // Saturates instead of overflowing: 63 axes of 2 values is 2^63 points.
  int64_t n = 1;
  for (const auto& a : axes) {
    const auto k = static_cast<int64_t>(a.values.size());
    if (k == 0) return 0;
    n = n > std::numeric_limits<int64_t>::max() / k ? std::numeric_limits<int64_t>::max() : n * k;
  }
  return n;
}

int64_t SweepSpec::runs() const {
  const int64_t p = points();
  const auto k = static_cast<int64_t>(seeds.size());
  if (k == 0) return 0;
  return p > std::numeric_limits<int64_t>::max() / k ? std::numeric_limits<int64_t>::max() : p * k;
}

void SweepSpec::check_limits() const {
  for (size_t i = 0; i < axes.size(); ++i) {
    for (size_t k = 0; k < i; ++k) {
      if (axes[k].key == axes[i].key) {
        throw ConfigError("--grid " + axes[i].key + ": the same key is given twice");
      }
    }
    const auto& v = axes[i].values;
    for (auto x = v.begin(); x != v.end(); ++x) {
      if (std::find(v.begin(), x, *x) != x) {
        throw ConfigError("--grid " + axes[i].key + ": " + x->dump() +
                          " is given twice (expected each value once: the same point would run "
                          "twice)");
      }
    }
  }
  // Each run's seed is the sweep's (--seeds): one set or gridded here would be overwritten.
  for (const auto& a : axes) {
    if (a.key == "seed")
      throw ConfigError(
          "--grid seed: a sweep's runs take their seeds from --seeds (or the sweep "
          "file's \"seeds\"); expected the seeds there");
  }
  for (const auto& set : sets) {
    if (set.starts_with("seed="))
      throw ConfigError("--set " + set +
                        ": a sweep's runs take their seeds from --seeds (or the "
                        "sweep file's \"seeds\"); expected the seeds there");
  }
  // The spec is written into sweep.json: every key, value, --set and path must be valid UTF-8.
  try {
    (void)to_json().dump();
  } catch (const nlohmann::json::type_error&) {
    throw ConfigError(
        "sweep: a --grid key or value, a --set or the scenario path is not valid UTF-8 (expected "
        "UTF-8 text)");
  }
  std::string shape;
  for (const auto& a : axes) {
    shape += (shape.empty() ? "" : " x ") + std::to_string(a.values.size()) + " (" + a.key + ")";
  }
  if (shape.empty()) shape = "1 (no grid)";
  if (shape.size() > 200) shape = shape.substr(0, 197) + "...";
  if (points() > kMaxGridPoints) {
    throw ConfigError(fmt::format(
        "sweep grid: {} points{} = {}; expected at most {} points (split the sweep)", shape,
        points() == std::numeric_limits<int64_t>::max() ? " (more than 9.2e18)" : "",
        points() == std::numeric_limits<int64_t>::max() ? std::string("overflow")
                                                        : std::to_string(points()),
        kMaxGridPoints));
  }
  if (runs() > kMaxSweepRuns) {
    throw ConfigError(fmt::format(
        "sweep: {} grid points x {} seeds = {} runs; expected at most {} runs per sweep (fewer "
        "seeds, or split the sweep with several --out directories)",
        points(), seeds.size(), runs(), kMaxSweepRuns));
  }
}

std::vector<nlohmann::json> SweepSpec::values_of(int64_t point) const {
  std::vector<nlohmann::json> v(axes.size());
  for (size_t i = axes.size(); i-- > 0;) {
    const auto n = static_cast<int64_t>(axes[i].values.size());
    v[i] = axes[i].values[static_cast<size_t>(point % n)];
    point /= n;
  }
  return v;
}

Scenario SweepSpec::load_point(int64_t point) const {
  std::vector<std::string> all = sets;
  const auto v = values_of(point);
  std::string where;
  for (size_t i = 0; i < axes.size(); ++i) {
    const std::string text = v[i].is_string() ? v[i].get<std::string>() : v[i].dump();
    all.push_back(axes[i].key + "=" + text);
    where += (where.empty() ? "" : ", ") + axes[i].key + "=" + text;
  }
  try {
    Scenario s = load_scenario(scenario, all);
    refuse_fleet(s, "sweep");
    return s;
  } catch (const ConfigError& e) {
    throw ConfigError("grid point " + std::to_string(point) + " (" + where + "): " + e.what());
  }
}

nlohmann::ordered_json SweepSpec::to_json() const {
  nlohmann::ordered_json grid = nlohmann::ordered_json::array();
  for (const auto& a : axes) grid.push_back({{"key", a.key}, {"values", a.values}});
  return {{"scenario", scenario}, {"set", sets}, {"grid", grid}, {"seeds", seeds}};
}

namespace {

std::vector<std::string> split_top_level(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  bool in_str = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_str) {
      if (c == '\\' && i + 1 < s.size()) {
        cur += c;
        cur += s[++i];
        continue;
      }
      if (c == '"') in_str = false;
    } else if (c == '"') {
      in_str = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      --depth;
    } else if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
      continue;
    }
    cur += c;
  }
  out.push_back(cur);
  return out;
}

// A sweep must not accept seeds that `simulate --seed` refuses (nor shard numbers past them).
[[noreturn]] void out_of_range(const std::string& digits, const std::string& what,
                               const char* bound) {
  throw ConfigError(what + ": " + digits + " is out of range (expected at most " +
                    std::to_string(kMaxSeed) + ", " + bound + ")");
}

// Decimal digits only: no sign (-1 would wrap), no leading zero (010 reads as octal elsewhere).
uint64_t parse_u64(const std::string& s, const std::string& what,
                   const char* bound = "the largest scenario seed") {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos ||
      (s.size() > 1 && s[0] == '0')) {
    throw ConfigError(what + ": \"" + s.substr(0, 40) +
                      "\" is not a non-negative decimal integer without leading zeros");
  }
  if (s.size() > 19) out_of_range(s.size() > 40 ? s.substr(0, 40) + "..." : s, what, bound);
  const uint64_t v = std::stoull(s);
  if (v > kMaxSeed) out_of_range(s, what, bound);
  return v;
}

}  // namespace

void check_distinct_seeds(const std::vector<uint64_t>& seeds, const std::string& where) {
  std::set<uint64_t> seen;
  for (const uint64_t s : seeds) {
    if (!seen.insert(s).second) {
      throw ConfigError(
          where + ": seed " + std::to_string(s) +
          " is given twice (expected each seed once: a repeated seed is the same run, "
          "and counting it twice would narrow the Wilson interval)");
    }
  }
}

GridAxis parse_grid_axis(const std::string& arg) {
  const std::string where = "--grid " + argument_preview(arg);
  const auto eq = arg.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size()) {
    throw ConfigError(where + ": expected KEY=V1,V2,..., e.g. kv_policy.type=unbounded,windowed");
  }
  GridAxis a;
  a.key = arg.substr(0, eq);
  for (const auto& text : split_top_level(arg.substr(eq + 1))) {
    if (text.empty()) throw ConfigError(where + ": empty value in the list");
    // A bare word such as windowed is a string.
    a.values.push_back(parse_json_if_json(text, where).value_or(nlohmann::json(text)));
  }
  return a;
}

std::vector<uint64_t> parse_seeds(const std::string& arg, const std::string& named) {
  const std::string where = named.empty() ? "--seeds " + argument_preview(arg) : named;
  std::vector<uint64_t> seeds;
  if (const auto dots = arg.find(".."); dots != std::string::npos) {
    const uint64_t a = parse_u64(arg.substr(0, dots), where);
    const uint64_t b = parse_u64(arg.substr(dots + 2), where);
    if (b < a) throw ConfigError(where + ": empty range (the end is before the start)");
    if (b - a >= static_cast<uint64_t>(kMaxSweepRuns)) {
      throw ConfigError(where + ": more than " + std::to_string(kMaxSweepRuns) + " seeds");
    }
    for (uint64_t s = a; s <= b; ++s) seeds.push_back(s);
  } else if (arg.find(',') != std::string::npos) {
    for (const auto& t : split_top_level(arg)) seeds.push_back(parse_u64(t, where));
    check_distinct_seeds(seeds, where);
  } else {
    const uint64_t n = parse_u64(arg, where);
    if (n == 0 || n > static_cast<uint64_t>(kMaxSweepRuns)) {
      throw ConfigError(where + ": the count must be in [1, " + std::to_string(kMaxSweepRuns) +
                        "]");
    }
    for (uint64_t s = 1; s <= n; ++s) seeds.push_back(s);
  }
  return seeds;
}

Shard parse_shard(const std::string& arg) {
  const std::string where = "--shard " + argument_preview(arg);
  const auto slash = arg.find('/');
  if (slash == std::string::npos) throw ConfigError(where + ": expected I/N, e.g. 0/4");
  Shard s;
  s.index = static_cast<int64_t>(parse_u64(arg.substr(0, slash), where, "the largest shard index"));
  s.count =
      static_cast<int64_t>(parse_u64(arg.substr(slash + 1), where, "the largest shard count"));
  if (s.count < 1 || s.index >= s.count) {
    throw ConfigError(where + ": need N >= 1 and 0 <= I < N (shards are numbered from 0)");
  }
  return s;
}

SweepSpec load_sweep_file(const std::string& path) {
  return parse_sweep_spec(read_json_file(path, "sweep file"), path);
}

SweepSpec parse_sweep_spec(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) throw ConfigError(path + ": expected a JSON object");
  SweepSpec s;
  for (const auto& [k, v] : j.items()) {
    if (k == "scenario") {
      if (!v.is_string()) throw ConfigError(path + ": scenario: expected a path");
      s.scenario = v.get<std::string>();
      // Relative to the sweep file, as a scenario file's own paths are to it; a path that only
      // the current folder holds still works (the current folder used to win over the file's).
      if (!s.scenario.empty() && std::filesystem::path(s.scenario).is_relative()) {
        const auto beside = std::filesystem::path(path).parent_path() / s.scenario;
        std::error_code ec;
        if (std::filesystem::exists(beside, ec) || !std::filesystem::exists(s.scenario, ec)) {
          s.scenario = beside.string();
        }
      }
    } else if (k == "set") {
      if (!v.is_array()) throw ConfigError(path + ": set: expected an array of \"key=value\"");
      for (const auto& x : v) {
        if (!x.is_string()) {
          throw ConfigError(path + ": set: expected strings \"key=value\", got " + json_preview(x));
        }
        s.sets.push_back(x.get<std::string>());
      }
    } else if (k == "grid") {
      if (v.is_object()) {
        for (const auto& [key, vals] : v.items()) {
          if (!vals.is_array() || vals.empty())
            throw ConfigError(path + ": grid." + json_preview(nlohmann::json(key)) +
                              ": expected a non-empty array");
          s.axes.push_back({key, std::vector<nlohmann::json>(vals.begin(), vals.end())});
        }
      } else if (v.is_array()) {
        for (const auto& ax : v) {
          if (!ax.is_object() || !ax.contains("key") || !ax["key"].is_string() ||
              !ax.contains("values") || !ax["values"].is_array() || ax["values"].empty() ||
              ax.size() != 2) {
            throw ConfigError(path + ": grid: expected [{\"key\": \"a.b\", \"values\": [..]}, ..]");
          }
          s.axes.push_back({ax["key"].get<std::string>(),
                            std::vector<nlohmann::json>(ax["values"].begin(), ax["values"].end())});
        }
      } else {
        throw ConfigError(path + ": grid: expected an object or an array");
      }
    } else if (k == "seeds") {
      if (v.is_string()) {
        s.seeds = parse_seeds(v.get<std::string>(), path + ": seeds " + v.dump());
      } else if (v.is_number_unsigned()) {
        s.seeds = parse_seeds(std::to_string(v.get<uint64_t>()), path + ": seeds " + v.dump());
      } else if (v.is_array()) {
        for (const auto& x : v) {
          if (!x.is_number_unsigned())
            throw ConfigError(path + ": seeds: expected non-negative integers");
          if (x.get<uint64_t>() > kMaxSeed) {
            out_of_range(std::to_string(x.get<uint64_t>()), path + ": seeds",
                         "the largest scenario seed");
          }
          s.seeds.push_back(x.get<uint64_t>());
        }
        check_distinct_seeds(s.seeds, path + ": seeds");
      } else {
        throw ConfigError(path + ": seeds: expected \"a..b\", a count or a list");
      }
    } else {
      throw ConfigError(path + ": unknown key " + json_preview(nlohmann::json(k)) +
                        " (expected scenario, set, grid, seeds)");
    }
  }
  return s;
}

}  // namespace metronome
