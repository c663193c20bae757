#include "models/workload/model_spec.hpp"

#include <fmt/format.h>

#include "models/hardware/catalog.hpp"

namespace micsim {

const char* to_string(Arch a) {
  switch (a) {
    case Arch::Gpt: return "gpt";
    case Arch::Bert: return "bert";
    case Arch::Llama: return "llama";
  }
  return "?";
}

int64_t ParamCounts::matmul_total() const { return matmul_per_layer * layers + matmul_head; }

ParamCounts count_params(const ModelSpec& m) {
  ParamCounts c;
  c.layers = m.layers;
  const int64_t h = m.hidden, f = m.ffn, kv = m.kv_dim();
  const bool bias = m.has_biases();
  // Attention: Q (h x h), K and V (h x kv each), output projection (h x h).
  int64_t attn = h * (h + 2 * kv) + h * h;
  if (bias) attn += (h + 2 * kv) + h;
  // MLP: up (h x f), [gate (h x f)], down (f x h).
  int64_t mlp = (m.gated_mlp() ? 3 : 2) * h * f;
  if (bias) mlp += f + h;
  c.matmul_per_layer = h * (h + 2 * kv) + h * h + (m.gated_mlp() ? 3 : 2) * h * f;
  c.per_layer = attn + mlp + 2 * m.norm_params();

  c.embedding = m.vocab * h + m.max_position * h + int64_t(m.type_vocab) * h;
  if (m.arch == Arch::Bert) c.embedding += m.norm_params();  // embedding LayerNorm

  c.head = (m.arch == Arch::Bert) ? 0 : m.norm_params();  // final norm (BERT post-LN has none)
  c.matmul_head = m.vocab * h;                             // logits GEMM
  if (!m.tied_embeddings) c.head += m.vocab * h;
  if (m.encoder_head != EncoderHead::None) {
    // MLM: dense transform h x h (+bias), LayerNorm, decoder bias over the vocabulary.
    c.head += h * h + h + m.norm_params() + m.vocab;
    c.matmul_head += h * h;
  }
  if (m.encoder_head == EncoderHead::MlmNsp) c.head += (h * h + h) + (2 * h + 2);  // pooler + NSP
  c.total = c.per_layer * m.layers + c.embedding + c.head;
  return c;
}

void validate_model(const ModelSpec& m, const YamlNode& where) {
  auto bad = [&](const std::string& key, const std::string& what) {
    throw InputError(where.location(), where.path().empty() ? key : where.path() + "." + key, what);
  };
  if (m.layers <= 0) bad("layers", "expected a positive number of layers");
  if (m.hidden <= 0) bad("hidden", "expected a positive hidden size");
  if (m.heads <= 0) bad("heads", "expected a positive number of heads");
  if (m.hidden % m.heads != 0) bad("heads", fmt::format("expected heads to divide hidden ({} % {} != 0)", m.hidden, m.heads));
  if (m.kv_heads <= 0 || m.heads % m.kv_heads != 0)
    bad("kv_heads", fmt::format("expected kv_heads to divide heads ({}), got {}", m.heads, m.kv_heads));
  if (m.ffn <= 0) bad("ffn", "expected a positive FFN size");
  if (m.vocab <= 0) bad("vocab", "expected a positive vocabulary size");
  if (auto why = model_too_large(m)) bad("hidden", *why);
}

std::optional<std::string> model_too_large(const ModelSpec& m) {
  // Counted in double so that the check itself cannot overflow.
  const double h = double(m.hidden), per_layer = 4.0 * h * h + 3.0 * double(m.ffn) * h;
  const double total = double(m.layers) * per_layer + 2.0 * double(m.vocab) * h + double(m.max_position) * h;
  if (total <= 1e15) return std::nullopt;
  return fmt::format("the model would have about {:.3g} parameters; micsim accepts up to 1e15 (check hidden, ffn, layers, vocab)", total);
}

static EncoderHead parse_encoder_head(const YamlNode& n) {
  std::string v = n.as_choice({"mlm+nsp", "mlm", "none"});
  if (v == "mlm+nsp") return EncoderHead::MlmNsp;
  if (v == "mlm") return EncoderHead::Mlm;
  return EncoderHead::None;
}

ModelSpec parse_model_mapping(const YamlNode& n, const std::string& name) {
  n.check_keys({"arch", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "max_position", "type_vocab",
                "tied_embeddings", "encoder_head", "dropout", "biases", "source"});
  ModelSpec m;
  m.name = name;
  std::string arch = n.at("arch").as_choice({"gpt", "bert", "llama"});
  m.arch = arch == "gpt" ? Arch::Gpt : arch == "bert" ? Arch::Bert : Arch::Llama;
  m.layers = static_cast<int>(n.at("layers").as_int_in(1, 100000));
  m.hidden = n.at("hidden").as_int_in(1, 1 << 20);
  m.heads = static_cast<int>(n.at("heads").as_int_in(1, 1 << 16));
  m.kv_heads = n.has("kv_heads") ? static_cast<int>(n.at("kv_heads").as_int_in(1, 1 << 16)) : m.heads;
  m.ffn = n.has("ffn") ? n.at("ffn").as_int_in(1, 1 << 24) : (m.arch == Arch::Llama ? 0 : 4 * m.hidden);
  if (m.arch == Arch::Llama && !n.has("ffn")) n.at("ffn");  // required for llama: raises "missing"
  m.vocab = n.at("vocab").as_int_in(1, 1 << 24);
  // Architecture defaults, overridable.
  m.max_position = m.arch == Arch::Llama ? 0 : (m.arch == Arch::Bert ? 512 : 2048);
  m.type_vocab = m.arch == Arch::Bert ? 2 : 0;
  m.tied_embeddings = m.arch != Arch::Llama;
  m.encoder_head = m.arch == Arch::Bert ? EncoderHead::MlmNsp : EncoderHead::None;
  m.dropout = m.arch != Arch::Llama;
  m.biases = m.arch != Arch::Llama;
  m.rms_norm = m.arch == Arch::Llama;
  if (auto v = n.get("biases")) m.biases = v->as_bool();
  if (auto v = n.get("max_position")) m.max_position = v->as_int_in(0, 1 << 24);
  if (auto v = n.get("type_vocab")) m.type_vocab = static_cast<int>(v->as_int_in(0, 1 << 16));
  if (auto v = n.get("tied_embeddings")) m.tied_embeddings = v->as_bool();
  if (auto v = n.get("encoder_head")) {
    if (m.arch != Arch::Bert) v->fail("encoder_head applies to arch: bert only");
    m.encoder_head = parse_encoder_head(*v);
  }
  if (auto v = n.get("dropout")) m.dropout = v->as_bool();
  if (auto v = n.get("source")) m.source = v->as_string();
  validate_model(m, n);
  return m;
}

static const std::vector<ModelSpec>& presets() {
  static const std::vector<ModelSpec> all = [] {
    std::vector<ModelSpec> v;
    YamlNode root = load_embedded_catalog("models/catalog/models.yaml");
    root.check_keys({"models"});
    YamlNode models = root.at("models");
    for (const auto& name : models.keys()) v.push_back(parse_model_mapping(models.at(name), name));
    return v;
  }();
  return all;
}

std::vector<std::string> model_preset_names() {
  std::vector<std::string> v;
  for (const auto& m : presets()) v.push_back(m.name);
  return v;
}

const ModelSpec* find_model_preset(const std::string& name) {
  for (const auto& m : presets())
    if (m.name == name) return &m;
  return nullptr;
}

}  // namespace micsim
