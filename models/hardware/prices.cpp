#include "models/hardware/prices.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "models/hardware/catalog.hpp"

namespace micsim {

const std::vector<std::string>& PriceBook::tier_names() {
  static const std::vector<std::string> names = {"on_demand", "spot", "capacity_block", "reserved", "reserved_1y", "reserved_3y",
                                                 "savings_plan_1y", "savings_plan_3y"};
  return names;
}

std::string PriceQuote::describe() const {
  std::string s = tier;
  if (!region.empty()) s += " " + region;
  if (!date.empty()) s += " " + date;
  if (!source.empty()) s += " (" + source + ")";
  return s;
}

PriceBook& PriceBook::mutable_builtin() {
  static PriceBook book = [] {
    PriceBook b;
    YamlNode root = load_embedded_catalog("models/catalog/prices.yaml");
    root.check_keys({"prices"});
    b.merge(root.at("prices"));
    return b;
  }();
  return book;
}

const PriceBook& PriceBook::builtin() { return mutable_builtin(); }

// Dates are YYYY, YYYY-MM or YYYY-MM-DD: compared as text, they order correctly.
static std::string read_date(const YamlNode& n) {
  std::string d = n.as_string();
  if (d == "unknown") return d;  // an undated source: ranked below every dated quote
  const bool ok = (d.size() == 4 || d.size() == 7 || d.size() == 10) &&
                  std::all_of(d.begin(), d.end(), [](char c) { return (c >= '0' && c <= '9') || c == '-'; }) &&
                  (d.size() == 4 || d[4] == '-') && (d.size() < 10 || d[7] == '-');
  if (!ok) n.fail("expected a date YYYY, YYYY-MM or YYYY-MM-DD (or \"unknown\")");
  return d;
}

void PriceBook::merge(const YamlNode& prices) {
  prices.require_map();
  for (const auto& instance : prices.keys()) {
    YamlNode tiers = prices.at(instance);
    tiers.check_keys(tier_names());
    for (const auto& tier : tiers.keys()) {
      YamlNode entries = tiers.at(tier);
      std::vector<YamlNode> list = entries.is_sequence() ? entries.items() : std::vector<YamlNode>{entries};
      if (list.empty()) entries.fail("expected at least one quote");
      std::vector<PriceQuote> parsed;
      for (const auto& e : list) {
        e.check_keys({"usd_per_hour", "region", "date", "source", "note"});
        PriceQuote q;
        q.instance = instance;
        q.tier = tier;
        q.usd_per_hour = e.at("usd_per_hour").as_double_in(0.0, 1e6);
        q.date = read_date(e.at("date"));
        q.source = e.at("source").as_string();
        if (q.source.empty()) e.at("source").fail("expected where the price comes from");
        if (auto r = e.get("region")) q.region = r->as_string();
        if (auto n = e.get("note")) q.note = n->as_string();
        parsed.push_back(std::move(q));
      }
      quotes_.erase(std::remove_if(quotes_.begin(), quotes_.end(),
                                   [&](const PriceQuote& q) { return q.instance == instance && q.tier == tier; }),
                    quotes_.end());
      quotes_.insert(quotes_.end(), parsed.begin(), parsed.end());
    }
  }
}

static bool newer(const std::string& a, const std::string& b) {
  const std::string x = a == "unknown" ? "" : a, y = b == "unknown" ? "" : b;
  return x > y;
}

std::optional<PriceQuote> PriceBook::quote(const std::string& instance, const std::string& tier) const {
  const PriceQuote* best = nullptr;
  for (const auto& q : quotes_)
    if (q.instance == instance && q.tier == tier && (!best || newer(q.date, best->date))) best = &q;
  if (!best) return std::nullopt;
  return *best;
}

std::vector<PriceQuote> PriceBook::quotes(const std::string& instance) const {
  std::vector<PriceQuote> out;
  for (const auto& q : quotes_)
    if (q.instance == instance) out.push_back(q);
  return out;
}

std::vector<std::string> PriceBook::tiers() const {
  std::vector<std::string> out;
  for (const auto& t : tier_names())
    if (std::any_of(quotes_.begin(), quotes_.end(), [&](const PriceQuote& q) { return q.tier == t; })) out.push_back(t);
  return out;
}

}  // namespace micsim
