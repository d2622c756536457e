// Which window and sinks give the most schedulable sessions? For each (W, S) of a grid: the memory
// cap (pool over the per-session bound), the deadline cap (capacity probes), and N* (sessions
// served at steady state under the scenario's admission controller) across seeds, with the
// silent-frame rate and whether any run was flagged (stalled, collapsed, missed deadlines). The
// best cell is the one with the largest median N* among those that meet the quality floor (a
// minimum W and S, or a largest perplexity ratio to full attention read from `metronome quality`
// output) and whose runs are all clean.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/scenario.h"

namespace metronome {

struct RecommendSpec {
  std::vector<int64_t> windows{240, 480, 960, 1920};
  std::vector<int64_t> sinks{0, 4, 16};
  int64_t seeds = 5;
  int64_t min_window = 0, min_sinks = 0;
  // (W, S) -> perplexity ratio to full attention, from a quality run; cells without an entry have
  // no measured quality and are not recommended when max_ppl_ratio is set.
  std::vector<std::pair<std::pair<int64_t, int64_t>, double>> ppl_ratio;
  std::optional<double> max_ppl_ratio;
  double fraction = 0;  // deadline-cap fraction; 0: admission.high_fraction
  int jobs = 1;
  bool progress = false;  // on stderr (sim/progress.h)
};

struct RecommendCell {
  int64_t window = 0, sinks = 0;
  int64_t memory_cap = 0, deadline_cap = 0;
  std::vector<double> n_star;  // per seed
  double n_star_median = 0, n_star_p5 = 0, n_star_p95 = 0;
  double silent_fraction_mean = 0;
  int64_t flagged_runs = 0;
  // Runs in which admission turned nobody away: N* there measures the offered load, not capacity.
  int64_t unrejected_runs = 0;
  std::optional<double> ppl_ratio;
  bool eligible = false;  // meets the quality floor and every run is clean
  std::string why_not;
};

struct Recommendation {
  std::vector<RecommendCell> cells;  // ranked: eligible first, then by median N*
  std::optional<size_t> best;        // index into cells
};

Recommendation recommend(const Scenario& base, const RecommendSpec& spec);
// (W, S) -> ppl_from(W, S) / ppl_from(full attention) from a `metronome quality --json` file;
// ConfigError naming the file and field when it is not one.
std::vector<std::pair<std::pair<int64_t, int64_t>, double>> read_ppl_ratios(
    const std::string& path);
nlohmann::json recommend_json(const Scenario& base, const RecommendSpec& spec,
                              const Recommendation& r);
std::string recommend_text(const Scenario& base, const Recommendation& r);

}  // namespace metronome
