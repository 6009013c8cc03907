// Pool files (dptree/pm/pool.h): creating, mapping and validating a pool file and its header,
// and refusing a file that is not one, with the fix in the message.
#include "dptree/pm/pool.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>

#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/store.h"
#include "pm/layout.h"

#ifndef MAP_SHARED_VALIDATE
#define MAP_SHARED_VALIDATE 0x03
#endif
#ifndef MAP_SYNC
#define MAP_SYNC 0x80000
#endif

namespace dptree::pm {

namespace {

using layout::PoolHeader;

std::string errno_text() {
  return std::strerror(errno);
}

std::uint64_t header_checksum(const PoolHeader& h) {
  return XXH64(&h, offsetof(PoolHeader, checksum), 0);
}

struct Geometry {
  std::uint64_t nchunks, desc_off, heap_off;
};

// Chunk descriptors right after the header, then the heap, both 4 KiB aligned.
Geometry geometry_for(std::size_t size) {
  constexpr std::size_t kAlign = 4096;
  auto align = [](std::size_t v) { return (v + kAlign - 1) / kAlign * kAlign; };
  std::size_t n =
      (size - layout::kHeaderSize) / (Allocator::kChunkSize + sizeof(layout::ChunkDesc));
  while (n > 0 &&
         align(layout::kHeaderSize + n * sizeof(layout::ChunkDesc)) + n * Allocator::kChunkSize >
             size)
    --n;
  return {n, layout::kHeaderSize, align(layout::kHeaderSize + n * sizeof(layout::ChunkDesc))};
}

// Every check of a header read from a file or an image, before anything is mapped or written.
// `avail` bytes of the header were read; the whole file is `file_size` bytes.
void validate_header_bytes(const std::byte* bytes, std::size_t avail, std::size_t file_size,
                           const std::string& name) {
  const std::string what = "pool file '" + name + "'";
  if (avail < sizeof(layout::kMagic) ||
      std::memcmp(bytes, layout::kMagic, sizeof(layout::kMagic)) != 0)
    throw Error(Errc::not_a_pool, what + " is not a DPTree pool (no pool header magic): check " +
                                      "the path, or create a new pool at another path");
  if (avail < sizeof(PoolHeader))
    throw Error(Errc::truncated, what + " is only " + std::to_string(avail) +
                                     " bytes, shorter than a pool header: the file was " +
                                     "truncated; restore it from a copy");
  PoolHeader h;
  std::memcpy(&h, bytes, sizeof h);
  if (h.version != kFormatVersion)
    throw Error(Errc::version_mismatch, what + " has format version " + std::to_string(h.version) +
                                            ", this build reads version " +
                                            std::to_string(kFormatVersion) +
                                            ": open it with a matching dptree version");
  if (header_checksum(h) != h.checksum)
    throw Error(Errc::corrupt, what + " has a corrupt header (checksum mismatch): the file was " +
                                   "damaged; restore it from a copy");
  if (h.pool_size > file_size)
    throw Error(Errc::truncated, what + " is " + std::to_string(file_size) +
                                     " bytes but its header says " + std::to_string(h.pool_size) +
                                     ": the file was truncated; restore it from a copy");
  Geometry g = h.pool_size >= kMinPoolSize ? geometry_for(h.pool_size) : Geometry{};
  if (h.header_size != layout::kHeaderSize || h.chunk_size != Allocator::kChunkSize ||
      h.nchunks != g.nchunks || h.desc_off != g.desc_off || h.heap_off != g.heap_off)
    throw Error(Errc::corrupt, what + " has an inconsistent header layout: the file was " +
                                   "damaged; restore it from a copy");
}

// Refuses a pool file that would not fit, before anything is created.
void require_room(const std::filesystem::path& path, std::size_t size) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return;  // open(O_EXCL) names it
  const std::uint64_t avail = free_bytes(path);
  if (size > avail)
    throw Error(Errc::pool_full, "pool file '" + path.string() + "' of " + std::to_string(size) +
                                     " bytes does not fit: its file system has " +
                                     std::to_string(avail) +
                                     " bytes free; choose a smaller pool or another folder");
}

// An in-memory pool is zeroed at once: refuse one larger than the machine's memory.
void require_memory(std::size_t size) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0 &&
      size / static_cast<std::size_t>(page) > static_cast<std::size_t>(pages))
    throw Error(Errc::invalid_argument, "in-memory pool size " + std::to_string(size) +
                                            " is larger than this " + "machine's memory (" +
                                            std::to_string(pages * page) +
                                            " bytes): use a smaller pool, or a pool file");
}

}  // namespace

std::filesystem::path default_pool_dir() {
  if (const char* d = std::getenv("DPTREE_POOL_DIR"); d && *d) return d;
  std::error_code ec;
  if (std::filesystem::is_directory("/dev/shm", ec) && access("/dev/shm", W_OK) == 0)
    return "/dev/shm";
  if (const char* t = std::getenv("TMPDIR"); t && *t) return t;
  return "/tmp";
}

