#include "models/hardware/catalog.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "models/catalog/catalog_data.hpp"
#include "models/collective/collective.hpp"
#include "models/collective/nccl_tuner.hpp"
#include "models/hardware/power_limit.hpp"
#include "models/hardware/prices.hpp"
#include "models/io/input_file.hpp"

namespace micsim {

YamlNode load_embedded_catalog(const std::string& path) {
  for (const auto& f : catalog_data::files())
    if (path == f.path) return YamlNode::load_string(f.content, path);
  throw std::logic_error("catalog file not embedded: " + path);
}

static HardwareCatalog& merged_catalog() {
  static HardwareCatalog cat = [] {
    HardwareCatalog c = HardwareCatalog::parse(load_embedded_catalog("models/catalog/instances.yaml"));
    c.fill_prices(PriceBook::builtin());
    return c;
  }();
  return cat;
}

const HardwareCatalog& HardwareCatalog::builtin() { return merged_catalog(); }

void HardwareCatalog::fill_prices(const PriceBook& book) {
  for (auto& i : instances_) {
    if (i.price_explicit) continue;
    if (auto q = book.quote(i.name, "on_demand")) {
      i.price_usd_per_hour = q->usd_per_hour;
      i.price_note = q->describe();
    }
  }
}

template <class T>
static void replace_or_add(std::vector<T>& v, T x) {
  for (auto& e : v)
    if (e.name == x.name) {
      e = std::move(x);
      return;
    }
  v.push_back(std::move(x));
}

void HardwareCatalog::merge(const YamlNode& root) {
  root.check_keys({"gpus", "fabrics", "instances", "prices"});
  if (auto gpus = root.get("gpus")) {
    gpus->require_map();
    for (const auto& name : gpus->keys()) {
      GpuSpec g = parse_gpu(gpus->at(name), name);
      // Instances already in the catalog that name this GPU get the new entry too.
      for (auto& i : instances_)
        if (i.gpu.name == name) i.gpu = g;
      replace_or_add(gpus_, std::move(g));
    }
  }
  if (auto fabrics = root.get("fabrics")) {
    fabrics->require_map();
    for (const auto& name : fabrics->keys()) {
      FabricSpec f = parse_fabric(fabrics->at(name), name);
      for (auto& i : instances_)
        if (i.network.fabric.name == name) i.network.fabric = f;
      replace_or_add(fabrics_, std::move(f));
    }
  }
  if (auto inst = root.get("instances")) {
    inst->require_map();
    for (const auto& name : inst->keys()) replace_or_add(instances_, parse_instance(inst->at(name), name));
  }
}

void add_user_catalog(const std::string& path) {
  YamlNode root = YamlNode::load_string(read_whole_file(path), path);
  if (!root.is_map()) root.fail("expected a catalog mapping with gpus, fabrics, instances and/or prices");
  HardwareCatalog& cat = merged_catalog();
  HardwareCatalog updated = cat;  // all or nothing: a bad file leaves the catalog as it was
  updated.merge(root);
  PriceBook prices = PriceBook::builtin();
  if (auto p = root.get("prices")) prices.merge(*p);
  updated.fill_prices(prices);
  cat = std::move(updated);
  PriceBook::mutable_builtin() = std::move(prices);
}

std::vector<std::string> catalog_path_files(const std::string& value) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= value.size()) {
    size_t end = value.find(':', start);
    if (end == std::string::npos) end = value.size();
    const std::string item = value.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    std::error_code ec;
    if (std::filesystem::is_directory(item, ec)) {
      std::vector<std::string> files;
      for (const auto& e : std::filesystem::directory_iterator(item, ec))
        if (e.path().extension() == ".yaml" || e.path().extension() == ".yml") files.push_back(e.path().string());
      std::sort(files.begin(), files.end());
      out.insert(out.end(), files.begin(), files.end());
    } else {
      out.push_back(item);
    }
  }
  return out;
}

static GpuArch parse_arch(const YamlNode& n) {
  std::string a = n.as_choice({"volta", "ampere", "hopper", "blackwell"});
  if (a == "volta") return GpuArch::Volta;
  if (a == "ampere") return GpuArch::Ampere;
  if (a == "hopper") return GpuArch::Hopper;
  return GpuArch::Blackwell;
}

static constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// seq_half: {causal: tokens, full: tokens}: a kernel's rate against sequence length (AttentionSeqHalf).
static AttentionSeqHalf parse_seq_half(const YamlNode& n) {
  n.check_keys({"causal", "full"});
  AttentionSeqHalf h;
  if (auto v = n.get("causal")) h.causal = v->as_double_in(0, 1e6);
  if (auto v = n.get("full")) h.full = v->as_double_in(0, 1e6);
  return h;
}

// attention_kernels: {fa3: {forward: f, backward: b, seq_half: {...}}, cudnn: {...}}: the kernels other
// than the default (FlashAttention-2 class, attention_efficiency) measured on this GPU.
static void parse_attention_kernels(const YamlNode& n, GpuSpec& g) {
  n.check_keys({"fa3", "cudnn"});
  for (AttentionKernel k : {AttentionKernel::FA3, AttentionKernel::CuDNN}) {
    auto e = n.get(to_string(k));
    if (!e) continue;
    e->check_keys({"forward", "backward", "seq_half"});
    AttentionKernelEfficiency eff;
    eff.forward = e->at("forward").as_double_in(0.01, 1.0);
    if (auto b = e->get("backward")) eff.backward = b->as_double_in(0.01, 1.0);
    if (auto h = e->get("seq_half")) eff.seq_half = parse_seq_half(*h);
    g.attention_kernels[k] = eff;
  }
}

// [[limit / TDP, throughput / at TDP], ...]: measured points, limits ascending, the last at the TDP.
static std::vector<PowerPoint> parse_power_curve(const YamlNode& n) {
  if (!n.is_sequence()) n.fail("expected a list of [limit fraction of TDP, throughput fraction at TDP] pairs");
  std::vector<PowerPoint> c;
  for (const YamlNode& pt : n.items()) {
    std::vector<YamlNode> xy = pt.is_sequence() ? pt.items() : std::vector<YamlNode>{};
    if (xy.size() != 2) pt.fail("expected [limit fraction of TDP, throughput fraction at TDP]");
    PowerPoint p{xy[0].as_double_in(0.01, 1.0), xy[1].as_double_in(0.01, 1.0)};
    if (!c.empty() && (p.limit_fraction <= c.back().limit_fraction || p.throughput_fraction < c.back().throughput_fraction))
      pt.fail("expected limit fractions ascending and throughput never falling as the limit rises");
    c.push_back(p);
  }
  if (c.empty() || c.back().limit_fraction != 1.0 || c.back().throughput_fraction != 1.0)
    n.fail("expected the curve to end at [1.0, 1.0] (the TDP, where the part's kernel terms were measured)");
  return c;
}

