// Each subcommand registers itself on the app and returns the function that runs it.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace metronome::cli {

using Run = std::function<int()>;

Run add_simulate(CLI::App& app);
Run add_predict(CLI::App& app);
Run add_sweep(CLI::App& app);
Run add_sweep_merge(CLI::App& app);
Run add_capacity(CLI::App& app);
Run add_recommend(CLI::App& app);
Run add_plan(CLI::App& app);                             // app/plan_command.cpp
std::pair<CLI::App*, Run> add_calibrate(CLI::App& app);  // app/calibrate_command.cpp
Run add_replay(CLI::App& app);                           // app/replay_command.cpp
Run add_quality(CLI::App& app);                          // app/quality_command.cpp
Run add_admit(CLI::App& app);                            // app/admit_command.cpp
Run add_list(CLI::App& app);                             // app/list_command.cpp
Run add_book(CLI::App& app);                             // app/book_command.cpp

}  // namespace metronome::cli
