#include "base/input_files.h"

#include <sys/stat.h>

#include <map>
#include <mutex>
#include <utility>

#include "base/config_error.h"

namespace metronome {
namespace {

struct Input {
  std::string path, what;
};

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::pair<dev_t, ino_t>, Input>& registry() {
  static std::map<std::pair<dev_t, ino_t>, Input> r;
  return r;
}

}  // namespace

void note_input_file(const std::string& path, std::string_view what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
  const std::lock_guard<std::mutex> lock(registry_mutex());
  registry().try_emplace({st.st_dev, st.st_ino}, Input{path, std::string(what)});
}

void refuse_input_as_output(const std::string& path, std::string_view label) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;  // nothing there yet: no input either
  const std::lock_guard<std::mutex> lock(registry_mutex());
  const auto it = registry().find({st.st_dev, st.st_ino});
  if (it == registry().end()) return;
  throw ConfigError(std::string(label) + ": is " + it->second.path + ", the " + it->second.what +
                    " this run reads; expected another path (writing would replace it)");
}

}  // namespace metronome