GpuSpec HardwareCatalog::parse_gpu(const YamlNode& n, const std::string& name) const {
  n.check_keys({"arch", "memory_gib", "peak_tflops", "hbm_tbytes_per_s", "gemm_efficiency", "gemm_dim_half",
                "gemm_overhead_us", "attention_efficiency", "attention_backward_efficiency", "attention_seq_half", "gemm_fp8_efficiency",
                "hbm_efficiency", "sustained_gemm_scale", "sustained_attention_scale", "kernels_as", "attention_kernels", "tdp_w",
                "power_limit_w", "power_curve", "power_curve_source", "source"});
  GpuSpec g;
  // kernels_as: a variant of a part already in the catalog (same die, other memory or power) takes that
  // part's fitted kernel terms unless it states its own, so a refit of the part reaches its variants.
  if (auto k = n.get("kernels_as")) {
    const GpuSpec* base = find_gpu(k->as_string());
    if (!base) k->fail(fmt::format("expected a GPU defined before {} in the catalog, got '{}'", name, k->as_string()));
    g.gemm_efficiency = base->gemm_efficiency, g.gemm_dim_half = base->gemm_dim_half, g.gemm_overhead_s = base->gemm_overhead_s;
    g.attention_efficiency = base->attention_efficiency, g.attention_backward_efficiency = base->attention_backward_efficiency;
    g.attention_seq_half = base->attention_seq_half;
    g.attention_kernels = base->attention_kernels;
    g.gemm_fp8_efficiency = base->gemm_fp8_efficiency, g.hbm_efficiency = base->hbm_efficiency;
    g.sustained_gemm_scale = base->sustained_gemm_scale, g.sustained_attention_scale = base->sustained_attention_scale;
    // The same die at the same TDP clocks down the same way; its power limit is the variant's own.
    g.tdp_w = base->tdp_w, g.power_curve = base->power_curve, g.power_curve_source = base->power_curve_source;
  }
  g.name = name;
  g.arch = parse_arch(n.at("arch"));
  g.memory_bytes = n.at("memory_gib").as_double_in(1, 1e5) * kGiB;
  YamlNode peaks = n.at("peak_tflops");
  peaks.check_keys({"fp16", "bf16", "fp32", "fp8"});
  if (auto v = peaks.get("fp8")) g.peak_fp8_flops = v->as_double_in(0.1, 1e6) * 1e12;
  if (auto v = peaks.get("fp16")) g.peak_flops[Precision::FP16] = v->as_double_in(0.1, 1e6) * 1e12;
  if (auto v = peaks.get("bf16")) g.peak_flops[Precision::BF16] = v->as_double_in(0.1, 1e6) * 1e12;
  if (auto v = peaks.get("fp32")) g.peak_flops[Precision::FP32] = v->as_double_in(0.1, 1e6) * 1e12;
  if (g.peak_flops.empty()) peaks.fail("expected at least one of fp16, bf16, fp32");
  g.hbm_bytes_per_s = n.at("hbm_tbytes_per_s").as_double_in(0.01, 1e3) * 1e12;
  if (auto v = n.get("gemm_efficiency")) g.gemm_efficiency = v->as_double_in(0.01, 1.0);
  if (auto v = n.get("gemm_dim_half")) g.gemm_dim_half = v->as_double_in(0, 1e5);
  if (auto v = n.get("gemm_overhead_us")) g.gemm_overhead_s = v->as_double_in(0, 1e4) * 1e-6;
  if (auto v = n.get("attention_efficiency")) g.attention_efficiency = v->as_double_in(0.01, 1.0);
  if (auto v = n.get("attention_backward_efficiency")) g.attention_backward_efficiency = v->as_double_in(0.01, 1.0);
  if (auto v = n.get("attention_seq_half")) g.attention_seq_half = parse_seq_half(*v);
  if (auto v = n.get("attention_kernels")) parse_attention_kernels(*v, g);
  if (auto v = n.get("gemm_fp8_efficiency")) g.gemm_fp8_efficiency = v->as_double_in(0.01, 1.0);
  if (auto v = n.get("hbm_efficiency")) g.hbm_efficiency = v->as_double_in(0.05, 1.0);
  if (auto v = n.get("sustained_gemm_scale")) g.sustained_gemm_scale = v->as_double_in(0.1, 2.0);
  if (auto v = n.get("sustained_attention_scale")) g.sustained_attention_scale = v->as_double_in(0.1, 10.0);
  if (auto v = n.get("tdp_w")) g.tdp_w = v->as_double_in(1, 1e5);
  if (auto v = n.get("power_curve")) g.power_curve = parse_power_curve(*v);
  if (auto v = n.get("power_curve_source")) g.power_curve_source = v->as_string();
  if (auto v = n.get("power_limit_w")) {
    const double w = v->as_double_in(1, 1e5);
    if (std::string why = power_limit_problem(g, w); !why.empty()) v->fail(why);
    g.power_limit_w = w;
  }
  if (auto v = n.get("source")) g.source = v->as_string();
  return g;
}

static NcclAlgorithm parse_algorithm(const YamlNode& n) {
  return *parse_nccl_algorithm(n.as_choice({"ring", "tree", "nvls", "nvls_tree", "collnet_direct", "collnet_chain"}));
}

