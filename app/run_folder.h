// A run's --out folder as `simulate` writes it and `book` writes a recorded run: locked, the old
// completion markers removed first, timeseries.csv streamed during the run, then scenario.json and,
// last, summary.json (a folder without it holds an unfinished run).
#pragma once

#include <array>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/output_dir.h"
#include "base/output_file.h"
#include "base/output_number.h"
#include "sim/config/scenario.h"
#include "sim/output/time_series_writer.h"

namespace metronome::cli {

class RunFolder {
 public:
  // What it writes, in that order.
  static constexpr std::array<const char*, 3> kFiles = {"timeseries.csv", "scenario.json",
                                                        "summary.json"};

  explicit RunFolder(const std::string& path)
      : dir_(path, "--out", {"scenario.json"}), series_(dir_.file("timeseries.csv")) {}

  TimeSeriesWriter& series() { return series_; }
  const OutputDir& dir() const { return dir_; }

  void finish(const Scenario& s, const nlohmann::json& summary) {
    series_.close();
    write_file_atomically(dir_.file("scenario.json"), to_json(s).dump(2) + "\n", "scenario.json");
    write_file_atomically(dir_.file("summary.json"), output_text(summary) + "\n", "summary.json");
  }

 private:
  OutputDir dir_;
  TimeSeriesWriter series_;
};

// An earlier fleet's outputs in a folder a run now owns: its replicas' folders (replicas/N) and the
// tables beside them. A smaller fleet, or one engine, would otherwise leave them there as if they
// were its own. Removes only the files Metronome writes there (refusing one that is an input of
// this run), then each folder left empty; ConfigError where a file cannot be removed.
void remove_fleet_outputs(const OutputDir& dir);

}  // namespace metronome::cli
