#pragma once
// A transformer's architecture and the parameter counts that follow from it.
// Three block styles cover the models users bring: GPT (pre-LN, GeLU MLP, learned positions,
// tied LM head), BERT (encoder with pooler/NSP and MLM heads) and Llama (RMSNorm, SwiGLU, GQA,
// rotary positions, untied LM head, no biases).
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "models/io/yaml_node.hpp"

namespace micsim {

enum class Arch { Gpt, Bert, Llama };
const char* to_string(Arch a);

enum class EncoderHead { None, Mlm, MlmNsp };

struct ModelSpec {
  std::string name;
  Arch arch = Arch::Gpt;
  int layers = 0;
  int64_t hidden = 0;
  int heads = 0;
  int kv_heads = 0;           // = heads unless GQA/MQA
  int64_t ffn = 0;
  int64_t vocab = 0;
  int64_t max_position = 0;   // learned position embeddings; 0 = rotary
  int type_vocab = 0;         // BERT token-type embeddings
  bool tied_embeddings = true;
  EncoderHead encoder_head = EncoderHead::None;
  bool dropout = true;        // dropout layers present (changes stored activations)
  bool biases = true;         // linear layers carry biases (GPT-2/BERT yes; Llama, MPT no)
  bool rms_norm = false;      // RMSNorm (weight only) instead of LayerNorm (weight + bias)
  std::string source;

  int64_t head_dim() const { return hidden / heads; }
  int64_t kv_dim() const { return head_dim() * kv_heads; }
  bool gated_mlp() const { return arch == Arch::Llama; }   // SwiGLU: gate + up + down
  bool causal() const { return arch != Arch::Bert; }       // decoder LMs mask the future; BERT attends both ways
  bool has_biases() const { return biases; }
  int64_t norm_params() const { return (rms_norm || !biases) ? hidden : 2 * hidden; }
};

// Parameter counts (elements), by where they live. `matmul` counts weights that take part in GEMMs
// (the LM head counts once more when tied): it is what 6·N·T approximates.
struct ParamCounts {
  int64_t per_layer = 0;        // one transformer block
  int64_t embedding = 0;        // token + position + type embeddings (+ embedding norm)
  int64_t head = 0;             // final norm, untied LM head, encoder heads
  int64_t total = 0;
  int64_t matmul_per_layer = 0; // GEMM weights of one block
  int64_t matmul_head = 0;      // LM head (+ MLM transform) GEMM weights
  int64_t matmul_total() const;
  int layers = 0;
};

ParamCounts count_params(const ModelSpec& m);

// Validation shared by presets, inline specs and HF configs: positive sizes, heads divide hidden,
// kv_heads divide heads. Raises InputError at `where`.
void validate_model(const ModelSpec& m, const YamlNode& where);

// Largest width (hidden, FFN, vocabulary, positions) accepted from any input; with the layer limit it
// keeps every count well inside 64-bit integers.
constexpr int64_t kMaxModelWidth = int64_t(1) << 24;
// Why the model is beyond what micsim simulates (over 1e15 parameters), or nothing.
std::optional<std::string> model_too_large(const ModelSpec& m);

// Built-in presets (models/catalog/models.yaml).
std::vector<std::string> model_preset_names();
const ModelSpec* find_model_preset(const std::string& name);

// An inline `model:` mapping {arch, layers, hidden, ...}.
ModelSpec parse_model_mapping(const YamlNode& node, const std::string& name);

// A Hugging Face config.json (llama, mistral, qwen2, gpt2, gpt_neox, mpt, bert, roberta).
// Errors name the file, the line of the offending key, and what was expected.
ModelSpec load_hf_config(const std::string& path);
ModelSpec parse_hf_config(const std::string& text, const std::string& shown_name);

}  // namespace micsim
