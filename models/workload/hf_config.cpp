// Reads a Hugging Face config.json into a ModelSpec. JSON syntax errors report line:column; a missing
// or ill-typed key reports the line where the key sits (or the file when it is absent).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "models/io/input_file.hpp"
#include "models/io/json_input.hpp"
#include "models/workload/model_spec.hpp"

namespace micsim {
namespace {

struct HfReader {
  const nlohmann::json& j;
  const std::string& text;
  const std::string& file;

  SourceLocation where(const std::string& key) const {
    std::string needle = "\"" + key + "\"";
    size_t pos = text.find(needle);
    if (pos == std::string::npos) return {file, 0, 0};
    int line = 1, col = 1;
    for (size_t i = 0; i < pos; ++i) {
      if (text[i] == '\n') { ++line; col = 1; } else { ++col; }
    }
    return {file, line, col};
  }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw InputError(where(key), key, what);
  }
  bool has(const std::string& key) const { return j.contains(key) && !j.at(key).is_null(); }
  int64_t integer(const std::string& key, int64_t lo = 1, int64_t hi = kMaxModelWidth) const {
    if (!has(key)) fail(key, "required key is missing from the config");
    const auto& v = j.at(key);
    if (!v.is_number_integer()) fail(key, fmt::format("expected an integer, got {}", v.dump()));
    int64_t x = v.get<int64_t>();
    if (x < lo || x > hi) fail(key, fmt::format("expected an integer in [{}, {}], got {}", lo, hi, x));
    return x;
  }
  int64_t integer_or(const std::string& key, int64_t dflt, int64_t lo = 0, int64_t hi = kMaxModelWidth) const {
    return has(key) ? integer(key, lo, hi) : dflt;
  }
  bool boolean_or(const std::string& key, bool dflt) const {
    if (!has(key)) return dflt;
    const auto& v = j.at(key);
    if (!v.is_boolean()) fail(key, fmt::format("expected true or false, got {}", v.dump()));
    return v.get<bool>();
  }
  double number_or(const std::string& key, double dflt, double lo, double hi) const {
    if (!has(key)) return dflt;
    const auto& v = j.at(key);
    if (!v.is_number()) fail(key, fmt::format("expected a number, got {}", v.dump()));
    double x = v.get<double>();
    if (!(x >= lo && x <= hi)) fail(key, fmt::format("expected a number in [{}, {}], got {}", lo, hi, v.dump()));
    return x;
  }
};

}  // namespace

