// "Did you mean ...?" for a name that is not known: the known name closest in edit distance, when
// it is close enough to be the likely intent (a typo, not a different word).
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace metronome {

// Levenshtein distance (insertions, deletions, substitutions), case-insensitive.
inline size_t edit_distance(std::string_view a, std::string_view b) {
  auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; };
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min(
          {row[j] + 1, row[j - 1] + 1, diag + (lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The closest known name, or "" when none is within max(2, a third of the name's length) edits.
inline std::string nearest_name(std::string_view name, const std::vector<std::string>& known) {
  std::string best;
  size_t best_d = std::max<size_t>(2, name.size() / 3) + 1;
  for (const auto& k : known) {
    const size_t d = edit_distance(name, k);
    if (d < best_d) {
      best_d = d;
      best = k;
    }
  }
  return best;
}

// " (did you mean \"x\"?)" or "".
inline std::string did_you_mean(std::string_view name, const std::vector<std::string>& known) {
  const std::string n = nearest_name(name, known);
  return n.empty() ? std::string() : " (did you mean \"" + n + "\"?)";
}

}  // namespace metronome
