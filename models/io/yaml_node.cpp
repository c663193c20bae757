#include "models/io/yaml_node.hpp"

#include "models/io/input_file.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <map>
#include <sstream>

#include <cmath>
#include <fmt/format.h>

namespace micsim {

std::string join_choices(const std::vector<std::string>& choices) {
  std::string out;
  for (size_t i = 0; i < choices.size(); ++i) out += (i ? " | " : "") + choices[i];
  return out;
}

static SourceLocation mark_location(const std::string& file, const YAML::Mark& m) {
  if (m.is_null()) return {file, 0, 0};
  return {file, m.line + 1, m.column + 1};
}

namespace {

// yaml-cpp keeps both entries of a repeated key and returns the first: a silent surprise in a config.
void reject_duplicate_keys(const YAML::Node& n, const std::string& file, int depth) {
  if (depth > 64) throw InputError(mark_location(file, n.Mark()), "", "nested more than 64 levels deep; a scenario is a few levels");
  if (n.IsMap()) {
    std::map<std::string, YAML::Mark> seen;
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (it->first.IsScalar()) {
        auto [where, fresh] = seen.emplace(it->first.Scalar(), it->first.Mark());
        if (!fresh)
          throw InputError(mark_location(file, it->first.Mark()), shorten_for_message(it->first.Scalar()),
                           fmt::format("duplicate key (first given at line {}); give each key once", where->second.line + 1));
      }
      reject_duplicate_keys(it->second, file, depth + 1);
    }
  } else if (n.IsSequence()) {
    for (const auto& item : n) reject_duplicate_keys(item, file, depth + 1);
  }
}

// Counts a stream's documents without building them, to find a second one. yaml-cpp 0.7's LoadAll
// can loop forever, building empty documents, on some malformed input (a line starting with ',' was
// found by the fuzzer): the parser stops advancing. Each real document consumes at least one
// character, so more documents than characters means it stopped, and the input is refused.
class DocumentCounter : public YAML::EventHandler {
 public:
  int documents = 0;
  bool has_content = false;  // in the current document: more than an empty (null) node
  YAML::Mark content;        // where that content starts
  void OnDocumentStart(const YAML::Mark&) override { ++documents, has_content = false; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { saw(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string&) override { saw(m); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override { saw(m); }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override { saw(m); }
  void OnMapEnd() override {}

 private:
  void saw(const YAML::Mark& m) {
    if (!has_content) content = m;
    has_content = true;
  }
};

// A line starting "---" or "..." (where documents start and end).
bool has_document_marker(const std::string& text) {
  for (size_t at = 0; at < text.size();) {
    if (text.compare(at, 3, "---") == 0 || text.compare(at, 3, "...") == 0) return true;
    const size_t nl = text.find('\n', at);
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  return false;
}

// Throws if `text` holds a second document with content, or if the parser stops advancing.
void require_one_document(const std::string& text, const std::string& shown_name) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentCounter counter;
  while (parser.HandleNextDocument(counter)) {
    if (counter.documents > 1 && counter.has_content)
      throw InputError(mark_location(shown_name, counter.content), "", "a second YAML document ('---'); give one document per file");
    if (size_t(counter.documents) > text.size() + 1)
      throw InputError(SourceLocation{shown_name, 1, 1}, "", "invalid YAML: not a YAML document (the parser makes no progress)");
  }
}

}  // namespace

YamlNode YamlNode::load_string(const std::string& text, const std::string& shown_name) {
  auto src = std::make_shared<YamlSource>();
  src->file = shown_name;
  YAML::Node root;
  try {
    root = YAML::Load(text);
    // One document per file: a second one ("---" and more keys) would otherwise be ignored. Only a
    // text with a document marker line can hold one, and only an empty first document can hide a
    // parser that stopped: the second pass is skipped for ordinary scenarios (parsed once per
    // plan candidate).
    if (!root || root.IsNull() || has_document_marker(text)) require_one_document(text, shown_name);
  } catch (const YAML::Exception& e) {
    std::string msg = e.msg;
    if (msg == "bad file" || msg.find("depth") != std::string::npos) msg = "nested too deeply (or not a YAML document)";
    throw InputError(mark_location(shown_name, e.mark), "", "invalid YAML: " + msg);
  }
  reject_duplicate_keys(root, shown_name, 0);
  return YamlNode(root, "", src);
}

YamlNode YamlNode::load_file(const std::string& path) {
  return load_string(read_whole_file(path), path);  // regular files only, with clear errors
}

SourceLocation YamlNode::location() const {
  // A value that came from --set (or sits under a key that did) is reported as such.
  if (src_) {
    for (const auto& [key, text] : src_->overrides) {
      if (path_ == key || path_.rfind(key + ".", 0) == 0) return {text, 0, 0};
    }
    // A mapping the file does not have, created to hold an override (`--set what_if.slow_node.node=3`):
    // what is missing or wrong in it is the override's doing.
    if (node_ && node_.Mark().is_null())
      for (const auto& [key, text] : src_->overrides)
        if (path_.empty() || key.rfind(path_ + ".", 0) == 0) return {text, 0, 0};
  }
  std::string file = src_ ? src_->file : "";
  return node_ ? mark_location(file, node_.Mark()) : SourceLocation{file, 0, 0};
}

void YamlNode::fail(const std::string& expected) const {
  throw InputError(location(), path_, expected);
}

std::string YamlNode::child_path(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

std::string YamlNode::describe_value() const {
  if (!node_ || node_.IsNull()) return "nothing";
  if (node_.IsScalar()) return "'" + shorten_for_message(node_.Scalar()) + "'";
  if (node_.IsMap()) return "a mapping";
  if (node_.IsSequence()) return "a list";
  return "an unknown node";
}

void YamlNode::require_map() const {
  if (!node_.IsMap()) fail("expected a mapping of keys, got " + describe_value());
}

bool YamlNode::has(const std::string& key) const {
  return node_.IsMap() && node_[key] && !node_[key].IsNull();
}

YamlNode YamlNode::at(const std::string& key) const {
  require_map();
  YAML::Node child = node_[key];
  if (!child || child.IsNull()) {
    throw InputError(location(), child_path(key), "required key is missing");
  }
  return YamlNode(child, child_path(key), src_);
}

std::optional<YamlNode> YamlNode::get(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return YamlNode(node_[key], child_path(key), src_);
}

std::vector<std::string> YamlNode::keys() const {
  std::vector<std::string> out;
  if (!node_.IsMap()) return out;
  for (auto it = node_.begin(); it != node_.end(); ++it) out.push_back(it->first.as<std::string>());
  return out;
}

std::vector<YamlNode> YamlNode::items() const {
  if (!node_.IsSequence()) fail("expected a list, got " + describe_value());
  std::vector<YamlNode> out;
  for (size_t i = 0; i < node_.size(); ++i)
    out.emplace_back(node_[i], fmt::format("{}[{}]", path_, i), src_);
  return out;
}

void YamlNode::check_keys(const std::vector<std::string>& allowed) const {
  require_map();
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    if (!it->first.IsScalar()) fail("keys must be plain names");
    std::string key = it->first.Scalar();
    bool ok = false;
    for (const auto& a : allowed) ok = ok || a == key;
    if (ok) continue;
    std::string hint = closest_match(key, allowed);
    std::string msg = "unknown key";
    if (!hint.empty()) msg += fmt::format(" (did you mean '{}'?)", hint);
    msg += "; allowed: " + join_choices(allowed);
    YamlNode key_node(it->first, child_path(key), src_);
    throw UnknownKeyError(key_node.location(), shorten_for_message(child_path(key)), msg);
  }
}

std::string YamlNode::as_string() const {
  if (!node_ || !node_.IsScalar()) fail("expected a string, got " + describe_value());
  return node_.Scalar();
}

bool YamlNode::as_bool() const {
  if (node_ && node_.IsScalar()) {
    const std::string& s = node_.Scalar();
    if (s == "true" || s == "True" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "False" || s == "no" || s == "off") return false;
  }
  fail("expected true or false, got " + describe_value());
}

double YamlNode::as_double() const {
  if (!node_ || !node_.IsScalar()) fail("expected a number, got " + describe_value());
  const std::string& s = node_.Scalar();
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end == s.c_str() || *end != '\0' || !std::isfinite(v))
    fail("expected a number, got " + describe_value());
  return v;
}

double YamlNode::as_double_in(double lo, double hi) const {
  double v = as_double();
  if (v < lo || v > hi) fail(fmt::format("expected a number in [{}, {}], got {}", lo, hi, shorten_for_message(node_.Scalar())));
  return v;
}

double YamlNode::as_positive_double() const {
  double v = as_double();
  if (!(v > 0)) fail(fmt::format("expected a number > 0, got {}", shorten_for_message(node_.Scalar())));
  return v;
}

int64_t YamlNode::as_int_in(int64_t lo, int64_t hi) const {
  if (!node_ || !node_.IsScalar()) fail("expected an integer, got " + describe_value());
  const std::string& s = node_.Scalar();
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end == s.c_str() || *end != '\0' || !std::isfinite(v) || v != std::floor(v))
    fail("expected an integer, got " + describe_value());
  if (v < double(lo) || v > double(hi))
    fail(fmt::format("expected an integer in [{}, {}], got {}", lo, hi, shorten_for_message(s)));
  return static_cast<int64_t>(v);
}

std::string YamlNode::as_choice(const std::vector<std::string>& choices) const {
  std::string v = as_string();
  for (const auto& c : choices)
    if (c == v) return v;
  std::string hint = closest_match(v, choices);
  fail(fmt::format("expected one of {}, got '{}'{}", join_choices(choices), shorten_for_message(v),
                   hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint)));
}

}  // namespace micsim
