// The progress bar on stderr (progress.h).
#include "bench/progress.h"

#include <fmt/core.h>
#include <unistd.h>

#include <cstdio>

namespace dptree::bench {

bool stderr_is_tty() {
  return isatty(STDERR_FILENO) == 1;
}

StderrProgress::StderrProgress(bool tty) : tty_(tty) {}

void StderrProgress::begin(std::string label) {
  label_ = std::move(label);
  phase_.clear();
  last_ = {};
}

void StderrProgress::update(std::string_view phase, double fraction) {
  if (!tty_) return;  // not a terminal: end() prints the one status line of the run
  const auto now = std::chrono::steady_clock::now();
  if (phase == phase_ && now - last_ < std::chrono::milliseconds(100)) return;  // throttle
  phase_ = std::string(phase);
  last_ = now;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(fraction * kWidth);
  fmt::print(
      stderr, "\r\033[K[{}{}] {:3.0f}% {} {}", std::string(static_cast<std::size_t>(filled), '#'),
      std::string(static_cast<std::size_t>(kWidth - filled), '.'), fraction * 100, label_, phase);
  std::fflush(stderr);
}

void StderrProgress::end(const std::string& summary) {
  if (tty_)
    fmt::print(stderr, "\r\033[K{}: {}\n", label_, summary);
  else
    fmt::print(stderr, "bench: {}: {}\n", label_, summary);
}

}  // namespace dptree::bench
