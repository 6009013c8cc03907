// Progress on stderr: a redrawn bar when stderr is a terminal, otherwise one short status
// line per finished run (so logs of `make bench 2>&1 | tee` stay readable).
#pragma once

#include <chrono>
#include <string>

#include "bench/runner.h"

namespace dptree::bench {

class StderrProgress final : public Progress {
 public:
  explicit StderrProgress(bool tty);
  // Starts a new run described by `label` (e.g. "btree read_only t=1").
  void begin(std::string label);
  void update(std::string_view phase, double fraction) override;
  // Finishes the run's display with a summary.
  void end(const std::string& summary);

 private:
  bool tty_;
  std::string label_, phase_;
  std::chrono::steady_clock::time_point last_{};
};

// Whether stderr is a terminal.
bool stderr_is_tty();

}  // namespace dptree::bench
