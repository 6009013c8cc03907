// What keeps a pool from being misused: size limits, free space, one index per Pool object,
// and naming who holds a locked pool file.
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "dptree/error.h"
#include "dptree/pm/pool.h"

namespace dptree::pm {

std::uint64_t free_bytes(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::is_directory(path, ec) ? path : path.parent_path();
  if (dir.empty()) dir = ".";
  struct statvfs v {};
  if (statvfs(dir.c_str(), &v) != 0)
    throw Error(errno == ENOENT ? Errc::not_found : Errc::io_error,
                "cannot read the free space of folder '" + dir.string() +
                    "': " + std::strerror(errno) + ": check that the folder exists");
  return static_cast<std::uint64_t>(v.f_bavail) * v.f_frsize;
}

std::size_t checked_pool_size(std::size_t size, std::string_view what) {
  if (size < kMinPoolSize || size > kMaxPoolSize)
    throw Error(Errc::invalid_argument, std::string(what) + " " + std::to_string(size) +
                                            " is out of range: use " +
                                            std::to_string(kMinPoolSize) + " bytes (256 KiB) to " +
                                            std::to_string(kMaxPoolSize) + " bytes (64 TiB)");
  return (size + 4095) / 4096 * 4096;
}

PoolClaim::PoolClaim(Pool& pool, std::string_view who) : pool_(pool) {
  std::lock_guard g(pool.claim_mu_);
  if (!pool.holder_.empty())
    throw Error(Errc::in_use, "pool '" + pool.name() + "' is already held by a live " +
                                  pool.holder_ + " in this process: use that index, or " +
                                  "destroy it before you create or open another on this pool");
  pool.holder_ = who;
}

PoolClaim::~PoolClaim() {
  std::lock_guard g(pool_.claim_mu_);
  pool_.holder_.clear();
}

namespace {

// The pid of the flock holder of the file behind `fd`, from /proc/locks; 0 when not found.
long flock_holder_pid(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return 0;
  std::ostringstream id;
  id << std::hex;
  id.width(2);
  id.fill('0');
  id << major(st.st_dev) << ':';
  id.width(2);
  id << minor(st.st_dev) << ':' << std::dec << st.st_ino;
  std::ifstream locks("/proc/locks");
  for (std::string line; std::getline(locks, line);) {
    std::istringstream f(line);
    std::string num, kind, mode, rw, dev;
    long pid = 0;
    if (f >> num >> kind >> mode >> rw >> pid >> dev && kind == "FLOCK" && dev == id.str())
      return pid;
  }
  return 0;
}

}  // namespace

std::string lock_holder(const std::filesystem::path& path, int fd) {
  const std::string what = "pool file '" + path.string() + "'";
  const long pid = flock_holder_pid(fd);
  if (pid == static_cast<long>(getpid()))
    return what + " is already open through another Pool in this process: share that Pool " +
           "(one Pool per file), or destroy it first";
  return what + " is held by another process" +
         (pid > 0 ? " (pid " + std::to_string(pid) + ")" : std::string()) +
         ": stop that process or wait until it closes the pool";
}

}  // namespace dptree::pm
