// `--set key.path=value`: edits the YAML tree before validation, so an override is checked exactly
// like the file's own keys, and its errors name the --set that caused them.
#include <fmt/format.h>

#include "sim/scenario/scenario.hpp"

namespace micsim {

void apply_overrides(YAML::Node& root, const std::vector<Override>& overrides, YamlSource& src) {
  for (const auto& ov : overrides) {
    const std::string& text = ov.assignment;
    const std::string& shown = ov.origin;
    auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError({shown, 0, 0}, "", "expected --set key.path=value");
    std::string path = text.substr(0, eq), value = text.substr(eq + 1);
    std::vector<std::string> parts;
    size_t start = 0;
    while (true) {
      size_t dot = path.find('.', start);
      parts.push_back(path.substr(start, dot - start));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    for (const auto& p : parts)
      if (p.empty()) throw InputError({shown, 0, 0}, path, "empty component in key path");
    YAML::Node parsed;
    try {
      parsed = YAML::Load(value);
    } catch (const YAML::Exception& e) {
      throw InputError({shown, 0, 0}, path, "value is not valid YAML: " + e.msg);
    }
    if (!root || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
    if (!root.IsMap()) throw InputError({shown, 0, 0}, path, "the scenario is not a mapping");
    // Walk (and create) the parent mappings with fresh handles: yaml-cpp nodes are references.
    std::vector<YAML::Node> chain{root};
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      YAML::Node next = chain.back()[parts[i]];
      if (!next || next.IsNull()) {
        chain.back()[parts[i]] = YAML::Node(YAML::NodeType::Map);
        next = chain.back()[parts[i]];
      } else if (!next.IsMap()) {
        std::string prefix;
        for (size_t j = 0; j <= i; ++j) prefix += (j ? "." : "") + parts[j];
        throw InputError({shown, 0, 0}, path, fmt::format("'{}' is a single value, not a mapping", prefix));
      }
      chain.push_back(next);
    }
    chain.back()[parts.back()] = parsed;
    src.overrides[path] = shown;
  }
}

}  // namespace micsim
