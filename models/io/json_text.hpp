#pragma once
// JSON as micsim writes it: two-space indent, a final newline, and never an exception for text that
// is not UTF-8 (inputs are checked at load; anything that still slips through is replaced by U+FFFD
// rather than aborting a finished run).
#include <nlohmann/json.hpp>
#include <cstdint>
#include <string>

namespace micsim {

// Every JSON document a command writes carries the version of its schema (docs/schema/COMMAND.schema.json)
// and the command that wrote it. The version changes when a field is removed or changes meaning.
constexpr int kJsonSchemaVersion = 1;
inline nlohmann::json versioned(nlohmann::json j, const char* command) {
  j["schema_version"] = kJsonSchemaVersion;
  j["command"] = command;
  return j;
}

// Byte counts are whole numbers in JSON (models may produce fractions of a byte per rank).
inline int64_t json_bytes(double b) { return static_cast<int64_t>(b < 0 ? b - 0.5 : b + 0.5); }

inline std::string json_text(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace micsim
