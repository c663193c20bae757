#pragma once
// Progress of long runs on stderr. On a terminal: a bar with counts and ETA, redrawn in place.
// Otherwise (logs, CI, pipes): one line every 10 s (MICSIM_PROGRESS_SECONDS overrides the interval)
// with done/total, elapsed time and ETA. No thread of its own: SimGrid runs in children forked from
// this process, and a fork while another thread is starting or allocating can leave the child a
// lock it never gets back (seen as a hung CI under AddressSanitizer). Lines are drawn from tick()
// and from poll(), which a caller waiting on slow items (the SimGrid children) calls meanwhile.
// Thread-safe: workers call tick().
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>

namespace micsim {

class Progress {
 public:
  Progress(std::string label, size_t total);
  ~Progress();
  void tick(size_t n = 1);
  void poll();  // draws a line if one is due
  void done();

 private:
  std::string label_;
  size_t total_;
  std::atomic<size_t> count_{0};
  bool terminal_;
  bool finished_ = false;
  std::mutex mu_;
  std::chrono::duration<double> line_interval_{10.0};
  std::chrono::steady_clock::time_point start_, last_draw_;
  void draw(bool force);
  std::string status(std::chrono::steady_clock::time_point now) const;
};

}  // namespace micsim
