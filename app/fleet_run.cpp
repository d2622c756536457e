#include "app/fleet_run.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <vector>

#include "app/run_folder.h"
#include "base/output_dir.h"
#include "base/output_file.h"
#include "base/output_number.h"
#include "base/progress.h"
#include "sim/cost/cost_model.h"
#include "sim/first_order.h"
#include "sim/fleet/fleet.h"
#include "sim/fleet/fleet_report.h"
#include "sim/report.h"
#include "sim/service_rate.h"

namespace metronome::cli {

int simulate_fleet(const Scenario& s, const FleetRunOptions& o) {
  const auto n = static_cast<size_t>(s.fleet->replicas());
  // The replicas' scenarios as the fleet runs them, for their folders.
  std::vector<Scenario> replicas;
  for (const ReplicaGroup& g : s.fleet->groups) {
    for (int64_t k = 0; k < g.count; ++k) {
      replicas.push_back(Fleet::replica_scenario(*g.replica, s.seed, replicas.size()));
      // What was said of the scenario as loaded (its --set warnings too) is said of each replica.
      std::vector<std::string> w = s.warnings;
      for (const auto& x : replicas.back().warnings) {
        if (std::find(w.begin(), w.end(), x) == w.end()) w.push_back(x);
      }
      replicas.back().warnings = std::move(w);
    }
  }
  std::unique_ptr<OutputDir> dir;
  std::vector<std::unique_ptr<RunFolder>> folders;
  std::vector<RunObserver*> observers;
  if (!o.out.empty()) {
    dir = std::make_unique<OutputDir>(
        o.out, "--out", std::vector<std::string>{"summary.json", "scenario.json", "replicas.csv"});
    for (size_t i = 0; i < n; ++i) {
      folders.push_back(std::make_unique<RunFolder>(dir->file("replicas/" + std::to_string(i))));
      observers.push_back(&folders.back()->series());
    }
  }
  Fleet fleet(s, observers);
  const auto seconds = static_cast<int64_t>(std::floor(s.horizon_s));
  auto progress = stderr_progress("fleet", seconds * static_cast<int64_t>(n), "replica-s");
  const FleetResult r = fleet.run(o.threads, progress.get());
  progress.reset();
  const nlohmann::json j = fleet_json(s, r);
  if (dir) {
    for (size_t i = 0; i < n; ++i) {
      // Each replica's folder is what `simulate --out` writes for its scenario. Its first-order
      // prediction is for the whole arrival stream on that one replica: the replica's own for a
      // one-replica fleet (which reproduces the single-engine folder byte for byte), and left out
      // for more, where the replica sees only its share.
      const Scenario& rs = replicas[i];
      const auto cost = make_cost_model(rs);
      auto prediction = predict_first_order(rs);
      prediction.service = check_service(rs, prediction, *cost);
      auto summary = run_json(rs, prediction, r.replicas[i].run, cost->label());
      if (!rs.cost_model.chosen.empty()) summary["cost_model_chosen"] = rs.cost_model.chosen;
      if (n > 1) {
        summary.erase("prediction");
        for (const char* k : {"t_sat_error_vs_blocks", "t_sat_error_vs_continuous"}) {
          summary["result"].erase(k);
        }
      }
      folders[i]->finish(rs, summary);
    }
    write_file_atomically(dir->file("replicas.csv"), replicas_csv(r), "replicas.csv");
    write_file_atomically(dir->file("scenario.json"), to_json(s).dump(2) + "\n", "scenario.json");
    write_file_atomically(dir->file("summary.json"), output_text(j) + "\n", "summary.json");
  }
  if (o.json) {
    std::cout << output_text(j) << "\n";
  } else {
    std::cout << fleet_text(s, r);
  }
  return 0;
}

}  // namespace metronome::cli