FabricSpec HardwareCatalog::parse_fabric(const YamlNode& n, const std::string& name) const {
  n.check_keys({"latency_us", "bandwidth_efficiency", "bandwidth_efficiency_at_scale", "ramp_min", "ramp_half_kib", "algorithms",
                "ll128", "ll128_efficiency", "tree_efficiency_at_scale", "fixed_latency_us", "nccl_net_latency_us",
                "collnet_efficiency", "sharp", "measured_nodes", "gpu_path_gbytes_per_s", "source"});
  FabricSpec f;
  f.name = name;
  f.latency_s = n.at("latency_us").as_double_in(kMinInterLatencyS * 1e6, 1e5) * 1e-6;
  if (auto v = n.get("fixed_latency_us")) f.fixed_latency_s = v->as_double_in(0, 1e5) * 1e-6;
  f.bandwidth_efficiency = n.at("bandwidth_efficiency").as_double_in(0.01, 1.0);
  f.bandwidth_efficiency_at_scale = f.bandwidth_efficiency;
  if (auto v = n.get("bandwidth_efficiency_at_scale")) f.bandwidth_efficiency_at_scale = v->as_double_in(0.01, 1.0);
  if (auto v = n.get("ramp_min")) f.ramp_min = v->as_double_in(0.01, 1.0);
  if (auto v = n.get("ramp_half_kib")) f.ramp_half_bytes = v->as_double_in(0, 1e9) * 1024.0;
  if (auto a = n.get("algorithms"))
    for (const auto& item : a->items()) f.algorithms.push_back(parse_algorithm(item));
  if (auto v = n.get("ll128")) f.ll128 = v->as_bool();
  if (auto v = n.get("ll128_efficiency")) f.ll128_efficiency = v->as_double_in(0.05, 1.5);
  if (auto v = n.get("tree_efficiency_at_scale")) f.tree_efficiency_at_scale = v->as_double_in(0.05, 1.5);
  if (auto v = n.get("gpu_path_gbytes_per_s")) f.gpu_path_bytes_per_s = v->as_double_in(0, 1e4) * 1e9;  // 0: no limit
  if (auto v = n.get("nccl_net_latency_us")) f.nccl_net_latency_s = v->as_double_in(0, 1e5) * 1e-6;
  if (auto v = n.get("collnet_efficiency")) f.collnet_efficiency = v->as_double_in(0.01, 1.0);
  if (auto v = n.get("sharp")) f.sharp = v->as_bool();
  if (auto v = n.get("measured_nodes")) f.measured_nodes = parse_node_range(*v);
  if (auto v = n.get("source")) f.source = v->as_string();
  return f;
}

std::string NodeRange::str() const { return lo == hi ? fmt::format("{} nodes", lo) : fmt::format("{}-{} nodes", lo, hi); }

NodeRange parse_node_range(const YamlNode& n) {
  const auto range = n.items();
  if (range.size() != 2) n.fail("expected [lo, hi]: the node counts of the measurements the network terms rest on");
  const int lo = int(range[0].as_int_in(1, 1 << 20));
  return {lo, int(range[1].as_int_in(lo, 1 << 20))};
}

std::string FabricSpec::extrapolation_note(int nodes) const {
  if (nodes <= 1) return "";
  if (!measured_nodes)
    return fmt::format("network: fabric {}'s terms are assumed, not fitted on published measurements (catalog source: {}); "
                       "collective times across its {} nodes are the model's guess", name, source, nodes);
  if (nodes <= measured_nodes->hi) return "";
  return fmt::format("network: fabric {}'s terms rest on measurements on {} (catalog measured_nodes); at {} nodes its "
                     "bandwidth efficiency ({:.3g} at scale) is extrapolated and the published rows do not bound the error there; "
                     "a calibration from this cluster's own nccl-tests logs replaces it (micsim calibrate)",
                     name, measured_nodes->str(), nodes, bandwidth_efficiency_at_scale);
}

