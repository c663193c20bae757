#include "planner/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace micsim {

Progress::Progress(std::string label, size_t total)
    : label_(std::move(label)), total_(total), enabled_(isatty(STDERR_FILENO) == 1) {
  start_ = last_draw_ = std::chrono::steady_clock::now();
}

Progress::~Progress() { done(); }

void Progress::tick(size_t n) {
  count_ += n;
  if (enabled_) draw(false);
}

void Progress::draw(bool force) {
  std::lock_guard<std::mutex> lock(mu_);
  auto now = std::chrono::steady_clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const size_t c = count_;
  const double frac = total_ ? double(c) / double(total_) : 1.0;
  const int width = 30, filled = int(frac * width);
  const double secs = std::chrono::duration<double>(now - start_).count();
  std::string bar(filled, '#');
  bar.resize(width, '.');
  fmt::print(stderr, "\r{} [{}] {}/{} ({:.0f}%) {:.1f} s", label_, bar, c, total_, 100 * frac, secs);
  std::fflush(stderr);
}

void Progress::done() {
  if (finished_) return;
  finished_ = true;
  if (enabled_) {
    draw(true);
    fmt::print(stderr, "\n");
  }
}

}  // namespace micsim
