#include "planner/progress.hpp"

#include "planner/ranks.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cmath>
#include <cstdlib>

namespace micsim {

namespace {
double line_interval_s() {
  if (const char* v = std::getenv("MICSIM_PROGRESS_SECONDS")) {
    char* end = nullptr;
    const double s = std::strtod(v, &end);
    if (end != v && *end == '\0' && s >= 0.05 && s <= 86400) return s;
  }
  return 10.0;
}

std::string human_duration(double s) {
  if (s < 60) return fmt::format("{:.0f} s", s);
  if (s < 3600) return fmt::format("{:.0f} min {:02.0f} s", std::floor(s / 60), std::fmod(s, 60));
  return fmt::format("{:.0f} h {:02.0f} min", std::floor(s / 3600), std::floor(std::fmod(s, 3600) / 60));
}
}  // namespace

Progress::Progress(std::string label, size_t total)
    : label_(std::move(label)), total_(total), terminal_(isatty(STDERR_FILENO) == 1) {
  if (!ranks::is_root()) label_.clear(), terminal_ = false;  // one progress report per run: rank 0's
  else if (ranks::size() > 1 && !label_.empty()) label_ += fmt::format(" (rank 0 of {})", ranks::size());
  line_interval_ = std::chrono::duration<double>(line_interval_s());
  start_ = last_draw_ = std::chrono::steady_clock::now();
}

Progress::~Progress() { done(); }

std::string Progress::status(std::chrono::steady_clock::time_point now) const {
  const size_t c = count_;
  const double secs = std::chrono::duration<double>(now - start_).count();
  const double frac = total_ ? double(c) / double(total_) : 1.0;
  std::string eta = c > 0 && c < total_ ? ", ETA " + human_duration(secs / double(c) * double(total_ - c)) : "";
  return fmt::format("{}: {}/{} done ({:.0f}%), {} elapsed{}", label_, c, total_, 100 * frac, human_duration(secs), eta);
}

void Progress::tick(size_t n) {
  count_ += n;
  poll();
}

void Progress::poll() {
  if (label_.empty() || total_ == 0) return;
  draw(false);
}

void Progress::draw(bool force) {
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);  // a busy reporter is enough
  if (!lock.owns_lock() || finished_) return;
  auto now = std::chrono::steady_clock::now();
  if (!terminal_) {
    // A log: one plain line per interval.
    if (!force && now - last_draw_ < line_interval_) return;
    last_draw_ = now;
    fmt::print(stderr, "{}\n", status(now));
    std::fflush(stderr);
    return;
  }
  if (!force && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const size_t c = count_;
  const double frac = total_ ? double(c) / double(total_) : 1.0;
  const int width = 30, filled = int(frac * width);
  std::string bar(filled, '#');
  bar.resize(width, '.');
  fmt::print(stderr, "\r[{}] {}\x1b[K", bar, status(now));
  std::fflush(stderr);
}

void Progress::done() {
  if (terminal_ && !label_.empty() && total_ > 0) {
    draw(true);
    fmt::print(stderr, "\n");
  }
  std::lock_guard<std::mutex> lock(mu_);
  finished_ = true;
}

}  // namespace micsim
