#pragma once
// JSON input (Hugging Face config.json, DeepSpeed ds_config.json, plan checkpoints) parsed with
// nlohmann::json; every failure becomes an InputError with file:line:column, never a stray exception.
#include <nlohmann/json.hpp>
#include <string>

#include "models/io/input_error.hpp"

namespace micsim {

// `what` names the kind of file in messages ("Hugging Face config", "DeepSpeed config").
nlohmann::json parse_json_input(const std::string& text, const std::string& file, const std::string& what);

}  // namespace micsim
