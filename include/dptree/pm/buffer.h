// Page-aligned anonymous memory for in-memory pools, durable images and crash images. Freed
// buffers are kept for reuse, so a crash test that opens thousands of images pays for page
// faults once, not once per image.
#pragma once

#include <cstddef>
#include <span>

namespace dptree::pm {

class Buffer {
 public:
  Buffer() = default;
  // `size` bytes; zeroed when `zero` is set, otherwise of unspecified content.
  explicit Buffer(std::size_t size, bool zero = true);
  static Buffer copy_of(std::span<const std::byte> bytes);
  ~Buffer();
  Buffer(Buffer&& o) noexcept : data_(o.data_), size_(o.size_) {
    o.data_ = nullptr;
    o.size_ = 0;
  }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::span<const std::byte> span() const { return {data_, size_}; }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace dptree::pm
