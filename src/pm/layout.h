// On-media layout of a pool (format version 1). Internal to src/pm.
//
//   [0, 4 KiB)            PoolHeader (immutable line + root line)
//   [desc_off, heap_off)  one ChunkDesc per heap chunk
//   [heap_off, size)      heap chunks of Allocator::kChunkSize bytes
#pragma once

#include <cstddef>
#include <cstdint>

namespace dptree::pm::layout {

inline constexpr char kMagic[8] = {'D', 'P', 'T', 'R', 'E', 'E', 'P', 'M'};
inline constexpr std::size_t kHeaderSize = 4096;

struct PoolHeader {
  // Lines 0-1: written once at creation; checksum covers everything before it.
  char magic[8];
  std::uint32_t version;
  std::uint32_t header_size;
  std::uint64_t pool_size;
  std::uint8_t uuid[16];
  std::uint64_t chunk_size;
  std::uint64_t nchunks;
  std::uint64_t desc_off;
  std::uint64_t heap_off;
  std::uint64_t checksum;
  // Line 2: mutable words.
  alignas(64) std::uint64_t root;
};
static_assert(offsetof(PoolHeader, root) == 128);

// Chunk state word: class id in the low byte, run length (large blocks) above it.
inline constexpr std::uint64_t kStateFree = 0;
inline constexpr int kLargeClass = 100;  // first chunk of a run holding one large block
inline constexpr int kContClass = 101;   // a following chunk of that run
inline constexpr std::size_t kDescOwners = 16;

struct ChunkDesc {
  std::uint64_t state;
  std::uint64_t unused[7];
  std::uint64_t owners[kDescOwners];  // owner words of classes with <= 16 blocks per chunk
};
static_assert(sizeof(ChunkDesc) == 192);

}  // namespace dptree::pm::layout
