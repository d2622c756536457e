// The one rounding rule for numbers in outputs (JSON, CSV): a double is written with
// kOutputSignificantDigits significant digits, so 55.040000000000006 reads 55.04. Six digits keep
// a 10 ms latency to 10 ns and a 1000 s t_sat to 1 ms, below anything the model means (the cost
// model is good to percents; the clock ticks in ns), and stay exact for every integer count up to
// 10^6 that happens to be held as a double. Integers (counts, ids, seeds) are never touched; a
// number that is not finite is null, never NaN or inf. The scenario echo ("scenario" members) is
// the input language and keeps full precision, so that it reloads as the same scenario.
#pragma once

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

namespace metronome {

inline constexpr int kOutputSignificantDigits = 6;

// The double nearest the value rounded to kOutputSignificantDigits significant digits; JSON's
// shortest round-trip printing then shows only those digits.
inline double round_output(double v) {
  if (!std::isfinite(v) || v == 0) return v;
  const std::string text = fmt::format("{:.{}g}", v, kOutputSignificantDigits);
  double r = v;
  std::from_chars(text.data(), text.data() + text.size(), r);
  return r;
}

// A CSV cell for a double under the same rule; empty when the value is undefined (not finite).
inline std::string csv_number(double v) {
  return std::isfinite(v) ? fmt::format("{}", round_output(v)) : std::string();
}

// Rounds every double in an output document in place (both nlohmann json flavours), leaving the
// scenario echo as it was. Non-finite doubles become null.
template <class Json>
void round_output(Json& j) {
  if (j.is_number_float()) {
    const double v = j.template get<double>();
    j = std::isfinite(v) ? Json(round_output(v)) : Json(nullptr);
  } else if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() != "scenario") round_output(it.value());
    }
  } else if (j.is_array()) {
    for (auto& x : j) round_output(x);
  }
}

// The text of an output document: rounded by the rule above, then dumped.
template <class Json>
std::string output_text(Json j, int indent = 2) {
  round_output(j);
  return j.dump(indent);
}

}  // namespace metronome
