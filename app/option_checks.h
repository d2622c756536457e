// Validators for numeric command-line options, applied to the text before CLI11 converts it.
// CLI11 alone accepts "nan" for a double (and NaN passes every range check, since each comparison
// is false), reads integers with base 0 ("010" is octal 8, "0x10" is 16) and wraps "-1" into an
// unsigned 18446744073709551615. A seed or a count is decimal digits, and a real number is finite.
// Applied as a first check(), before a range: CLI11 stops at the first failing check, where a
// combined A & B reports both, "(A) AND (B)".
#pragma once

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace metronome::cli {

// A finite decimal number ("0.5", "1e-3"); refuses nan, inf, hex floats and trailing text.
inline const CLI::Validator kFiniteNumber(
    [](std::string& s) -> std::string {
      const bool plain = !s.empty() && s.find_first_not_of("0123456789+-.eE") == std::string::npos;
      char* end = nullptr;
      errno = 0;
      const double x = plain ? std::strtod(s.c_str(), &end) : 0.0;
      if (!plain || end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(x)) {
        return "expected a finite decimal number, got \"" + s + "\"";
      }
      return {};
    },
    "FINITE");

// A non-negative decimal integer without sign or leading zeros, at most 19 digits (fits int64).
inline const CLI::Validator kDecimalInteger(
    [](std::string& s) -> std::string {
      const bool digits = !s.empty() && s.size() <= 19 &&
                          s.find_first_not_of("0123456789") == std::string::npos &&
                          (s.size() == 1 || s[0] != '0');
      if (!digits) {
        return "expected a non-negative decimal integer without leading zeros (at most 19 "
               "digits), got \"" +
               s + "\"";
      }
      return {};
    },
    "UINT");

}  // namespace metronome::cli
