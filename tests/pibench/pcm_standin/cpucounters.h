// A stand-in for Intel PCM's cpucounters.h, so PiBench builds without PCM. It declares what
// PiBench's benchmark uses and nothing more: programming the counters always fails, so a run
// must pass --pcm=false (PiBench prints the failure and goes on without counters otherwise),
// and every counter reads 0. The test driver puts it into its copy of a PiBench checkout
// whose pcm/ folder is empty (a clone without its submodules).
#pragma once

#include <cstdint>
// PiBench's benchmark.cpp uses std::this_thread and std::setprecision without including their
// headers: PCM's header brings them in.
#include <iomanip>
#include <thread>

class SystemCounterState {};

inline SystemCounterState getSystemCounterState() {
  return {};
}

inline std::uint64_t getL3CacheMisses(const SystemCounterState&, const SystemCounterState&) {
  return 0;
}
inline std::uint64_t getBytesReadFromMC(const SystemCounterState&, const SystemCounterState&) {
  return 0;
}
inline std::uint64_t getBytesWrittenToMC(const SystemCounterState&, const SystemCounterState&) {
  return 0;
}
inline std::uint64_t getBytesReadFromPMM(const SystemCounterState&, const SystemCounterState&) {
  return 0;
}
inline std::uint64_t getBytesWrittenToPMM(const SystemCounterState&, const SystemCounterState&) {
  return 0;
}

class PCM {
 public:
  enum ErrorCode { Success = 0, MSRAccessDenied = 1, PMUBusy = 2, UnknownError = 3 };
  static PCM* getInstance() {
    static PCM instance;
    return &instance;
  }
  ErrorCode program() { return UnknownError; }
  void resetPMU() {}
  void cleanup() {}
};
