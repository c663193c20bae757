#pragma once
// JSON as micsim writes it: two-space indent, a final newline, and never an exception for text that
// is not UTF-8 (inputs are checked at load; anything that still slips through is replaced by U+FFFD
// rather than aborting a finished run).
#include <nlohmann/json.hpp>
#include <string>

namespace micsim {

inline std::string json_text(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace micsim
