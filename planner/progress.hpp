#pragma once
// Progress of long runs on stderr. On a terminal: a bar with counts and ETA, redrawn in place.
// Otherwise (logs, CI, pipes): one line every 10 s (MICSIM_PROGRESS_SECONDS overrides the interval)
// with done/total, elapsed time and ETA, from a background thread, so a slow item still shows life.
// Thread-safe: workers call tick().
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace micsim {

class Progress {
 public:
  Progress(std::string label, size_t total);
  ~Progress();
  void tick(size_t n = 1);
  void done();

 private:
  std::string label_;
  size_t total_;
  std::atomic<size_t> count_{0};
  bool terminal_;
  bool finished_ = false;
  std::mutex mu_;
  std::condition_variable wake_;
  std::thread reporter_;  // non-terminal: periodic lines
  std::chrono::steady_clock::time_point start_, last_draw_;
  void draw(bool force);
  std::string status(std::chrono::steady_clock::time_point now) const;
};

}  // namespace micsim
