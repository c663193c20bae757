#pragma once
// Typed, located access to YAML input. Every value read through YamlNode either has the expected
// type and range or raises InputError naming file:line:col, the dotted key, and what was expected.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/io/input_error.hpp"

namespace micsim {

// Where a YAML tree came from; shared by all nodes of one document.
struct YamlSource {
  std::string file;                              // path shown in messages
  std::map<std::string, std::string> overrides;  // dotted key -> "--set key=value" text
};

class YamlNode {
 public:
  YamlNode(YAML::Node node, std::string path, std::shared_ptr<const YamlSource> src)
      : node_(std::move(node)), path_(std::move(path)), src_(std::move(src)) {}

  // Parse a whole file / string. Syntax errors become InputError with the parser's position.
  static YamlNode load_file(const std::string& path);
  static YamlNode load_string(const std::string& text, const std::string& shown_name);

  const std::string& path() const { return path_; }
  const YAML::Node& raw() const { return node_; }
  const std::shared_ptr<const YamlSource>& source() const { return src_; }
  SourceLocation location() const;
  [[noreturn]] void fail(const std::string& expected) const;

  bool is_map() const { return node_.IsMap(); }
  bool is_scalar() const { return node_.IsScalar(); }
  bool is_sequence() const { return node_.IsSequence(); }
  bool is_null() const { return !node_ || node_.IsNull(); }

  // Map access. `require_map` fails unless this node is a mapping.
  void require_map() const;
  bool has(const std::string& key) const;
  YamlNode at(const std::string& key) const;                 // required child
  std::optional<YamlNode> get(const std::string& key) const; // optional child
  // Every key must be in `allowed`; otherwise the error names the key and suggests the nearest.
  void check_keys(const std::vector<std::string>& allowed) const;
  std::vector<std::string> keys() const;
  std::vector<YamlNode> items() const;  // sequence elements

  // Scalars.
  std::string as_string() const;
  bool as_bool() const;
  double as_double() const;
  double as_double_in(double lo, double hi) const;          // inclusive range
  double as_positive_double() const;                        // > 0, finite
  int64_t as_int_in(int64_t lo, int64_t hi) const;          // integral value (5e8 accepted)
  int64_t as_positive_int() const { return as_int_in(1, int64_t(1) << 53); }
  std::string as_choice(const std::vector<std::string>& choices) const;

 private:
  YAML::Node node_;
  std::string path_;
  std::shared_ptr<const YamlSource> src_;
  std::string child_path(const std::string& key) const;
  std::string describe_value() const;
};

// Join choices as "a | b | c" for messages.
std::string join_choices(const std::vector<std::string>& choices);

}  // namespace micsim
