// A resumable piece of work (a C++20 coroutine): the merge written once, in order, and run
// either to its end or a step at a time by the writers between their writes (the option
// merge_steps, docs/cdptree.md "A merge in steps"). The body marks each step's end with
// `co_yield Steps::kPause`; whatever escapes it is rethrown by the step() that ran into it.
#pragma once

#include <coroutine>
#include <exception>
#include <utility>

namespace dptree::cdp {

class Steps {
 public:
  enum Pause { kPause };

  struct promise_type {
    std::exception_ptr err;
    Steps get_return_object() { return Steps(Handle::from_promise(*this)); }
    std::suspend_always initial_suspend() noexcept { return {}; }  // nothing runs until step()
    std::suspend_always final_suspend() noexcept { return {}; }
    std::suspend_always yield_value(Pause) noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { err = std::current_exception(); }
  };

  Steps() = default;
  Steps(Steps&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  Steps& operator=(Steps&& o) noexcept {
    if (this != &o) {
      destroy();
      h_ = std::exchange(o.h_, {});
    }
    return *this;
  }
  Steps(const Steps&) = delete;
  Steps& operator=(const Steps&) = delete;
  ~Steps() { destroy(); }

  bool done() const { return !h_ || h_.done(); }
  // Runs the body to its next pause; false once it has ended (then or before). Rethrows what
  // escaped the body, once.
  bool step() {
    if (done()) return false;
    h_.resume();
    if (h_.done() && h_.promise().err) std::rethrow_exception(std::exchange(h_.promise().err, {}));
    return !h_.done();
  }
  // Runs the body to its end.
  void finish() {
    while (step()) {
    }
  }

 private:
  using Handle = std::coroutine_handle<promise_type>;
  explicit Steps(Handle h) : h_(h) {}
  void destroy() {
    if (h_) h_.destroy();
    h_ = {};
  }
  Handle h_;
};

}  // namespace dptree::cdp
