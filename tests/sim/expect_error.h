// Expects f() to throw a ConfigError whose message contains every fragment (file, field,
// expectation): the shape of every bad-input test of the scenario's sections.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "base/config_error.h"

namespace metronome {

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

}  // namespace metronome
