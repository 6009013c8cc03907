// The crash simulator (docs/pm-layer.md). A pool opened in `sim` mode keeps a
// durable image beside its working image:
//   - flush records the flushed lines of the calling thread as pending, with their content at
//     the time of the flush (clwb writes back what the line holds then);
//   - fence copies this thread's pending lines into the durable image, and drops the other
//     threads' pending snapshots of those lines that are older (coherence: once a newer copy
//     of a line is in PM, an older write-back can no longer land over it);
//   - capture() builds a crash image: the durable image, then each pending line with
//     probability p_pending, then each line whose working copy still differs with probability
//     p_evict (a dirty line may reach PM at any time); snapshots of one line land oldest
//     first, so a newer one that lands wins. The unit that reaches PM whole is a
//     64-byte line or an 8-byte word (x86 promises only 8-byte failure atomicity).
// Capturing does not disturb the run. A hook, called before every flush and fence of the pool
// takes effect, lets a test capture at the k-th event.
//
// Limits of the model: an intermediate value of a line that was evicted and then overwritten
// before the capture is not produced (each capture sees the durable, pending and current
// contents only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "dptree/pm/buffer.h"

namespace dptree::pm {

enum class Unit : std::uint8_t { line64, word8 };

struct CaptureOptions {
  std::uint64_t seed = 0;
  double p_evict = 0.0;    // chance that a dirty, unflushed unit reached PM
  double p_pending = 0.5;  // chance that a flushed, unfenced unit reached PM
  Unit unit = Unit::line64;
};

enum class EventKind : std::uint8_t { flush, fence };

class Simulator;

struct Event {
  const Simulator* sim;  // the pool's simulator: capture() from here
  EventKind kind;
  std::uint64_t seq;    // events of this pool so far (flushes and fences), from 0
  std::uint64_t index;  // events of this kind so far, from 0
};

// A crash image: the bytes PM would hold after a power failure. Pool::open_image opens one.
struct Image {
  Buffer bytes;
};

class Simulator {
 public:
  using Hook = std::function<void(const Event&)>;

  // `working` is the pool's mapping; `durable` starts as a copy of what is on the medium.
  Simulator(std::byte* working, std::size_t size, Buffer durable);
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  // Called before each flush or fence of this pool takes effect. The hook may capture(), and
  // may open and recover the image (events of other pools do not re-enter this hook; events
  // of this pool raised from inside the hook are applied without calling it again). The
  // hook runs inside pm::flush / pm::fence on the thread that raised the event, so a
  // recovery it runs there re-enters index code: no thread_local scratch may be live across
  // a flush or fence.
  void set_hook(Hook hook);

  Image capture(const CaptureOptions& opt) const;
  // The durable image as it stands (what survives if no pending or dirty line lands).
  std::span<const std::byte> durable() const { return durable_.span(); }

  std::uint64_t flush_events() const;
  std::uint64_t fence_events() const;
  std::size_t pending_lines() const;

  // Used by pm::flush / pm::fence; not for direct use.
  void on_flush(const std::byte* addr, std::size_t len, std::uint32_t thread);
  void on_fence(std::uint32_t thread);
  bool contains(const void* p) const {
    auto* b = static_cast<const std::byte*>(p);
    return b >= working_ && b < working_ + size_;
  }
  std::uint64_t id() const { return id_; }

 private:
  struct Pending {
    std::uint64_t line;
    std::uint64_t seq;  // the flush event that took this snapshot (orders snapshots of a line)
    std::uint32_t thread;
    alignas(8) std::byte data[64];
  };
  void call_hook(EventKind k);
  void reindex_pending();

  std::byte* working_;
  std::size_t size_;
  Buffer durable_;
  std::uint64_t id_;
  mutable std::mutex mu_;
  std::vector<Pending> pending_;
  std::unordered_map<std::uint64_t, std::size_t> pending_index_;  // (line, thread) -> slot
  std::uint64_t flushes_ = 0, fences_ = 0;
  Hook hook_;
};

}  // namespace dptree::pm
