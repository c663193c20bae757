#pragma once
// Hourly prices of instances by tier (on-demand, spot, capacity blocks, reservations), each quote with
// the date it was valid and its source (models/catalog/prices.yaml). Prices change: a plan names the
// quote it used, and users override any of them (--price INSTANCE=USD, plan.prices).
#include <optional>
#include <string>
#include <vector>

#include "models/io/yaml_node.hpp"

namespace micsim {

struct PriceQuote {
  std::string instance, tier;
  double usd_per_hour = 0;   // the whole instance
  std::string region, date, source, note;
  std::string describe() const;  // "on_demand us-east-1 2025-06 (source)"
};

class PriceBook {
 public:
  // The embedded book merged with user catalogs (models/hardware/catalog.hpp: add_user_catalog).
  static const PriceBook& builtin();
  static PriceBook& mutable_builtin();
  // `prices:` mapping: instance -> tier -> quote or list of quotes. Later entries of `other` replace
  // this book's quotes of the same instance and tier.
  void merge(const YamlNode& prices);

  // The newest quote of a tier for an instance (ties: the first listed).
  std::optional<PriceQuote> quote(const std::string& instance, const std::string& tier) const;
  std::vector<PriceQuote> quotes(const std::string& instance) const;  // every tier, as listed
  std::vector<std::string> tiers() const;                             // tiers present anywhere

  static const std::vector<std::string>& tier_names();                // what a file may use

 private:
  std::vector<PriceQuote> quotes_;
};

}  // namespace micsim
