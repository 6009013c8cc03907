// Key distributions and the key space of a benchmark run.
//
// Records are named by ids: the preload inserts ids 0 .. records-1, and insert number i of
// thread t (of T) adds id records + i*T + t, so threads never insert the same key and each
// thread's sequence depends only on the seed and t. Runs sharing one preload start their
// inserts past the ids earlier runs used (KeySpaceParams::first_new_id). An id becomes a key
// through a bijective 64-bit mixer (random 64-bit keys, as in the DPTree paper), or unchanged for
// `sequential`.
//
// A thread draws the keys it reads, updates, removes or scans from the ids it knows to exist:
// the preloaded ones and its own inserts (its "visible" ids, ordered oldest first):
//   uniform     every visible id alike
//   zipfian     the i-th oldest id with probability ~ 1/(i+1)^theta (YCSB; hot ids are the
//               oldest, which the key mixer scatters over the key space)
//   latest      the i-th newest id with probability ~ 1/(i+1)^theta (YCSB workload D)
//   sequential  visible ids in ascending order from a per-thread starting point, wrapping
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "bench/random.h"

namespace dptree::bench {

enum class Distribution : std::uint8_t { uniform, zipfian, sequential, latest };

std::string_view to_string(Distribution d);
// Parses a distribution name; throws dptree::Error naming the accepted values.
Distribution parse_distribution(std::string_view s);

// Zipfian ranks in [0, n) after Gray et al., "Quickly generating billion-record synthetic
// databases" (SIGMOD 1994), as YCSB does: rank 0 is the most popular. 0 <= theta < 1.
class Zipfian {
 public:
  // sum over i = 1..n of 1 / i^theta
  static double zeta(std::uint64_t n, double theta);
  // `zetan` may pass zeta(n, theta) when already known (it costs n pow() calls).
  Zipfian(std::uint64_t n, double theta, double zetan = -1);
  std::uint64_t next(Rng& rng) const;
  // Adds items n .. new_n-1 (incremental: one pow() per new item).
  void grow(std::uint64_t new_n);
  std::uint64_t items() const { return n_; }
  double zetan() const { return zetan_; }

 private:
  void update_eta();
  std::uint64_t n_;
  double theta_, alpha_, zetan_, zeta2_, eta_ = 0;
};

struct KeySpaceParams {
  std::uint64_t records = 0;  // preloaded ids 0 .. records-1
  unsigned threads = 1;
  Distribution distribution = Distribution::uniform;
  double theta = 0.99;
  double zeta_records = -1;  // zeta(records, theta) if known (shared by all threads)
  // The first id this run's inserts may use (0: `records`). Runs that share one preload
  // (--load-once) start past the ids earlier runs inserted, so inserts stay new keys.
  std::uint64_t first_new_id = 0;
};

// The key generator of one thread.
class KeyGenerator {
 public:
  KeyGenerator(const KeySpaceParams& p, unsigned thread);

  // The key of an id.
  static std::uint64_t key_of(std::uint64_t id, Distribution d) {
    return d == Distribution::sequential ? id : mix64(id);
  }
  std::uint64_t key(std::uint64_t id) const { return key_of(id, p_.distribution); }

  // An id this thread knows to exist (or to have existed, if removed since), by distribution.
  std::uint64_t existing_id(Rng& rng);
  // A fresh id for an insert.
  std::uint64_t new_id();
  std::uint64_t visible() const { return p_.records + inserted_; }
  std::uint64_t first_new_id() const { return p_.first_new_id ? p_.first_new_id : p_.records; }
  // The id of the i-th oldest visible id.
  std::uint64_t visible_id(std::uint64_t i) const {
    return i < p_.records ? i : first_new_id() + (i - p_.records) * p_.threads + thread_;
  }

 private:
  KeySpaceParams p_;
  unsigned thread_;
  std::uint64_t inserted_ = 0;
  std::uint64_t cursor_ = 0;  // sequential
  Zipfian zipf_;
};

}  // namespace dptree::bench
