#include "models/io/input_error.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace micsim {

std::string SourceLocation::str() const {
  if (file.empty()) return "<input>";
  if (line <= 0) return file;
  if (column <= 0) return fmt::format("{}:{}", file, line);
  return fmt::format("{}:{}:{}", file, line, column);
}

// A message quotes what the user gave; a 4 MB value must not come back whole. Any run of more than
// 240 characters without a space is cut (paths and names are far shorter).
static std::string cap_long_words(const std::string& s) {
  constexpr size_t kMaxWord = 240;
  std::string out;
  size_t word = 0, dropped = 0;
  for (char c : s) {
    word = c == ' ' || c == '\n' ? 0 : word + 1;
    if (word > kMaxWord) {
      ++dropped;
      continue;
    }
    if (dropped) out += fmt::format("...({} more bytes)", dropped), dropped = 0;
    out += c;
  }
  if (dropped) out += fmt::format("...({} more bytes)", dropped);
  return out;
}

static std::string compose(const SourceLocation& where, const std::string& key, const std::string& message) {
  if (key.empty()) return cap_long_words(fmt::format("{}: {}", where.str(), message));
  return cap_long_words(fmt::format("{}: {}: {}", where.str(), key, message));
}

InputError::InputError(SourceLocation where, std::string key, std::string message)
    : std::runtime_error(compose(where, key, message)),
      where_(std::move(where)),
      key_(std::move(key)),
      detail_(std::move(message)) {}

static size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::max<size_t>(3, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

}  // namespace micsim
