#include "app/run_folder.h"

#include <filesystem>
#include <vector>

#include "base/config_error.h"
#include "base/input_files.h"

namespace metronome::cli {

namespace {

void remove_file(const std::string& path, const std::string& where) {
  refuse_input_as_output(path, where);
  std::error_code ec;
  std::filesystem::remove(path, ec);
  if (ec)
    throw ConfigError(where + ": cannot remove the previous run's file (" + ec.message() + ")");
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

void remove_fleet_outputs(const OutputDir& dir) {
  const std::string where = "--out " + dir.path();
  for (const char* f : {"replicas.csv", "replica_counts.csv", "gateway_control.csv"}) {
    remove_file(dir.file(f), where + " (its " + f + ")");
  }
  const std::filesystem::path replicas = dir.file("replicas");
  std::error_code ec;
  if (!std::filesystem::is_directory(replicas, ec)) return;
  std::vector<std::filesystem::path>
      folders;  // listed first: removing while listing is unspecified
  for (std::filesystem::directory_iterator it(replicas, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::error_code kind;
    if (all_digits(it->path().filename().string()) && it->is_directory(kind)) {
      folders.push_back(it->path());
    }
  }
  if (ec) throw ConfigError(where + ": cannot list its replicas folder (" + ec.message() + ")");
  for (const auto& folder : folders) {
    for (const char* f : RunFolder::kFiles) {
      remove_file((folder / f).string(),
                  where + " (its replicas/" + folder.filename().string() + "/" + f + ")");
    }
    std::filesystem::remove(folder, ec);  // only if nothing else is in it
  }
  std::filesystem::remove(replicas, ec);  // only if empty
}

}  // namespace metronome::cli
