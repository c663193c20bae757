#include "models/io/json_input.hpp"

namespace micsim {

namespace {

SourceLocation location_of_byte(const std::string& text, const std::string& file, size_t byte) {
  int line = 1, col = 1;
  for (size_t i = 0; i + 1 < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {file, line, col};
}

}  // namespace

nlohmann::json parse_json_input(const std::string& text, const std::string& file, const std::string& what) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    std::string msg = e.what();
    auto p = msg.find("parse error");
    throw InputError(location_of_byte(text, file, e.byte), "",
                     "malformed JSON in " + what + ": " + (p == std::string::npos ? msg : msg.substr(p)));
  } catch (const nlohmann::json::exception& e) {
    // e.g. out_of_range 406: a number too large for a double ("1e400").
    std::string msg = e.what();
    auto p = msg.find("] ");
    throw InputError({file, 0, 0}, "", "invalid JSON in " + what + ": " + (p == std::string::npos ? msg : msg.substr(p + 2)));
  }
}

}  // namespace micsim
