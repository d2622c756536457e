#include "base/output_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/config_error.h"
#include "base/input_files.h"

namespace metronome {

const std::vector<std::string> OutputDir::kMarkers = {"summary.json", "sweep.json"};

OutputDir::OutputDir(const std::string& path, std::string_view option,
                     const std::vector<std::string>& listed)
    : path_(path), lock_path_(path + "/" + std::string(kLockName)) {
  std::vector<std::string> stale = listed;
  stale.insert(stale.end(), kMarkers.begin(), kMarkers.end());
  const std::string where = std::string(option) + " " + path;
  if (path.empty()) throw ConfigError(std::string(option) + ": expected a folder path, got \"\"");
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_directory(path, ec)) {
    throw ConfigError(where + ": is a file, expected a folder (created if missing)");
  }
  // The previous run's files are removed below: none of them may be what this run reads.
  for (const std::string& name : stale) {
    refuse_input_as_output(file(name), where + " (its " + name + ")");
  }
  std::filesystem::create_directories(path, ec);
  if (ec) throw ConfigError(where + ": cannot create the folder (" + ec.message() + ")");
  // Lock, then check that the lock file is still the one at the path: a run that finished may have
  // unlinked it between our open and our flock, and a lock on an unlinked file excludes nobody.
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      const int err = errno;
      throw ConfigError(where + ": cannot write in the folder (" + std::strerror(err) +
                        "); expected a writable folder");
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      ::close(fd);
      if (err == EWOULDBLOCK) {
        throw ConfigError(where + ": another metronome process is writing this folder (it holds " +
                          lock_path_ + "); wait for it or choose another folder");
      }
      throw ConfigError(where + ": cannot lock " + lock_path_ + " (" + std::strerror(err) + ")");
    }
    struct stat a {
    }, b{};
    if (::fstat(fd, &a) == 0 && ::stat(lock_path_.c_str(), &b) == 0 && a.st_ino == b.st_ino &&
        a.st_dev == b.st_dev) {
      lock_fd_ = fd;
      break;
    }
    ::close(fd);
  }
  if (lock_fd_ < 0) throw ConfigError(where + ": cannot take the folder's lock");
  for (const std::string& name : stale) {
    const std::string f = file(name);
    if (::unlink(f.c_str()) != 0 && errno != ENOENT) {
      const int err = errno;
      throw ConfigError(where + ": cannot remove the previous run's " + std::string(name) + " (" +
                        std::strerror(err) + ")");
    }
  }
}

OutputDir::~OutputDir() {
  if (lock_fd_ >= 0) {
    ::unlink(lock_path_.c_str());  // while still locked: whoever opens it next re-checks the inode
    ::close(lock_fd_);
  }
}

}  // namespace metronome
