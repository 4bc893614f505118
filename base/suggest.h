// Suggestions for a mistyped name ("did you mean amd-2s?"): the candidate
// closest to what was typed by edit distance, when it is close enough to be
// a typo rather than another word.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace resctrlfs {

// Levenshtein distance with adjacent transpositions counted as one edit
// (optimal string alignment), so "stauts" is one edit from "status".
inline size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

// The candidate nearest to `typed` if it is within a third of its length
// (at least one edit, at most three), else "". Ties go to the first listed.
inline std::string closest_name(std::string_view typed, const std::vector<std::string>& names) {
  const size_t limit = std::clamp<size_t>(typed.size() / 3, 1, 3);
  std::string best;
  size_t best_d = limit + 1;
  for (const std::string& n : names) {
    const size_t d = edit_distance(typed, n);
    if (d < best_d) {
      best_d = d;
      best = n;
    }
  }
  return best;
}

// "a, b, c".
inline std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// " (did you mean X?)" for the closest name, or "".
inline std::string did_you_mean(std::string_view typed, const std::vector<std::string>& names) {
  const std::string c = closest_name(typed, names);
  return c.empty() ? std::string() : " (did you mean " + c + "?)";
}

}  // namespace resctrlfs
