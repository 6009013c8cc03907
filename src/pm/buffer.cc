// Page-aligned anonymous buffers (dptree/pm/buffer.h) for in-memory pools and crash images,
// and the cache of freed mappings they are taken from again.
#include "dptree/pm/buffer.h"

#include <sys/mman.h>

#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "dptree/error.h"

namespace dptree::pm {

namespace {

// Freed mappings by size, up to a cap; never destroyed (threads may free buffers late).
struct Cache {
  static constexpr std::size_t kMaxBytes = std::size_t{256} << 20;
  std::mutex mu;
  std::multimap<std::size_t, void*> free;
  std::size_t bytes = 0;
};
Cache& cache() {
  static Cache* c = new Cache;
  return *c;
}

std::size_t round_pages(std::size_t n) {
  return (n + 4095) / 4096 * 4096;
}

void* take(std::size_t size) {
  {
    auto& c = cache();
    std::lock_guard g(c.mu);
    if (auto it = c.free.find(size); it != c.free.end()) {
      void* p = it->second;
      c.free.erase(it);
      c.bytes -= size;
      return p;
    }
  }
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED)
    throw Error(Errc::io_error,
                "cannot map " + std::to_string(size) + " bytes of memory: " + std::strerror(errno));
  return p;
}

void give_back(void* p, std::size_t size) {
  auto& c = cache();
  {
    std::lock_guard g(c.mu);
    if (c.bytes + size <= Cache::kMaxBytes) {
      c.free.emplace(size, p);
      c.bytes += size;
      return;
    }
  }
  munmap(p, size);
}

}  // namespace

Buffer::Buffer(std::size_t size, bool zero) : size_(size) {
  if (size == 0) return;
  data_ = static_cast<std::byte*>(take(round_pages(size)));
  if (zero) std::memset(data_, 0, size);
}

Buffer Buffer::copy_of(std::span<const std::byte> bytes) {
  Buffer b(bytes.size(), false);
  if (!bytes.empty()) std::memcpy(b.data_, bytes.data(), bytes.size());
  return b;
}

Buffer::~Buffer() {
  if (data_) give_back(data_, round_pages(size_));
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    if (data_) give_back(data_, round_pages(size_));
    data_ = o.data_;
    size_ = o.size_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

}  // namespace dptree::pm