ModelSpec parse_hf_config(const std::string& text, const std::string& file) {
  nlohmann::json j = parse_json_input(text, file, "Hugging Face config");
  if (!j.is_object()) throw InputError({file, 1, 1}, "", "expected a JSON object (a Hugging Face config.json)");
  HfReader r{j, text, file};
  if (!r.has("model_type")) r.fail("model_type", "required key is missing: cannot tell the architecture");
  if (!j.at("model_type").is_string()) r.fail("model_type", "expected a string");
  std::string type = j.at("model_type").get<std::string>();

  ModelSpec m;
  m.name = file;
  m.source = "Hugging Face config " + file;
  const std::vector<std::string> supported = {"llama", "mistral", "qwen2", "gpt2", "gpt_neox", "mpt", "bert", "roberta"};
  if (type == "llama" || type == "mistral" || type == "qwen2") {
    m.arch = Arch::Llama;
    m.hidden = r.integer("hidden_size");
    m.layers = static_cast<int>(r.integer("num_hidden_layers", 1, 100000));
    m.heads = static_cast<int>(r.integer("num_attention_heads", 1, 1 << 16));
    m.kv_heads = static_cast<int>(r.integer_or("num_key_value_heads", m.heads, 1));
    m.ffn = r.integer("intermediate_size");
    m.vocab = r.integer("vocab_size");
    m.max_position = 0;
    m.tied_embeddings = r.boolean_or("tie_word_embeddings", false);
    m.biases = false;
    m.rms_norm = true;
    m.dropout = r.number_or("attention_dropout", 0.0, 0.0, 1.0) > 0;
  } else if (type == "gpt2") {
    m.arch = Arch::Gpt;
    m.hidden = r.integer("n_embd");
    m.layers = static_cast<int>(r.integer("n_layer", 1, 100000));
    m.heads = static_cast<int>(r.integer("n_head", 1, 1 << 16));
    m.kv_heads = m.heads;
    m.ffn = r.integer_or("n_inner", 4 * m.hidden, 1);
    m.vocab = r.integer("vocab_size");
    m.max_position = r.integer_or("n_positions", 1024);
    m.tied_embeddings = r.boolean_or("tie_word_embeddings", true);
  } else if (type == "gpt_neox") {
    m.arch = Arch::Gpt;  // LayerNorm + GeLU MLP with biases, rotary positions, untied head
    m.hidden = r.integer("hidden_size");
    m.layers = static_cast<int>(r.integer("num_hidden_layers", 1, 100000));
    m.heads = static_cast<int>(r.integer("num_attention_heads", 1, 1 << 16));
    m.kv_heads = m.heads;
    m.ffn = r.integer("intermediate_size");
    m.vocab = r.integer("vocab_size");
    m.max_position = 0;
    m.tied_embeddings = r.boolean_or("tie_word_embeddings", false);
  } else if (type == "mpt") {
    m.arch = Arch::Gpt;  // ALiBi (no position table), no biases, LayerNorm without bias
    m.hidden = r.integer("d_model");
    m.layers = static_cast<int>(r.integer("n_layers", 1, 100000));
    m.heads = static_cast<int>(r.integer("n_heads", 1, 1 << 16));
    m.kv_heads = m.heads;
    m.ffn = static_cast<int64_t>(r.number_or("expansion_ratio", 4, 0.01, 64.0) * double(m.hidden));
    m.vocab = r.integer("vocab_size");
    m.max_position = 0;
    m.tied_embeddings = true;
    m.biases = !r.boolean_or("no_bias", true);
  } else if (type == "bert" || type == "roberta") {
    m.arch = Arch::Bert;
    m.hidden = r.integer("hidden_size");
    m.layers = static_cast<int>(r.integer("num_hidden_layers", 1, 100000));
    m.heads = static_cast<int>(r.integer("num_attention_heads", 1, 1 << 16));
    m.kv_heads = m.heads;
    m.ffn = r.integer_or("intermediate_size", 4 * m.hidden, 1);
    m.vocab = r.integer("vocab_size");
    m.max_position = r.integer_or("max_position_embeddings", 512);
    m.type_vocab = static_cast<int>(r.integer_or("type_vocab_size", 2, 0, 1 << 16));
    m.tied_embeddings = true;
    bool pretraining = type == "bert";
    if (j.contains("architectures") && j.at("architectures").is_array()) {
      pretraining = false;
      for (const auto& a : j.at("architectures"))
        if (a.is_string() && a.get<std::string>() == "BertForPreTraining") pretraining = true;
    }
    m.encoder_head = pretraining ? EncoderHead::MlmNsp : EncoderHead::Mlm;
  } else {
    r.fail("model_type", fmt::format("unsupported model_type '{}'; supported: {}", type, join_choices(supported)));
  }
  if (m.hidden % m.heads != 0)
    r.fail("num_attention_heads", fmt::format("expected the head count to divide the hidden size ({} % {} != 0)", m.hidden, m.heads));
  if (m.heads % m.kv_heads != 0)
    r.fail("num_key_value_heads", fmt::format("expected it to divide num_attention_heads ({})", m.heads));
  if (m.ffn < 1) r.fail("expansion_ratio", "expected an FFN of at least one unit (expansion_ratio x d_model >= 1)");
  if (auto why = model_too_large(m)) r.fail(m.arch == Arch::Gpt && j.contains("n_embd") ? "n_embd" : j.contains("d_model") ? "d_model" : "hidden_size", *why);
  return m;
}

ModelSpec load_hf_config(const std::string& path) { return parse_hf_config(read_whole_file(path), path); }

}  // namespace micsim
