// The crash simulator (docs/pm-layer.md). A pool opened in `sim` mode keeps a
// durable image beside its working image:
//   - a store through pm::store (store.h) is applied and recorded in the store log of each
//     line it touches: the stores made to the line since it was last durable, in order;
//   - flush records the flushed lines of the calling thread as pending, with their content at
//     the time of the flush (clwb writes back what the line holds then);
//   - fence copies this thread's pending lines into the durable image, drops the stores those
//     snapshots hold from the line's log, and drops the other threads' pending snapshots of
//     those lines that are older (coherence: once a newer copy of a line is in PM, an older
//     write-back can no longer land over it);
//   - capture() builds a crash image: the durable image, then each pending line with
//     probability p_pending, then each unit written since it was durable with probability
//     p_evict (a dirty line may reach PM at any time). An evicted unit lands as it stood after
//     a prefix of its logged stores, drawn at random: half the time all of them (the working
//     content), otherwise a shorter prefix not older than a snapshot that landed. So a 64-byte
//     line may hold any state it passed through since it was durable, and with the 8-byte unit
//     each word any value it took. The unit that reaches PM whole is a 64-byte line or an
//     8-byte word (x86 promises only 8-byte failure atomicity).
// Capturing does not disturb the run. A hook, called before every flush and fence of the pool
// takes effect, lets a test capture at the k-th event.
//
// Raw stores: at each flush, and at each capture for every dirty line, the simulator checks
// that the line's working bytes are its durable bytes with the logged stores applied. A line
// that differs was written by a store that bypassed pm::store; it is listed in raw_stores()
// and lands as before (its current content, no intermediate states).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dptree/pm/buffer.h"

namespace dptree::pm {

enum class Unit : std::uint8_t { line64, word8 };

struct CaptureOptions {
  std::uint64_t seed = 0;
  double p_evict = 0.0;    // chance that a dirty, unflushed unit reached PM
  double p_pending = 0.5;  // chance that a flushed, unfenced unit reached PM
  Unit unit = Unit::line64;
  bool intermediate = true;  // false: an evicted unit lands as it is now (no earlier state)
};

// A line whose working bytes no logged store explains: a store to PM bypassed pm::store.
struct RawStore {
  std::uint64_t offset;  // the first differing 8-byte word, from the pool's base
  const void* caller;    // the code that flushed the line (null: found by a capture)
};

enum class EventKind : std::uint8_t { flush, fence };

class Simulator;
struct SimRng;

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
  // Lines flushed by other threads than the caller and not yet fenced: what a commit point on
  // this thread must not be reached with, when those flushes are part of what it commits.
  std::size_t pending_lines_of_other_threads() const;

  // Stores that bypassed pm::store, as found so far (the first kMaxRawReports) and counted.
  static constexpr std::size_t kMaxRawReports = 16;
  std::vector<RawStore> raw_stores() const;
  std::uint64_t raw_store_count() const;

  // Used by pm::flush / pm::fence / pm::store; not for direct use.
  void on_flush(const std::byte* addr, std::size_t len, std::uint32_t thread, const void* caller);
  void on_fence(std::uint32_t thread);
  // Logs what plain stores changed in [p, p + len) as one store (pm::note_stores).
  void on_note(const std::byte* p, std::size_t len);
  // Applies `write` to [dst, dst + len) and logs the bytes it leaves, under the lock.
  template <class Write>
  void on_store(std::byte* dst, std::size_t len, Write write) {
    std::lock_guard g(mu_);
    write();
    log_store(dst, len);
  }
  bool contains(const void* p) const {
    auto* b = static_cast<const std::byte*>(p);
    return b >= working_ && b < working_ + size_;
  }
  std::uint64_t id() const { return id_; }

 private:
  struct Pending {
    std::uint64_t line;
    std::uint64_t seq;  // the flush event that took this snapshot (orders snapshots of a line)
    std::uint64_t store_seq;  // the stores it holds: those numbered up to this
    std::uint32_t thread;
    alignas(8) std::byte data[64];
  };
  // One store's bytes within one line: `mask` bit i set when byte i was written.
  struct Store {
    std::uint64_t seq;
    std::uint64_t mask;
    alignas(8) std::byte data[64];
  };
  // The stores to a line since it was last durable; `predicted` is its durable bytes with all
  // of them applied (what the working line holds unless a raw store changed it); `raw` once a
  // raw store was found in it.
  struct LineLog {
    std::vector<Store> stores;
    alignas(8) std::byte predicted[64];
    bool raw = false;
  };
  static constexpr std::size_t kMaxLog = 64;  // older stores of a line beyond this are merged

  void call_hook(EventKind k);
  void reindex_pending();
  void log_store(const std::byte* dst, std::size_t len);
  // Appends a store of the bytes `mask` selects, as the line holds them now.
  void append(std::uint64_t line, std::uint64_t mask);
  // The line as it stood after the first k logged stores, from its durable bytes.
  void replay(std::uint64_t line, const LineLog& log, std::size_t k, std::byte* out) const;
  // Checks a line against its log; reports and marks it when a raw store changed it.
  void check_line(std::uint64_t line, const void* caller) const;
  // Lands the units of a logged line, each not older than the prefix `from` of a snapshot.
  void evict(std::uint64_t line, const LineLog& log, const std::array<std::uint32_t, 8>& from,
             const CaptureOptions& opt, SimRng& rng, std::byte* out) const;

  std::byte* working_;
  std::size_t size_;
  Buffer durable_;
  std::uint64_t id_;
  mutable std::mutex mu_;
  std::vector<Pending> pending_;
  struct PendingKeyHash {
    std::size_t operator()(const std::pair<std::uint64_t, std::uint32_t>& k) const {
      return std::hash<std::uint64_t>()(k.first * 0x9e3779b97f4a7c15ULL ^ k.second);
    }
  };
  // (line, thread) -> slot. All 32 bits of a thread id: ids grow with every thread that ever
  // flushed (a test recovers thousands of images, each with merge workers of its own).
  std::unordered_map<std::pair<std::uint64_t, std::uint32_t>, std::size_t, PendingKeyHash>
      pending_index_;
  std::uint64_t flushes_ = 0, fences_ = 0, stores_ = 0;
  // The detector marks lines from capture() too, which is const.
  mutable std::unordered_map<std::uint64_t, LineLog> logs_;
  mutable std::vector<RawStore> raw_;
  mutable std::uint64_t raw_count_ = 0;
  Hook hook_;
};

}  // namespace dptree::pm
