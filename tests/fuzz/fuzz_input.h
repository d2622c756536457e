// Shared by the libFuzzer targets: an input is a JSON text, optionally followed by a line "--" and
// one argument per line (a --set assignment, a --seeds list, an option value).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace metronome::fuzz {

struct Input {
  std::string json;
  std::vector<std::string> lines;
};

inline Input split_input(const uint8_t* data, size_t size) {
  Input in;
  in.json.assign(reinterpret_cast<const char*>(data), size);
  if (auto cut = in.json.find("\n--\n"); cut != std::string::npos) {
    const std::string rest = in.json.substr(cut + 4);
    in.json.resize(cut);
    size_t start = 0;
    while (start <= rest.size()) {
      const size_t end = rest.find('\n', start);
      std::string line =
          rest.substr(start, end == std::string::npos ? std::string::npos : end - start);
      if (!line.empty()) in.lines.push_back(line);
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  return in;
}

// A finding that is not a crash: a wrong answer the target checked for.
[[noreturn]] inline void wrong(const char* what) {
  __builtin_printf("fuzz invariant broken: %s\n", what);
  __builtin_trap();
}

}  // namespace metronome::fuzz