void Pool::init_header(std::size_t size) {
  PoolHeader h{};
  std::memcpy(h.magic, layout::kMagic, sizeof h.magic);
  h.version = kFormatVersion;
  h.header_size = layout::kHeaderSize;
  h.pool_size = size;
  std::random_device rd;
  for (auto& b : h.uuid) b = static_cast<std::uint8_t>(rd());
  Geometry g = geometry_for(size);
  h.chunk_size = Allocator::kChunkSize;
  h.nchunks = g.nchunks;
  h.desc_off = g.desc_off;
  h.heap_off = g.heap_off;
  h.checksum = header_checksum(h);
  store_bytes(base_, &h, sizeof h);
  persist(base_, sizeof h);
}

void Pool::attach(bool fresh) {
  auto* h = reinterpret_cast<const PoolHeader*>(base_);
  std::memcpy(uuid_.data(), h->uuid, uuid_.size());
  alloc_.reset(new Allocator(*this, fresh));
}

static_assert(kPoolHeaderBytes == layout::kHeaderSize);

void Pool::refuse_offset(std::uint64_t off, std::string_view what) const {
  throw Error(Errc::corrupt, name_ + ": " + std::string(what) + " holds offset " +
                                 std::to_string(off) + ", outside the pool's " +
                                 std::to_string(size_) +
                                 " bytes or misaligned; the pool is "
                                 "damaged: restore it from a copy");
}

std::uint64_t* Pool::root_word() const {
  return &reinterpret_cast<PoolHeader*>(base_)->root;
}

void Pool::map_file(int fd, std::size_t size, bool fresh, bool cow) {
  // DAX first, so stores reach PM with no page cache in between; any other file falls back.
  // A copy-on-write pool is a private mapping: its stores stay in this process.
  cow_ = cow;
  void* p =
      cow ? MAP_FAILED
          : mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0);
  dax_ = p != MAP_FAILED;
  if (!dax_) p = mmap(nullptr, size, PROT_READ | PROT_WRITE, cow ? MAP_PRIVATE : MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    throw Error(Errc::io_error, "cannot map pool file '" + name_ + "': " + errno_text());
  base_ = static_cast<std::byte*>(p);
  size_ = size;
  if (mode() == Mode::sim) {
    // What the medium holds now.
    sim_ = std::make_unique<Simulator>(base_, size_, Buffer::copy_of({base_, size_}));
  }
  if (fresh) init_header(size);
  attach(fresh);
}

std::unique_ptr<Pool> Pool::create(const std::filesystem::path& path, std::size_t size) {
  size = checked_pool_size(size);
  std::unique_ptr<Pool> pool(new Pool);
  pool->name_ = path.string();
  require_room(path, size);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST && std::filesystem::is_directory(path))
      throw Error(Errc::already_exists, "pool path '" + pool->name_ +
                                            "' is a folder: give the path of a new file, " +
                                            "e.g. " + (path / "dptree.pool").string());
    if (errno == EEXIST)
      throw Error(Errc::already_exists, "pool file '" + pool->name_ +
                                            "' already exists: open it, or remove it first " +
                                            "if you mean to start over");
    throw Error(Errc::io_error, "cannot create pool file '" + pool->name_ + "': " + errno_text());
  }
  pool->fd_ = fd;
  try {
    if (flock(fd, LOCK_EX | LOCK_NB) != 0)
      throw Error(Errc::locked, "cannot lock new pool file '" + pool->name_ + "': " + errno_text());
    if (int e = posix_fallocate(fd, 0, static_cast<off_t>(size)); e != 0)
      throw Error(e == ENOSPC ? Errc::pool_full : Errc::io_error,
                  "cannot size pool file '" + pool->name_ + "' to " + std::to_string(size) +
                      " bytes: " + std::strerror(e) + ": free space or choose a smaller pool");
    pool->map_file(fd, size, true);
  } catch (...) {
    pool.reset();            // unmaps and closes
    ::unlink(path.c_str());  // we created this file: no user data is lost
    throw;
  }
  return pool;
}

