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
#include "sim/analysis/report.h"
#include "sim/closed_form/first_order.h"
#include "sim/closed_form/service_rate.h"
#include "sim/cost/cost_model.h"
#include "sim/fleet/fleet.h"
#include "sim/fleet/fleet_report.h"

namespace metronome::cli {

int simulate_fleet(const Scenario& s, const FleetRunOptions& o) {
  const auto n = static_cast<size_t>(s.fleet->replicas());
  // Replica i's scenario as the fleet runs it, for its folder (an autoscaled fleet's replicas
  // past the first ones are its one group's).
  auto replica_scenario = [&](size_t i) {
    size_t first = 0;
    const ReplicaGroup* group = &s.fleet->groups.front();
    for (const ReplicaGroup& g : s.fleet->groups) {
      if (i < first + static_cast<size_t>(g.count)) {
        group = &g;
        break;
      }
      first += static_cast<size_t>(g.count);
    }
    Scenario rs = Fleet::replica_scenario(*group->replica, s.seed, i);
    // What was said of the scenario as loaded (its --set warnings too) is said of each replica.
    std::vector<std::string> w = s.warnings;
    for (const auto& x : rs.warnings) {
      if (std::find(w.begin(), w.end(), x) == w.end()) w.push_back(x);
    }
    rs.warnings = std::move(w);
    return rs;
  };
  std::unique_ptr<OutputDir> dir;
  std::vector<std::unique_ptr<RunFolder>> folders;
  Fleet::ObserverFor observer_for;
  if (!o.out.empty()) {
    std::vector<std::string> files = {"scenario.json", "replicas.csv"};
    if (s.fleet->autoscale) files.push_back("replica_counts.csv");
    if (s.fleet->gateway->control_loop()) files.push_back("gateway_control.csv");
    dir = std::make_unique<OutputDir>(o.out, "--out", files);
    remove_fleet_outputs(*dir);
    observer_for = [&](size_t i) -> RunObserver* {
      folders.resize(std::max(folders.size(), i + 1));
      folders[i] = std::make_unique<RunFolder>(dir->file("replicas/" + std::to_string(i)));
      return &folders[i]->series();
    };
  }
  Fleet fleet(s, observer_for);
  const auto seconds = static_cast<int64_t>(std::floor(s.horizon_s));
  // An autoscaled fleet counts the fleet's seconds (its replica count changes as it runs).
  auto progress =
      stderr_progress("fleet", seconds * (s.fleet->autoscale ? 1 : static_cast<int64_t>(n)),
                      s.fleet->autoscale ? "s" : "replica-s");
  const FleetResult r = fleet.run(o.threads, progress.get());
  progress.reset();
  const nlohmann::json j = fleet_json(s, r);
  if (dir) {
    for (size_t i = 0; i < r.replicas.size(); ++i) {
      // Each replica's folder is what `simulate --out` writes for its scenario. Its first-order
      // prediction is for the whole arrival stream on that one replica: the replica's own for a
      // one-replica fleet (which reproduces the single-engine folder byte for byte), and left out
      // for more, where the replica sees only its share.
      const Scenario rs = replica_scenario(i);
      const auto cost = make_cost_model(rs);
      auto prediction = predict_first_order(rs);
      prediction.service = check_service(rs, prediction, *cost);
      auto summary = run_json(rs, prediction, r.replicas[i].run, cost->label());
      if (!rs.cost_model.chosen.empty()) summary["cost_model_chosen"] = rs.cost_model.chosen;
      if (r.replicas.size() > 1) {
        summary.erase("prediction");
        for (const char* k : {"t_sat_error_vs_blocks", "t_sat_error_vs_continuous"}) {
          summary["result"].erase(k);
        }
      }
      folders[i]->finish(rs, summary);
    }
    write_file_atomically(dir->file("replicas.csv"), replicas_csv(s, r), "replicas.csv");
    if (s.fleet->autoscale) {
      write_file_atomically(dir->file("replica_counts.csv"), replica_counts_csv(r),
                            "replica_counts.csv");
    }
    if (r.gateway_initial_cap) {
      write_file_atomically(dir->file("gateway_control.csv"), gateway_control_csv(r),
                            "gateway_control.csv");
    }
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
