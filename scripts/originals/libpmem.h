// Stands in for PMDK's libpmem (not a Debian package here) in the original LB+-Tree
// (scripts/originals/compare): pmem_map_file is a shared mapping of the file, as PMDK makes on
// a file system without DAX; the pool file lives in /dev/shm like ours.
#pragma once
#include <fcntl.h>
#include <stddef.h>
#include <sys/mman.h>
#include <unistd.h>

#define PMEM_FILE_CREATE 1

static inline void* pmem_map_file(const char* path, size_t len, int flags, int mode,
                                  size_t* mapped_lenp, int* is_pmemp) {
  (void)flags;
  int fd = open(path, O_RDWR | O_CREAT, mode);
  if (fd < 0) return NULL;
  if (ftruncate(fd, (off_t)len) != 0) {
    close(fd);
    return NULL;
  }
  void* p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return NULL;
  if (mapped_lenp) *mapped_lenp = len;
  if (is_pmemp) *is_pmemp = 0;
  return p;
}
static inline int pmem_unmap(void* addr, size_t len) {
  return munmap(addr, len);
}
