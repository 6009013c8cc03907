// A k-way merge of sorted runs on a tree of losers (Knuth, The Art of Computer Programming,
// vol. 3, §5.4.1, "replacement selection"): each entry taken costs log2(k) compares, one per
// level on the taken run's path, where a binary heap's pop and push cost about twice as many.
// The concurrent string form's buffer merges its shards' runs with it (string_buffer.cc).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <utility>
#include <vector>

namespace dptree::cdp {

// Runs are [first, last) ranges of T, each sorted by `less`; keys equal across runs come out in
// no set order (the string buffer's shards hold disjoint keys).
template <class T, class Less>
class LoserTree {
 public:
  using Run = std::pair<const T*, const T*>;

  LoserTree(std::vector<Run> runs, Less less) : runs_(std::move(runs)), less_(less) {
    k_ = std::bit_ceil(std::max<std::size_t>(runs_.size(), 1));
    runs_.resize(k_, Run{nullptr, nullptr});
    loser_.assign(k_, 0);
    winner_ = play(1);
  }
  // Whether every run is taken.
  bool empty() const { return done(winner_); }
  // The smallest entry not taken yet (not empty()).
  const T& top() const { return *runs_[winner_].first; }
  // Takes top(): its run moves on and replays its path to the root against the losers there.
  void pop() {
    std::size_t w = winner_;
    ++runs_[w].first;
    for (std::size_t n = (w + k_) / 2; n > 0; n /= 2)
      if (beats(loser_[n], w)) std::swap(loser_[n], w);
    winner_ = w;
  }

 private:
  bool done(std::size_t r) const { return runs_[r].first == runs_[r].second; }
  // Whether run a's next entry comes first (a taken run's never does).
  bool beats(std::size_t a, std::size_t b) const {
    return !done(a) && (done(b) || less_(*runs_[a].first, *runs_[b].first));
  }
  // The winner below node n (nodes k_ .. 2k_ - 1 are the runs), each node's loser kept.
  std::size_t play(std::size_t n) {
    if (n >= k_) return n - k_;
    std::size_t a = play(2 * n), b = play(2 * n + 1);
    if (beats(b, a)) std::swap(a, b);
    loser_[n] = b;
    return a;
  }

  std::vector<Run> runs_;
  Less less_;
  std::size_t k_ = 1, winner_ = 0;
  std::vector<std::size_t> loser_;  // loser_[n]: the run that lost at node n (1 .. k_ - 1)
};

}  // namespace dptree::cdp
