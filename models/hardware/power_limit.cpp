#include "models/hardware/power_limit.hpp"

#include <fmt/format.h>

namespace micsim {

double effective_power_limit_w(const GpuSpec& gpu) { return gpu.power_limit_w > 0 ? gpu.power_limit_w : gpu.tdp_w; }

double power_limited_compute_rate(const GpuSpec& gpu) {
  if (gpu.tdp_w <= 0 || gpu.power_curve.empty()) return 1.0;
  const double x = effective_power_limit_w(gpu) / gpu.tdp_w;
  const auto& c = gpu.power_curve;
  if (x >= c.back().limit_fraction) return c.back().throughput_fraction;
  if (x <= c.front().limit_fraction) return c.front().throughput_fraction;
  for (size_t i = 1; i < c.size(); ++i)
    if (x <= c[i].limit_fraction) {
      const PowerPoint &a = c[i - 1], &b = c[i];
      return a.throughput_fraction + (b.throughput_fraction - a.throughput_fraction) * (x - a.limit_fraction) / (b.limit_fraction - a.limit_fraction);
    }
  return 1.0;
}

std::string power_limit_problem(const GpuSpec& gpu, double limit_w) {
  if (gpu.tdp_w <= 0) return fmt::format("{} has no tdp_w in the catalog, so a power limit cannot be related to its clocks", gpu.name);
  if (gpu.power_curve.empty())
    return fmt::format("no measured power curve for {} (catalog power_curve): micsim will not guess how its clocks fall", gpu.name);
  const double lo = gpu.power_curve.front().limit_fraction * gpu.tdp_w;
  if (limit_w < lo - 1e-9 || limit_w > gpu.tdp_w + 1e-9)
    return fmt::format("expected a power limit from {:.0f} W (the lowest measured point) to {:.0f} W (the TDP) for {}, got {:g} W", lo,
                       gpu.tdp_w, gpu.name, limit_w);
  return "";
}

}  // namespace micsim