InstanceSpec HardwareCatalog::parse_instance(const YamlNode& n, const std::string& name) const {
  n.check_keys({"gpu", "gpus_per_node", "intra_node", "network", "nccl_tuner", "nccl_proto", "cpu", "price_usd_per_hour", "price_note", "source"});
  InstanceSpec s;
  s.name = name;
  YamlNode gpu = n.at("gpu");
  if (gpu.is_map()) {
    s.gpu = parse_gpu(gpu, name + "-gpu");
  } else {
    std::string gname = gpu.as_string();
    const GpuSpec* g = find_gpu(gname);
    if (!g) {
      std::string hint = closest_match(gname, gpu_names());
      gpu.fail(fmt::format("unknown GPU '{}'{}; known: {}", gname,
                           hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint),
                           join_choices(gpu_names())));
    }
    s.gpu = *g;
  }
  s.gpus_per_node = static_cast<int>(n.at("gpus_per_node").as_int_in(1, 1024));
  YamlNode intra = n.at("intra_node");
  intra.check_keys({"kind", "gbytes_per_s", "nvls", "ramp_min", "ramp_half_kib", "call_overhead_us"});
  if (auto k = intra.get("kind")) s.intra.kind = k->as_choice({"nvlink", "pcie"});
  s.intra.bytes_per_s_per_gpu = intra.at("gbytes_per_s").as_double_in(0.1, 1e5) * 1e9;
  if (auto v = intra.get("nvls")) s.intra.nvls = v->as_bool();
  if (auto v = intra.get("ramp_min")) s.intra.ramp_min = v->as_double_in(0.01, 1.0);
  if (auto v = intra.get("ramp_half_kib")) s.intra.ramp_half_bytes = v->as_double_in(0, 1e9) * 1024.0;
  if (auto v = intra.get("call_overhead_us")) s.intra.call_overhead_s = v->as_double_in(0, 1e5) * 1e-6;
  if (s.intra.nvls && s.gpu.arch < GpuArch::Hopper) intra.at("nvls").fail("NVLS needs a Hopper or newer GPU");
  YamlNode net = n.at("network");
  net.check_keys({"nics", "gbits_per_nic", "fabric", "collnet"});
  s.network.nics = static_cast<int>(net.at("nics").as_int_in(1, 1024));
  s.network.bits_per_s_per_nic = net.at("gbits_per_nic").as_double_in(0.1, 1e5) * 1e9;
  YamlNode fabric = net.at("fabric");
  if (fabric.is_map()) {
    s.network.fabric = parse_fabric(fabric, name + "-fabric");
  } else {
    std::string fname = fabric.as_string();
    const FabricSpec* f = find_fabric(fname);
    if (!f) {
      std::string hint = closest_match(fname, fabric_names());
      fabric.fail(fmt::format("unknown fabric '{}'{}; known: {}", fname,
                              hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint),
                              join_choices(fabric_names())));
    }
    s.network.fabric = *f;
  }
  if (auto v = net.get("collnet")) {
    s.network.collnet = v->as_bool();
    if (std::string why = collnet_problem(s.network); !why.empty()) v->fail(why);
  }
  if (auto t = n.get("nccl_tuner")) {
    s.nccl_tuner = t->as_string();
    if (!s.nccl_tuner.empty() && !find_nccl_tuner(s.nccl_tuner))
      t->fail(fmt::format("unknown NCCL tuner '{}'; known: {}", s.nccl_tuner, join_choices(nccl_tuner_names())));
  }
  if (auto p = n.get("nccl_proto")) {
    s.nccl_proto = p->as_string();
    if (!parse_nccl_proto(s.nccl_proto))
      p->fail(fmt::format("nccl_proto '{}': {}", s.nccl_proto, kNcclProtoExpected));
  }
  if (auto p = n.get("cpu")) s.cpu = p->as_choice({"intel", "amd"});
  if (auto p = n.get("price_usd_per_hour")) s.price_usd_per_hour = p->as_double_in(0, 1e6), s.price_explicit = true;
  if (auto p = n.get("price_note")) s.price_note = p->as_string();
  if (auto p = n.get("source")) s.source = p->as_string();
  return s;
}

HardwareCatalog HardwareCatalog::parse(const YamlNode& root) {
  root.check_keys({"gpus", "fabrics", "instances"});
  HardwareCatalog cat;
  YamlNode gpus = root.at("gpus");
  gpus.require_map();
  for (const auto& name : gpus.keys()) cat.gpus_.push_back(cat.parse_gpu(gpus.at(name), name));
  YamlNode fabrics = root.at("fabrics");
  fabrics.require_map();
  for (const auto& name : fabrics.keys()) cat.fabrics_.push_back(cat.parse_fabric(fabrics.at(name), name));
  YamlNode inst = root.at("instances");
  inst.require_map();
  for (const auto& name : inst.keys()) cat.instances_.push_back(cat.parse_instance(inst.at(name), name));
  return cat;
}

const InstanceSpec* HardwareCatalog::find_instance(const std::string& name) const {
  for (const auto& i : instances_)
    if (i.name == name) return &i;
  return nullptr;
}
const InstanceSpec& HardwareCatalog::instance(const std::string& name) const {
  if (const auto* i = find_instance(name)) return *i;
  throw std::out_of_range("unknown instance " + name);
}
const GpuSpec* HardwareCatalog::find_gpu(const std::string& name) const {
  for (const auto& g : gpus_)
    if (g.name == name) return &g;
  return nullptr;
}
const FabricSpec* HardwareCatalog::find_fabric(const std::string& name) const {
  for (const auto& f : fabrics_)
    if (f.name == name) return &f;
  return nullptr;
}
std::vector<std::string> HardwareCatalog::instance_names() const {
  std::vector<std::string> v;
  for (const auto& i : instances_) v.push_back(i.name);
  return v;
}
std::vector<std::string> HardwareCatalog::gpu_names() const {
  std::vector<std::string> v;
  for (const auto& g : gpus_) v.push_back(g.name);
  return v;
}
std::vector<std::string> HardwareCatalog::fabric_names() const {
  std::vector<std::string> v;
  for (const auto& f : fabrics_) v.push_back(f.name);
  return v;
}

}  // namespace micsim
