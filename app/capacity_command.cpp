#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <memory>

#include "app/commands.h"
#include "app/option_checks.h"
#include "app/scenario_options.h"
#include "base/output_number.h"
#include "base/progress.h"
#include "sim/analysis/capacity.h"

namespace metronome::cli {

Run add_capacity(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "capacity",
      "Report the memory cap (sessions whose resident KV fits the pool) and the deadline cap "
      "(sessions whose steady per-frame latency stays under a fraction of the deadline, by "
      "bisection over short simulated probes), and which one binds.");
  struct Options {
    ScenarioOptions scenario;
    double fraction = 0;
    double probe_s = 0;
    int phase_draws = 5;
  };
  auto o = std::make_shared<Options>();
  o->scenario.add_to(*cmd);
  cmd->add_option("--fraction", o->fraction,
                  "Fraction of the deadline the p95 latency must stay under (default: the "
                  "scenario's admission.high_fraction, 0.9)")
      ->check(kFiniteNumber)
      ->check(CLI::Range(1e-6, 1e3));
  cmd->add_option(
         "--probe-s", o->probe_s,
         "Simulated seconds per deadline probe (default: to steady state: windowed, twice the "
         "time to fill S + W; unbounded, the call length within the horizon)")
      ->check(kFiniteNumber)
      ->check(CLI::Range(1e-3, 1e6));
  const CLI::Option* draws =
      cmd->add_option("--phase-draws", o->phase_draws,
                      "Poisson scenarios: draws of random caller phases the deadline cap is also "
                      "probed at (seeds seed, seed + 1, ...); the median and range are reported "
                      "(default 5)")
          ->check(CLI::Range(1, 1000));
  return [o, draws]() {
    const Scenario s = o->scenario.load_engine("capacity");
    if (draws->count() > 0 && !s.workload.arrival.random()) {
      std::cerr << "metronome: warning: --phase-draws is ignored: the scenario's arrivals ("
                << s.workload.arrival.type() << ") give every caller its phase, none is drawn\n";
    }
    const double f = o->fraction > 0 ? o->fraction : s.admission.policy->congestion_fraction();
    // Unbounded KV grows for as long as a probe lasts: past the calls' length, its callers reach
    // contexts no call does, and the cap it finds is for longer calls than the scenario's.
    if (const double call = std::min(s.workload.duration.policy->typical_s(), s.horizon_s);
        !s.kv_policy.bounded() && o->probe_s > call) {
      std::cerr << fmt::format(
          "metronome: warning: --probe-s {:g} s is longer than the calls ({:g} s{}): with "
          "unbounded KV the probe's callers reach contexts the calls never do, so the deadline "
          "cap is that of longer calls; leave --probe-s out for the call length\n",
          o->probe_s, call, s.workload.duration.fixed_s() ? "" : ", typical");
    }
    const auto progress = stderr_progress("capacity", 0, "probes");
    const auto c = compute_capacity(s, f, o->probe_s, o->phase_draws, progress.get());
    if (progress) progress->finish();
    if (o->scenario.json) {
      std::cout << output_text(capacity_json(s, c)) << "\n";
    } else {
      std::cout << capacity_text(s, c);
    }
    return 0;
  };
}

}  // namespace metronome::cli
