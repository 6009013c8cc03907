// The asymmetric fence of the sync words (sync.h), through Linux membarrier.
#include "cdptree/sync.h"

#include <exception>

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace dptree::cdp {

namespace {

long membarrier(int cmd) {
  return syscall(SYS_membarrier, cmd, 0, 0);
}

// The private expedited command (Linux 4.14) interrupts only the CPUs that run this process's
// threads. A kernel without it, or a sandbox that refuses the call, leaves the guards their
// locked stores.
bool register_membarrier() {
  const long cmds = membarrier(MEMBARRIER_CMD_QUERY);
  if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) return false;
  return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

}  // namespace

bool asymmetric_fences() {
  static const bool on = register_membarrier();
  return on;
}

void heavy_fence() {
  // The caller's own store and loads are sequentially consistent, which orders them; the
  // guards' side needs the membarrier. Registered before any guard used the plain store, so it
  // cannot fail; if it did, a scan could miss a reader and free what it reads: stop instead.
  if (asymmetric_fences() && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) std::terminate();
}

}  // namespace dptree::cdp
