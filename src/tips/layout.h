// TIPS's persistent layout (docs/tips.md, "Layout"). Every block comes from the pool's
// allocator; pointers between them are pool offsets.
//
//   Root       magic, format, the layout parameters, the adapter's name, the slot directory,
//              one partition block per backend instance, one OLog block per lane
//   Lane       an OLog ring: head (first live record) and tail (one past the last durable
//              record) on their own lines, then the 32-byte records
//   Partition  line 0: applied timestamp (the commit word) and the MLog's epoch base;
//              then the adapter's header (the plugged-in index), the MLog words, the ULog
//   slot page  8192 owner words: each node block of a plugged-in index is owned (allocator
//              §2.4 sense) by one slot, so the index may move its pointers freely
//   node block a 64-byte header (slot number, magic), then the node
#pragma once

#include <cstddef>
#include <cstdint>

namespace dptree::tips::layout {

inline constexpr std::uint64_t kMagic = 0x3130535049544450ull;  // "PDTIPS01"
inline constexpr std::uint64_t kNodeMagic = 0x45444f4e53504954ull;
inline constexpr std::uint32_t kFormat = 1;
inline constexpr std::size_t kMaxPartitions = 64;
inline constexpr std::size_t kMaxLanes = 64;
inline constexpr std::size_t kSlotsPerPage = 8192;  // 64 KiB pages of owner words
inline constexpr std::size_t kDirPages = 8192;      // up to 67 M nodes
inline constexpr std::size_t kNodeHeader = 64;

struct Root {
  std::uint64_t magic;
  std::uint64_t format;
  std::uint64_t partitions, lanes, lane_records, ulog_lines, mlog_entries, header_bytes;
  char adapter[64];
  std::uint64_t dir;  // block of kDirPages page offsets
  std::uint64_t part[kMaxPartitions];
  std::uint64_t lane[kMaxLanes];
};

enum Op : std::uint64_t { kPut = 1, kRemove = 2 };

struct Record {
  std::uint64_t ts;  // global timestamp, from 1
  std::uint64_t op;
  std::uint64_t key;
  std::uint64_t value;
};
static_assert(sizeof(Record) == 32);

struct LaneHeader {
  alignas(64) std::uint64_t head;
  alignas(64) std::uint64_t tail;
};
inline constexpr std::size_t kLaneHeader = sizeof(LaneHeader);
static_assert(kLaneHeader == 128);

// One undo entry: the old content of one line, where it lives, the epoch it belongs to (the
// partition's applied timestamp when the epoch began) and a checksum over all of it, so a
// torn entry is never rolled back.
struct UndoEntry {
  alignas(64) unsigned char data[64];
  std::uint64_t off;
  std::uint64_t tag;
  std::uint64_t sum;
  std::uint64_t pad[5];
};
static_assert(sizeof(UndoEntry) == 128);
inline constexpr std::uint64_t kClearedTag = ~0ull;  // never an applied timestamp

// MLog word: bit 63 set = in use, bit 62 set = a free (else an allocation), low bits: slot.
inline constexpr std::uint64_t kMlogUsed = 1ull << 63;
inline constexpr std::uint64_t kMlogFree = 1ull << 62;
inline constexpr std::uint64_t kMlogSlotMask = (1ull << 62) - 1;

struct PartitionHeader {
  alignas(64) std::uint64_t applied;  // last timestamp whose effects are committed
  std::uint64_t mlog_base;            // `applied` when the MLog's current entries began
};

inline constexpr std::size_t round64(std::size_t n) {
  return (n + 63) / 64 * 64;
}

// Offsets inside a partition block.
struct PartitionLayout {
  std::size_t header_off = 64, mlog_off, ulog_off, bytes;
  PartitionLayout(std::size_t header_bytes, std::size_t mlog, std::size_t ulog) {
    mlog_off = header_off + round64(header_bytes);
    ulog_off = mlog_off + round64(mlog * 8);
    bytes = ulog_off + ulog * sizeof(UndoEntry);
  }
};

inline std::uint64_t undo_sum(std::uint64_t off, std::uint64_t tag, const unsigned char* data) {
  std::uint64_t h = 0x9e3779b97f4a7c15ull ^ (off * 0xff51afd7ed558ccdull) ^ (tag + 0x51);
  for (int i = 0; i < 64; i += 8) {
    std::uint64_t w = 0;
    for (int b = 0; b < 8; ++b) w |= static_cast<std::uint64_t>(data[i + b]) << (8 * b);
    h ^= w;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 31;
  }
  return h | 1;  // never 0: an all-zero entry is never valid
}

}  // namespace dptree::tips::layout
