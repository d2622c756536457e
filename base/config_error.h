// The one error type for bad input: its message names the file, the field and what was expected.
#pragma once

#include <stdexcept>
#include <string>

namespace metronome {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace metronome
