// Workloads (workload.h): the named mixes, custom mixes and their checks, and the stream of
// operations a worker draws.
#include "bench/workload.h"

#include <cctype>
#include <cmath>
#include <string>

#include "dptree/error.h"
#include "pm/named.h"

namespace dptree::bench {

constexpr Named<OpKind> kOpNames[] = {{OpKind::read, "read"},     {OpKind::insert, "insert"},
                                      {OpKind::update, "update"}, {OpKind::remove, "remove"},
                                      {OpKind::scan, "scan"},     {OpKind::rmw, "rmw"}};

std::string_view to_string(OpKind k) {
  return name_of(kOpNames, k);
}

double Mix::of(OpKind k) const {
  // The shares in OpKind's order.
  static constexpr double Mix::*kShares[kOpKinds] = {&Mix::read,   &Mix::insert, &Mix::update,
                                                     &Mix::remove, &Mix::scan,   &Mix::rmw};
  const auto i = static_cast<std::size_t>(k);
  return i < kOpKinds ? this->*kShares[i] : 0;
}

void Mix::validate() const {
  for (std::size_t i = 0; i < kOpKinds; ++i) {
    const double v = of(static_cast<OpKind>(i));
    if (!(v >= 0 && v <= 100))
      throw Error(Errc::invalid_argument,
                  "operation share " + std::string(to_string(static_cast<OpKind>(i))) + "=" +
                      std::to_string(v) + "% is out of range: give a percentage in [0, 100]");
  }
  if (!(absent_reads >= 0 && absent_reads <= 100))
    throw Error(Errc::invalid_argument, "absent lookups share " + std::to_string(absent_reads) +
                                            "% is out of range: give a percentage in [0, 100]");
  if (std::fabs(total() - 100) > 1e-6)
    throw Error(Errc::invalid_argument,
                "operation percentages sum to " + std::to_string(total()) +
                    "%: --read, --insert, --update, --remove and --scan must sum to 100");
}

const std::vector<Workload>& named_workloads() {
  using D = Distribution;
  static const std::vector<Workload> w = {
      {"insert_only", "DPTree §4.4: 100% inserts of new keys", {.insert = 100}, D::uniform},
      {"read_only", "DPTree §4.4: 100% lookups", {.read = 100}, D::uniform},
      {"read_absent",
       "DPTree §4.2 (Fig. 10): 100% lookups of keys never inserted",
       {.read = 100, .absent_reads = 100},
       D::uniform},
      {"read_update",
       "DPTree §4.4: 50% lookups, 50% updates",
       {.read = 50, .update = 50},
       D::uniform},
      {"scan_insert", "DPTree §4.4: 95% scans, 5% inserts", {.insert = 5, .scan = 95}, D::uniform},
      {"mixed",
       "DPTree §4.4: 50% lookups, 20% updates, 10% scans, 20% inserts",
       {.read = 50, .insert = 20, .update = 20, .scan = 10},
       D::uniform},
      {"ycsb_a", "YCSB A: 50% reads, 50% updates, zipfian", {.read = 50, .update = 50}, D::zipfian},
      {"ycsb_b", "YCSB B: 95% reads, 5% updates, zipfian", {.read = 95, .update = 5}, D::zipfian},
      {"ycsb_c", "YCSB C: 100% reads, zipfian", {.read = 100}, D::zipfian},
      {"ycsb_d", "YCSB D: 95% reads, 5% inserts, latest", {.read = 95, .insert = 5}, D::latest},
      {"ycsb_e",
       "YCSB E: 95% scans (length uniform 1-100), 5% inserts, zipfian",
       {.insert = 5, .scan = 95},
       D::zipfian,
       true},
      {"ycsb_f",
       "YCSB F: 50% reads, 50% read-modify-writes, zipfian",
       {.read = 50, .rmw = 50},
       D::zipfian},
  };
  return w;
}

namespace {
std::string normalise(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != '_' && c != '-') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}
}  // namespace

const Workload& find_workload(std::string_view name) {
  std::string known;
  for (const auto& w : named_workloads()) {
    if (normalise(w.name) == normalise(name)) return w;
    known += (known.empty() ? "" : ", ") + w.name;
  }
  throw Error(Errc::invalid_argument,
              "unknown workload '" + std::string(name) + "': use one of " + known +
                  ", or give a custom mix with --read/--insert/--update/--remove/--scan");
}

Workload custom_workload(const Mix& mix) {
  mix.validate();
  return {"custom", "custom mix", mix, Distribution::uniform};
}

OpStream::OpStream(const StreamParams& p, unsigned thread)
    : p_(p), rng_(stream_seed(p.seed, thread + 1)), keys_(p.keys, thread) {
  double c = 0;
  for (std::size_t i = 0; i < kOpKinds; ++i) {
    c += p_.mix.of(static_cast<OpKind>(i));
    cut_[i] = c;
  }
}

Value OpStream::value() {
  const Value v = rng_.next();
  return p_.max_value == ~Value{0} ? v : v % (p_.max_value + 1);
}

Op OpStream::next() {
  const double u = rng_.unit() * cut_[kOpKinds - 1];
  std::size_t k = 0;
  while (k + 1 < kOpKinds && u >= cut_[k]) ++k;
  Op op;
  op.kind = static_cast<OpKind>(k);
  if (op.kind == OpKind::insert)
    op.key = keys_.key(keys_.new_id());
  else if (op.kind == OpKind::read && p_.mix.absent_reads > 0 &&
           (p_.mix.absent_reads >= 100 || rng_.unit() * 100 < p_.mix.absent_reads))
    op.key = keys_.key(kAbsentIdBase | rng_.next());
  else
    op.key = keys_.key(keys_.existing_id(rng_));
  if (op.kind == OpKind::insert || op.kind == OpKind::update || op.kind == OpKind::rmw)
    op.value = value();
  if (op.kind == OpKind::scan)
    op.length = p_.scan.min == p_.scan.max
                    ? p_.scan.min
                    : p_.scan.min + static_cast<std::uint32_t>(
                                        rng_.below(std::uint64_t{p_.scan.max} - p_.scan.min + 1));
  return op;
}

Value preload_value(std::uint64_t seed, std::uint64_t id, Value max_value) {
  const Value v = mix64(seed ^ mix64(id));
  return max_value == ~Value{0} ? v : v % (max_value + 1);
}

}  // namespace dptree::bench
