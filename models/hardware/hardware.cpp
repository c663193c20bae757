#include "models/hardware/hardware.hpp"

#include <stdexcept>

namespace micsim {

const char* to_string(GpuArch a) {
  switch (a) {
    case GpuArch::Volta: return "volta";
    case GpuArch::Ampere: return "ampere";
    case GpuArch::Hopper: return "hopper";
    case GpuArch::Blackwell: return "blackwell";
  }
  return "?";
}

const char* to_string(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::FA2: return "fa2";
    case AttentionKernel::FA3: return "fa3";
    case AttentionKernel::CuDNN: return "cudnn";
    case AttentionKernel::Triton: return "triton";
  }
  return "?";
}

const char* to_string(Precision p) {
  switch (p) {
    case Precision::FP16: return "fp16";
    case Precision::BF16: return "bf16";
    case Precision::FP32: return "fp32";
  }
  return "?";
}

std::optional<Precision> parse_precision(const std::string& s) {
  for (auto p : {Precision::FP16, Precision::BF16, Precision::FP32})
    if (s == to_string(p)) return p;
  return std::nullopt;
}

const char* to_string(NcclAlgorithm a) {
  switch (a) {
    case NcclAlgorithm::Ring: return "ring";
    case NcclAlgorithm::Tree: return "tree";
    case NcclAlgorithm::NVLS: return "nvls";
    case NcclAlgorithm::NVLSTree: return "nvls_tree";
    case NcclAlgorithm::CollNetDirect: return "collnet_direct";
    case NcclAlgorithm::CollNetChain: return "collnet_chain";
  }
  return "?";
}

std::optional<NcclAlgorithm> parse_nccl_algorithm(const std::string& s) {
  for (auto a : kAllNcclAlgorithms)
    if (s == to_string(a)) return a;
  return std::nullopt;
}

std::string collnet_problem(const NetworkSpec& n) {
  if (!n.collnet || n.fabric.sharp) return "";
  return "CollNet needs switches that reduce in the network (InfiniBand SHARP); fabric '" + n.fabric.name +
         "' has none (its `sharp` key is false)";
}

double GpuSpec::peak(Precision p) const {
  auto it = peak_flops.find(p);
  if (it == peak_flops.end()) throw std::logic_error("precision not supported by " + name);
  return it->second;
}

}  // namespace micsim
