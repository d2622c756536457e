// A sweep: a base scenario, a grid over any scenario fields (each axis a dotted key and its values,
// applied like --set), and a seed list. Runs are numbered run = point x seeds + seed index, points
// in row-major grid order (the first axis varies slowest), so any slice of runs is well defined.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/shard.h"
#include "sim/config/scenario.h"

namespace metronome {

struct GridAxis {
  std::string key;
  std::vector<nlohmann::json> values;
};

// Every point is loaded and kept, and every row is kept for the aggregate, so the size of a sweep
// is bounded before anything is expanded: a 691-byte spec must not ask for a billion points.
inline constexpr int64_t kMaxGridPoints = 100'000;
inline constexpr int64_t kMaxSweepRuns = 1'000'000;

struct SweepSpec {
  std::string scenario;           // scenario file ("" = built-in default)
  std::vector<std::string> sets;  // applied to every point before the grid
  std::vector<GridAxis> axes;
  std::vector<uint64_t> seeds;

  int64_t points() const;  // saturates at INT64_MAX
  int64_t runs() const;    // saturates at INT64_MAX
  // Checks the grid before anything is expanded: ConfigError for an axis key given twice, text that
  // is not valid UTF-8 (it goes into sweep.json), or naming
  // the grid's shape when it exceeds kMaxGridPoints or kMaxSweepRuns.
  void check_limits() const;
  int64_t point_of(int64_t run) const { return run / static_cast<int64_t>(seeds.size()); }
  uint64_t seed_of(int64_t run) const { return seeds[static_cast<size_t>(run) % seeds.size()]; }
  // The grid values of one point, one per axis.
  std::vector<nlohmann::json> values_of(int64_t point) const;
  // The scenario of one point (seed not yet set); throws ConfigError naming the point.
  Scenario load_point(int64_t point) const;
  nlohmann::ordered_json to_json() const;
};

// "key=v1,v2,v3": commas inside JSON objects, arrays or strings do not split.
GridAxis parse_grid_axis(const std::string& arg);
// "N" (seeds 1..N), "a..b" (inclusive) or "a,b,c".
// `where` names the value in errors (default "--seeds ARG"; a sweep file names its own field).
std::vector<uint64_t> parse_seeds(const std::string& arg, const std::string& where = "");
// ConfigError naming `where` and the first seed that appears twice.
void check_distinct_seeds(const std::vector<uint64_t>& seeds, const std::string& where);
Shard parse_shard(const std::string& arg);
// A sweep file: {"scenario": path, "set": [..], "grid": [{"key": k, "values": [..]}, ..] or
// {"k": [..]}, "seeds": "1..100" or [..]}. Relative scenario paths are relative to the file.
SweepSpec load_sweep_file(const std::string& path);
// The same from parsed JSON; `path` names the file in messages and anchors a relative scenario.
SweepSpec parse_sweep_spec(const nlohmann::json& j, const std::string& path);

}  // namespace metronome
