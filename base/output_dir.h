// An output folder that one run owns while it writes. Opening it creates the folder, takes an
// exclusive lock (two processes writing one --out would interleave rows and both claim to be
// complete) and removes the previous run's completion markers first, so that a run killed half way
// can never leave an old "complete" summary beside its new partial rows. Each command writes its
// marker (kMarkers: summary.json, sweep.json) last, with write_file_atomically; every command's
// marker is removed, so that a folder another command wrote before (a simulate's, then a sweep's)
// never shows that command's finished run beside this one's files.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace metronome {

class OutputDir {
 public:
  // `option` names the flag for messages ("--out"). `stale` lists the files (relative to the
  // folder) besides kMarkers that describe a finished run; they and the markers are removed
  // before anything else is written.
  // ConfigError: the path is a file, cannot be created, another process holds the lock, or one of
  // the stale files is an input of this run (base/input_files.h).
  OutputDir(const std::string& path, std::string_view option,
            const std::vector<std::string>& stale);
  ~OutputDir();  // releases the lock and removes the lock file
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(std::string_view name) const { return path_ + "/" + std::string(name); }

  static constexpr std::string_view kLockName = ".metronome.lock";
  // The files whose presence says a command's run in the folder finished.
  static const std::vector<std::string> kMarkers;

 private:
  std::string path_;
  std::string lock_path_;
  int lock_fd_ = -1;
};

}  // namespace metronome
