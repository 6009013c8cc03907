// A tree library for PiBench that stands between PiBench and libdptree_pibench.so: it loads
// the wrapper named by PIBENCH_SHIM_TARGET, forwards every call to it, and checks what
// PiBench cannot see in its own output, namely that each scan returned the records it should.
// The test driver (run_pibench.py) runs the scan mixes through it.
//
// PIBENCH_SHIM_FAULT plants a wrapper bug, so the test can show that it notices one:
//   vtable      the tree PiBench gets has one more virtual function before find (the layout
//               of a later PiBench variant), so every call lands one slot off
//   short_scan  scans hand PiBench half of the records the wrapper found
// It also sorts the finds and updates that found nothing by the record id of their key (PiBench
// makes the key of id i as i times an odd constant, so the id is the key times its inverse):
// PiBench draws them from ids 1..N+I, where its load inserted ids 0..N-1 (N records, from
// PIBENCH_SHIM_RECORDS) and I is the run's share of inserts, so a key of id N or above may not
// be there yet; a key of id below N must always be found.
// Summary lines at exit, on stdout:
//   pibench shim: S scans checked, W wrong
//   pibench shim: M finds or updates missed, L of loaded records: HEX HEX ...
#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "pibench/pibench_api.h"

namespace {

using CreateTree = tree_api* (*)(const tree_options_t&);

std::atomic<std::uint64_t> g_scans{0};
std::atomic<std::uint64_t> g_wrong{0};
std::atomic<std::uint64_t> g_missed{0};
std::atomic<std::uint64_t> g_missed_loaded{0};
std::mutex g_missed_mu;
std::set<std::string> g_missed_keys;  // loaded ones, in hex, at most kMissedKeys of them
constexpr std::size_t kMissedKeys = 16;
std::uint64_t g_records = 0;  // PIBENCH_SHIM_RECORDS: PiBench's -n

// Printed even when PiBench exits without deleting the tree (it does after a failed check).
struct Summary {
  ~Summary() {
    std::printf("pibench shim: %llu scans checked, %llu wrong\n",
                static_cast<unsigned long long>(g_scans.load()),
                static_cast<unsigned long long>(g_wrong.load()));
    std::printf("pibench shim: %llu finds or updates missed, %llu of loaded records:",
                static_cast<unsigned long long>(g_missed.load()),
                static_cast<unsigned long long>(g_missed_loaded.load()));
    for (const auto& k : g_missed_keys) std::printf(" %s", k.c_str());
    std::printf("\n");
    std::fflush(stdout);
  }
} g_summary;

// The record id PiBench made a key from: its last 8 bytes (a longer key has zeros before
// them) are id * 0x9e3779b97f4a7bb9, little-endian; a key of fewer bytes cannot be inverted
// and counts as not loaded.
std::uint64_t record_id(const char* key, std::size_t n) {
  if (n < 8) return ~std::uint64_t{0};
  std::uint64_t h = 0;
  std::memcpy(&h, key + n - 8, 8);
  return h * 0x693622400cab1a89ull;  // the constant's inverse modulo 2^64
}

// A find or an update that did not find its key; a key of a loaded record is noted (its bytes
// as PiBench passed them, in hex).
bool note_miss(bool found, const char* key, std::size_t n) {
  if (found) return true;
  g_missed.fetch_add(1, std::memory_order_relaxed);
  if (record_id(key, n) >= g_records) return false;
  g_missed_loaded.fetch_add(1, std::memory_order_relaxed);
  std::string hex;
  for (std::size_t i = 0; i < n; ++i) {
    char b[3];
    std::snprintf(b, sizeof b, "%02x", static_cast<unsigned char>(key[i]));
    hex += b;
  }
  std::lock_guard g(g_missed_mu);
  if (g_missed_keys.size() < kMissedKeys) g_missed_keys.insert(hex);
  return false;
}

void wrong(const std::string& what) {
  if (g_wrong.fetch_add(1) < 5)
    std::fprintf(stderr, "pibench shim: wrong scan: %s\n", what.c_str());
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// Orders two keys as the index does: integers (keys of up to 8 bytes, little-endian) by
// value, longer keys bytewise.
int compare_keys(const char* a, const char* b, std::size_t n) {
  if (n > 8) return std::memcmp(a, b, n);
  std::uint64_t x = 0, y = 0;
  std::memcpy(&x, a, n);
  std::memcpy(&y, b, n);
  return x < y ? -1 : x > y ? 1 : 0;
}

// The smallest key above `k` of the same size (false when k is the largest).
bool next_key(std::string& k) {
  if (k.size() > 8) {  // bytewise order: the next string of this length
    for (std::size_t i = k.size(); i-- > 0;) {
      if (static_cast<unsigned char>(k[i]) != 0xff) {
        ++k[i];
        return true;
      }
      k[i] = 0;
    }
    return false;
  }
  for (std::size_t i = 0; i < k.size(); ++i) {  // little-endian integer + 1
    if (static_cast<unsigned char>(k[i]) != 0xff) {
      ++k[i];
      return true;
    }
    k[i] = 0;
  }
  return false;
}

class Audit final : public tree_api {
 public:
  Audit(tree_api* inner, const tree_options_t& opt, bool short_scan)
      : inner_(inner),
        ks_(opt.key_size),
        vs_(opt.value_size < 8 ? opt.value_size : 8),
        single_(opt.num_threads <= 1),
        short_scan_(short_scan) {}
  ~Audit() override { delete inner_; }

  bool find(const char* k, size_t n, char* out) override {
    return note_miss(inner_->find(k, n, out), k, n);
  }
  bool insert(const char* k, size_t n, const char* v, size_t vn) override {
    return inner_->insert(k, n, v, vn);
  }
  bool update(const char* k, size_t n, const char* v, size_t vn) override {
    return note_miss(inner_->update(k, n, v, vn), k, n);
  }
  bool remove(const char* k, size_t n) override { return inner_->remove(k, n); }
  int scan(const char* k, size_t n, int want, char*& out) override {
    int got = inner_->scan(k, n, want, out);
    if (short_scan_ && got > 1) got /= 2;
    check_scan(k, want, got, out);
    return got;
  }

 private:
  // Records in ascending order from the start key on, and as many as asked for unless the
  // index holds no more: a short scan is followed by one from just past its last key, which
  // must find nothing. With several threads an insert may land there in between, so there it
  // may find up to kRaceSlack records (a scan cut short leaves dozens).
  void check_scan(const char* start, int want, int got, const char* recs) {
    g_scans.fetch_add(1, std::memory_order_relaxed);
    const std::size_t rec = ks_ + vs_;
    if (got < 0 || got > want)
      return wrong("returned " + std::to_string(got) + " of " + std::to_string(want));
    for (int i = 0; i < got; ++i) {
      const char* key = recs + i * rec;
      if (compare_keys(key, i == 0 ? start : key - rec, ks_) < (i == 0 ? 0 : 1))
        return wrong("record " + std::to_string(i) + " out of order");
    }
    if (got == want) return;
    std::string past =
        got == 0 ? std::string(start, ks_) : std::string(recs + (got - 1) * rec, ks_);
    if (got > 0 && !next_key(past)) return;
    char* more = nullptr;
    const int beyond = inner_->scan(past.data(), ks_, want - got, more);
    if (beyond > (single_ ? 0 : kRaceSlack))
      wrong("returned " + std::to_string(got) + " of " + std::to_string(want) + " records while " +
            std::to_string(beyond) + " more follow");
  }

  static constexpr int kRaceSlack = 4;

  tree_api* inner_;
  std::size_t ks_, vs_;
  bool single_, short_scan_;
};

// The broken wrapper: one more virtual function ahead of tree_api's five, as the later PiBench
// variant declares bulk_load, so PiBench's call of slot N reaches function N-1.
class ShiftedVtable {
 public:
  explicit ShiftedVtable(tree_api* inner) : inner_(inner) {}
  virtual ~ShiftedVtable() { delete inner_; }
  virtual bool bulk_load(const char*, size_t, char*) { return false; }
  virtual bool find(const char* k, size_t n, char* out) { return inner_->find(k, n, out); }
  virtual bool insert(const char* k, size_t n, const char* v, size_t vn) {
    return inner_->insert(k, n, v, vn);
  }
  virtual bool update(const char* k, size_t n, const char* v, size_t vn) {
    return inner_->update(k, n, v, vn);
  }
  virtual bool remove(const char* k, size_t n) { return inner_->remove(k, n); }
  virtual int scan(const char* k, size_t n, int want, char*& out) {
    return inner_->scan(k, n, want, out);
  }

 private:
  tree_api* inner_;
};

}  // namespace

extern "C" tree_api* create_tree(const tree_options_t& opt) {
  const std::string target = env("PIBENCH_SHIM_TARGET"), fault = env("PIBENCH_SHIM_FAULT");
  if (fault != "" && fault != "vtable" && fault != "short_scan") {
    std::fprintf(stderr, "pibench shim: PIBENCH_SHIM_FAULT='%s': use vtable or short_scan\n",
                 fault.c_str());
    return nullptr;
  }
  void* lib = dlopen(target.c_str(), RTLD_NOW | RTLD_LOCAL);
  auto* create = lib ? reinterpret_cast<CreateTree>(dlsym(lib, "create_tree")) : nullptr;
  if (!create) {
    std::fprintf(stderr,
                 "pibench shim: cannot load create_tree from PIBENCH_SHIM_TARGET='%s': %s\n",
                 target.c_str(), dlerror());
    return nullptr;
  }
  g_records = std::strtoull(env("PIBENCH_SHIM_RECORDS").c_str(), nullptr, 10);
  tree_api* inner = create(opt);
  if (!inner) return nullptr;
  if (fault == "vtable") return reinterpret_cast<tree_api*>(new ShiftedVtable(inner));
  return new Audit(inner, opt, fault == "short_scan");
}
