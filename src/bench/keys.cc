// Key distributions (keys.h): uniform and Zipfian draws over the ids of a run's records, and
// the ids that new inserts take.
#include "bench/keys.h"

#include <cmath>

#include "dptree/error.h"
#include "pm/named.h"

namespace dptree::bench {

constexpr Named<Distribution> kDistributions[] = {{Distribution::uniform, "uniform"},
                                                  {Distribution::zipfian, "zipfian"},
                                                  {Distribution::sequential, "sequential"},
                                                  {Distribution::latest, "latest"}};

std::string_view to_string(Distribution d) {
  return name_of(kDistributions, d);
}

Distribution parse_distribution(std::string_view s) {
  return parse_named(kDistributions, s, "key distribution");
}

double Zipfian::zeta(std::uint64_t n, double theta) {
  double z = 0;
  for (std::uint64_t i = 1; i <= n; ++i) z += 1.0 / std::pow(static_cast<double>(i), theta);
  return z;
}

Zipfian::Zipfian(std::uint64_t n, double theta, double zetan)
    : n_(n), theta_(theta), alpha_(1.0 / (1.0 - theta)), zetan_(zetan), zeta2_(zeta(2, theta)) {
  if (!(theta >= 0 && theta < 1))
    throw Error(Errc::invalid_argument, "zipfian theta " + std::to_string(theta) +
                                            " is out of range: use 0 <= theta < 1 (YCSB: 0.99)");
  if (zetan_ < 0) zetan_ = zeta(n, theta);
  update_eta();
}

void Zipfian::update_eta() {
  const double n = static_cast<double>(n_);
  eta_ = n_ <= 2 ? 0 : (1 - std::pow(2.0 / n, 1 - theta_)) / (1 - zeta2_ / zetan_);
}

void Zipfian::grow(std::uint64_t new_n) {
  if (new_n <= n_) return;
  for (std::uint64_t i = n_ + 1; i <= new_n; ++i)
    zetan_ += 1.0 / std::pow(static_cast<double>(i), theta_);
  n_ = new_n;
  update_eta();
}

std::uint64_t Zipfian::next(Rng& rng) const {
  if (n_ <= 1) return 0;
  const double u = rng.unit();
  const double uz = u * zetan_;
  if (uz < 1.0) return 0;
  if (uz < 1.0 + std::pow(0.5, theta_)) return 1;
  const auto r =
      static_cast<std::uint64_t>(static_cast<double>(n_) * std::pow(eta_ * u - eta_ + 1, alpha_));
  return r < n_ ? r : n_ - 1;
}

KeyGenerator::KeyGenerator(const KeySpaceParams& p, unsigned thread)
    : p_(p),
      thread_(thread),
      // Only the skewed distributions need the (costly) zeta; others get a trivial one.
      zipf_(p.distribution == Distribution::zipfian || p.distribution == Distribution::latest
                ? p.records
                : 1,
            p.theta,
            p.distribution == Distribution::zipfian || p.distribution == Distribution::latest
                ? p.zeta_records
                : 1.0) {
  if (p_.threads == 0) throw Error(Errc::invalid_argument, "a benchmark needs at least one thread");
  cursor_ = p_.records / p_.threads * thread;
}

std::uint64_t KeyGenerator::new_id() {
  return first_new_id() + (inserted_++) * p_.threads + thread_;
}

std::uint64_t KeyGenerator::existing_id(Rng& rng) {
  const std::uint64_t n = visible();
  if (n == 0) return 0;  // nothing exists yet: id 0 (absent) keeps the op a plain miss
  switch (p_.distribution) {
    case Distribution::uniform:
      return visible_id(rng.below(n));
    case Distribution::sequential: {
      if (cursor_ >= n) cursor_ = 0;
      return visible_id(cursor_++);
    }
    case Distribution::zipfian:
      zipf_.grow(n);
      return visible_id(zipf_.next(rng));
    case Distribution::latest:
      zipf_.grow(n);
      return visible_id(n - 1 - zipf_.next(rng));
  }
  return 0;
}

}  // namespace dptree::bench
