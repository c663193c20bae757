#pragma once
// The hardware catalog (models/catalog/instances.yaml): parse once, look up by name.
// Inline instance specs in scenarios go through the same parser, so both are validated alike.
#include <string>
#include <vector>

#include "models/hardware/hardware.hpp"
#include "models/io/yaml_node.hpp"

namespace micsim {

class HardwareCatalog {
 public:
  static const HardwareCatalog& builtin();  // the embedded catalog
  static HardwareCatalog parse(const YamlNode& root);

  const InstanceSpec& instance(const std::string& name) const;  // throws std::out_of_range
  const InstanceSpec* find_instance(const std::string& name) const;
  const GpuSpec* find_gpu(const std::string& name) const;
  const FabricSpec* find_fabric(const std::string& name) const;
  std::vector<std::string> instance_names() const;
  std::vector<std::string> gpu_names() const;
  std::vector<std::string> fabric_names() const;

  // An inline `instance:` mapping (same keys as a catalog entry; gpu/fabric may name catalog entries
  // or be inline mappings themselves).
  InstanceSpec parse_instance(const YamlNode& node, const std::string& name) const;

 private:
  std::vector<GpuSpec> gpus_;
  std::vector<FabricSpec> fabrics_;
  std::vector<InstanceSpec> instances_;
  GpuSpec parse_gpu(const YamlNode& node, const std::string& name) const;
  FabricSpec parse_fabric(const YamlNode& node, const std::string& name) const;
};

// Finds an embedded catalog file by its path (e.g. "models/catalog/models.yaml").
YamlNode load_embedded_catalog(const std::string& path);

}  // namespace micsim
