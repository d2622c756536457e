// Bad input's checks: a ConfigError's message names the file, the field and the value expected.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "base/config_error.h"

namespace metronome {

// Expects f() to throw a ConfigError whose message contains every fragment: the shape of every
// bad-input test of the scenario's sections.
inline void expect_error(const std::function<void()>& f,
                         const std::vector<std::string>& fragments) {
  try {
    f();
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    for (const auto& frag : fragments) {
      EXPECT_NE(std::string(e.what()).find(frag), std::string::npos)
          << "message \"" << e.what() << "\" lacks \"" << frag << "\"";
    }
  }
}

// The message of the ConfigError f() throws; empty when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace metronome
