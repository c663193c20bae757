#pragma once
// Bad input is reported, never crashed on: every user-facing error names where it came from
// (file, line, column), the key, and what was expected. The CLI maps InputError to exit status 2.
#include <stdexcept>
#include <string>
#include <vector>

namespace micsim {

struct SourceLocation {
  std::string file;  // path as given by the user, "--set" for overrides, "<catalog>" ...
  int line = 0;      // 1-based; 0 = unknown
  int column = 0;    // 1-based; 0 = unknown
  std::string str() const;
};

class InputError : public std::runtime_error {
 public:
  InputError(SourceLocation where, std::string key, std::string message);
  const SourceLocation& where() const { return where_; }
  const std::string& key() const { return key_; }
  const std::string& detail() const { return detail_; }

 private:
  SourceLocation where_;
  std::string key_;
  std::string detail_;
};

// A key the schema does not know (YamlNode::check_keys): a typo, which callers that try keys (sweep's
// --vary) tell apart from a known key with a bad value.
class UnknownKeyError : public InputError {
 public:
  using InputError::InputError;
};

// "did you mean" hint: the closest candidate within a small edit distance, or "".
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace micsim
