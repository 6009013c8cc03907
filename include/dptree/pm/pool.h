// A PM pool: a file mapped with mmap(MAP_SHARED) (MAP_SHARED_VALIDATE|MAP_SYNC first, for
// DAX), or an anonymous in-memory pool (tests, crash images). The header (magic, format
// version, size, uuid, layout, checksum, root word) is checked on open; any problem throws
// dptree::Error naming the file, the problem and the fix, and leaves the file byte-identical.
// A pool file is held with an exclusive lock while open.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dptree/pm/allocator.h"
#include "dptree/pm/pptr.h"
#include "dptree/pm/sim.h"

namespace dptree::pm {

inline constexpr std::uint32_t kFormatVersion = 1;
// The pool header's bytes: no block, so no typed offset, lies below.
inline constexpr std::size_t kPoolHeaderBytes = 4096;
inline constexpr std::size_t kMinPoolSize = 256 * 1024;
// 64 TiB: half of x86-64's user address space, so no size near it wraps when rounded.
inline constexpr std::size_t kMaxPoolSize = std::size_t{1} << 46;

// How Pool::open maps a file. `copy_on_write` maps it MAP_PRIVATE from a read-only descriptor:
// recovery and every other store land in private pages and never reach the file (a checker
// that must not change what it checks).
enum class OpenMode { shared, copy_on_write };

// Where examples and the benchmark put pool files: $DPTREE_POOL_DIR when set, else /dev/shm,
// else $TMPDIR, else /tmp.
std::filesystem::path default_pool_dir();

// Bytes an unprivileged user may still write on the file system that holds `path` (or its
// folder, when `path` does not exist yet); throws io_error when that folder cannot be read.
std::uint64_t free_bytes(const std::filesystem::path& path);
// `size` checked against [kMinPoolSize, kMaxPoolSize] (invalid_argument naming `what`) and
// rounded up to whole 4 KiB pages.
std::size_t checked_pool_size(std::size_t size, std::string_view what = "pool size");

class Pool;

// One live index per Pool object: every index holds a claim on its pool for its lifetime, and
// a second claim while the first lives throws Errc::in_use naming the pool and the holder (two
// indexes writing one pool would overwrite each other's blocks and lose acknowledged writes).
class PoolClaim {
 public:
  PoolClaim(Pool& pool, std::string_view who);
  ~PoolClaim();
  PoolClaim(const PoolClaim&) = delete;
  PoolClaim& operator=(const PoolClaim&) = delete;

 private:
  Pool& pool_;
};

class Pool {
 public:
  // Creates a pool file of `size` bytes; refuses to touch an existing file.
  static std::unique_ptr<Pool> create(const std::filesystem::path& path, std::size_t size);
  // Opens an existing pool file (recovers the allocator).
  static std::unique_ptr<Pool> open(const std::filesystem::path& path,
                                    OpenMode mode = OpenMode::shared);
  // Opens if the file exists, creates it otherwise.
  static std::unique_ptr<Pool> open_or_create(const std::filesystem::path& path, std::size_t size);
  // An anonymous pool that lives in memory only.
  static std::unique_ptr<Pool> create_in_memory(std::size_t size);
  // Opens a crash image (sim.h) as a new in-memory pool. In `sim` mode the new pool gets its
  // own simulator, with `hook` installed before recovery runs (so a crash during recovery can
  // be captured too).
  static std::unique_ptr<Pool> open_image(Image image, Simulator::Hook hook = nullptr);
  // Writes a crash image to a file that Pool::open accepts.
  static void save_image(const Image& image, const std::filesystem::path& path);

  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  std::byte* base() const { return base_; }
  std::size_t size() const { return size_; }
  const std::string& name() const { return name_; }  // file path, or "<memory>"
  const std::array<std::uint8_t, 16>& uuid() const { return uuid_; }
  bool is_dax() const { return dax_; }
  bool is_copy_on_write() const { return cow_; }
  // Copy-on-write pools: the byte ranges [begin, end) of 64-byte lines whose mapped content
  // differs from the file (what the stores since open would write); empty for other pools.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> changed_ranges() const;
  // Maps every page of the pool now, writable, so that no later store or load pays a
  // first-touch page fault (a few microseconds each, in the tail of whichever operation
  // first touches the page). A service that sizes its pool up front can pay them all at
  // start, as code that pre-allocates its memory does. False, with nothing done, for a
  // copy-on-write pool (populating would copy every page) or a kernel before Linux 5.14.
  bool prefault();

  // The T `p` names (nullptr for null), unchecked: for offsets the open-time validation or
  // this process's own writes vouch for.
  template <class T>
  T* get(PPtr<T> p) const {
    return p.off ? reinterpret_cast<T*>(base_ + p.off) : nullptr;
  }
  // Whether a non-null `p` names a whole T inside the heap, aligned for T.
  template <class T>
  bool holds(PPtr<T> p) const {
    return p.off >= kPoolHeaderBytes && p.off % alignof(T) == 0 && p.off <= size_ &&
           size_ - p.off >= sizeof(T);
  }
  // The T `p` names, checked (nullptr for null): for words a crash or a damaged file may have
  // left wrong. Throws Error(corrupt) naming `what` and the offset when `p` is out of bounds or
  // misaligned.
  template <class T>
  T* resolve(PPtr<T> p, std::string_view what) const {
    if (!p) return nullptr;
    if (!holds(p)) refuse_offset(p.off, what);
    return reinterpret_cast<T*>(base_ + p.off);
  }
  template <class T = std::byte>
  T* at(std::uint64_t off) const {
    return off ? reinterpret_cast<T*>(base_ + off) : nullptr;
  }
  std::uint64_t offset_of(const void* p) const {
    return static_cast<std::uint64_t>(static_cast<const std::byte*>(p) - base_);
  }
  bool contains(const void* p, std::size_t len) const {
    auto* b = static_cast<const std::byte*>(p);
    return b >= base_ && b + len <= base_ + size_;
  }

  // The persistent root word: activate a root block into it (allocator().activate(root_word(),
  // blk)); 0 while the pool has no root.
  std::uint64_t* root_word() const;
  template <class T>
  T* root() const {
    return at<T>(*root_word());
  }

  Allocator& allocator() { return *alloc_; }
  const Allocator& allocator() const { return *alloc_; }
  Simulator* sim() const { return sim_.get(); }  // non-null when opened in `sim` mode

 private:
  Pool() = default;
  void map_file(int fd, std::size_t size, bool fresh, bool cow = false);
  void init_header(std::size_t size);
  void attach(bool fresh);
  [[noreturn]] void refuse_offset(std::uint64_t off, std::string_view what) const;
  friend class PoolClaim;

  std::string name_;
  std::byte* base_ = nullptr;
  std::size_t size_ = 0;
  int fd_ = -1;
  bool dax_ = false;
  bool cow_ = false;
  std::array<std::uint8_t, 16> uuid_{};
  Buffer memory_;  // backs in-memory pools
  std::unique_ptr<Simulator> sim_;
  std::unique_ptr<Allocator> alloc_;
  std::mutex claim_mu_;
  std::string holder_;  // the index that holds the pool; empty while none does
};

// Why `path` could not be locked: another process (named by pid when /proc/locks shows it) or
// another Pool of this process.
std::string lock_holder(const std::filesystem::path& path, int fd);

}  // namespace dptree::pm
