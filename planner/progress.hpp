#pragma once
// A progress bar on stderr, drawn only when stderr is a terminal (so logs and pipes stay clean).
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
  void done();

 private:
  std::string label_;
  size_t total_;
  std::atomic<size_t> count_{0};
  bool enabled_;
  bool finished_ = false;
  std::mutex mu_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  void draw(bool force);
};

}  // namespace micsim
