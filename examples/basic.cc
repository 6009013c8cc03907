// DPTree in a few lines: create a pool file, write, scan, close, reopen (which recovers the
// tree, Algorithm 4) and read back. Build against the installed package (CMakeLists.txt).
//   usage: basic [POOL_FILE]   (default: a file under /dev/shm, removed at the end)
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "dptree/dptree.h"
#include "dptree/pm/pool.h"

int main(int argc, char** argv) {
  std::filesystem::path path = argc > 1 ? std::filesystem::path(argv[1])
                                        : dptree::pm::default_pool_dir() / "dptree-example.pool";
  std::filesystem::remove(path);
  {
    auto pool = dptree::pm::Pool::create(path, 16 << 20);
    auto tree = dptree::DPTree<>::create(*pool);
    for (dptree::Key k = 1; k <= 1000; ++k) tree->upsert(k * 10, k);
    tree->remove(20);
    std::vector<dptree::KV> out;
    tree->scan(5, 3, out);
    for (auto [k, v] : out)
      std::printf("scan: %llu -> %llu\n", (unsigned long long)k, (unsigned long long)v);
  }  // closed: the tree and the pool go away, the file stays
  auto pool = dptree::pm::Pool::open(path);
  auto tree = dptree::DPTree<>::open(*pool);  // recovers
  bool ok = tree->size() == 999 && !tree->lookup(20) && tree->lookup(10000) == 1000u;
  auto report = tree->check();
  std::printf("reopened: %zu records, lookup(10000) = %llu, check %s\n", tree->size(),
              (unsigned long long)tree->lookup(10000).value_or(0), report.ok ? "ok" : "FAILED");
  if (argc <= 1) std::filesystem::remove(path);
  return ok && report.ok ? 0 : 1;
}