std::unique_ptr<Pool> Pool::open(const std::filesystem::path& path, OpenMode mode) {
  std::unique_ptr<Pool> pool(new Pool);
  pool->name_ = path.string();
  const std::string what = "pool file '" + pool->name_ + "'";
  const bool cow = mode == OpenMode::copy_on_write;
  int fd = ::open(path.c_str(), (cow ? O_RDONLY : O_RDWR) | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      throw Error(Errc::not_found,
                  what + " does not exist: check the path, or create the pool " + "first");
    if (errno == EISDIR)
      throw Error(Errc::not_a_pool, what + " is a folder: give the path of a pool file");
    throw Error(Errc::io_error, "cannot open " + what + ": " + errno_text());
  }
  pool->fd_ = fd;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) throw Error(Errc::locked, lock_holder(path, fd));
    throw Error(Errc::io_error, "cannot lock " + what + ": " + errno_text());
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) throw Error(Errc::io_error, "cannot stat " + what + ": " + errno_text());
  if (S_ISDIR(st.st_mode))  // read-only opens of a folder succeed: no EISDIR above
    throw Error(Errc::not_a_pool, what + " is a folder: give the path of a pool file");
  if (!S_ISREG(st.st_mode))
    throw Error(Errc::not_a_pool, what + " is not a regular file: give the path of a pool file");
  auto file_size = static_cast<std::size_t>(st.st_size);
  alignas(PoolHeader) std::byte hdr[sizeof(PoolHeader)]{};
  ssize_t got = pread(fd, hdr, sizeof hdr, 0);
  if (got < 0) throw Error(Errc::io_error, "cannot read " + what + ": " + errno_text());
  validate_header_bytes(hdr, static_cast<std::size_t>(got), file_size, pool->name_);
  pool->map_file(fd, reinterpret_cast<PoolHeader*>(hdr)->pool_size, false, cow);
  return pool;
}

std::unique_ptr<Pool> Pool::open_or_create(const std::filesystem::path& path, std::size_t size) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return open(path);
  return create(path, size);
}

std::unique_ptr<Pool> Pool::create_in_memory(std::size_t size) {
  size = checked_pool_size(size, "in-memory pool size");
  require_memory(size);
  std::unique_ptr<Pool> pool(new Pool);
  pool->name_ = "<memory>";
  pool->memory_ = Buffer(size);
  pool->base_ = pool->memory_.data();
  pool->size_ = size;
  if (mode() == Mode::sim)
    pool->sim_ = std::make_unique<Simulator>(pool->base_, size, Buffer(size));
  pool->init_header(size);
  pool->attach(true);
  return pool;
}

std::unique_ptr<Pool> Pool::open_image(Image image, Simulator::Hook hook) {
  validate_header_bytes(image.bytes.data(), image.bytes.size(), image.bytes.size(), "<image>");
  std::size_t size = reinterpret_cast<const PoolHeader*>(image.bytes.data())->pool_size;
  std::unique_ptr<Pool> pool(new Pool);
  pool->name_ = "<image>";
  pool->size_ = size;
  if (image.bytes.size() != size) image.bytes = Buffer::copy_of({image.bytes.data(), size});
  if (mode() == Mode::sim) {
    // The image is the new pool's durable image; the working image starts as its copy.
    pool->memory_ = Buffer::copy_of({image.bytes.data(), size});
    pool->base_ = pool->memory_.data();
    pool->sim_ = std::make_unique<Simulator>(pool->base_, size, std::move(image.bytes));
    pool->sim_->set_hook(std::move(hook));
  } else {
    pool->memory_ = std::move(image.bytes);
    pool->base_ = pool->memory_.data();
  }
  pool->attach(false);
  return pool;
}

void Pool::save_image(const Image& image, const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error(errno == EEXIST ? Errc::already_exists : Errc::io_error,
                "cannot write image to '" + path.string() + "': " + errno_text());
  std::size_t done = 0;
  while (done < image.bytes.size()) {
    ssize_t n = ::write(fd, image.bytes.data() + done, image.bytes.size() - done);
    if (n <= 0) {
      ::close(fd);
      throw Error(Errc::io_error, "cannot write image to '" + path.string() + "': " + errno_text());
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

bool Pool::prefault() {
  if (cow_ || !base_) return false;
  return madvise(base_, size_, MADV_POPULATE_WRITE) == 0;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> Pool::changed_ranges() const {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  if (!cow_) return out;
  constexpr std::size_t kLine = 64, kStep = 1 << 20;
  std::vector<std::byte> file(kStep);
  for (std::size_t at = 0; at < size_; at += kStep) {
    std::size_t n = std::min(kStep, size_ - at);
    ssize_t got = pread(fd_, file.data(), n, static_cast<off_t>(at));
    if (got != static_cast<ssize_t>(n))
      throw Error(Errc::io_error, "cannot read pool file '" + name_ + "': " + errno_text());
    for (std::size_t l = 0; l < n; l += kLine) {
      if (std::memcmp(file.data() + l, base_ + at + l, std::min(kLine, n - l)) == 0) continue;
      if (!out.empty() && out.back().second == at + l)
        out.back().second += kLine;
      else
        out.emplace_back(at + l, at + l + kLine);
    }
  }
  return out;
}

Pool::~Pool() {
  // Drain flushes still in flight (free() leaves its last flush unfenced). In `sim` mode the
  // durable image dies with the pool, so a fence there would only be a spurious event.
  if (base_ && (mode() == Mode::pmem || mode() == Mode::eadr)) fence();
  alloc_.reset();
  sim_.reset();
  if (base_ && fd_ >= 0) munmap(base_, size_);  // in-memory pools free memory_
  if (fd_ >= 0) ::close(fd_);                   // releases the flock
}

}  // namespace dptree::pm
