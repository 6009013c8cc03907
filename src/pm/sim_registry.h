// Routes pm::flush / pm::fence in `sim` mode to the simulators of the pools they touch.
// Internal to src/pm.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dptree::pm {

class Simulator;

std::uint32_t this_thread_id();  // small dense id per thread, from 0
void sim_registry_add(Simulator* s);
void sim_registry_remove(Simulator* s);
// A flush goes to the pool that contains it (none: only counted). `caller` is the code that
// flushed, named when the flush finds a raw store.
void sim_registry_flush(const std::byte* addr, std::size_t len, const void* caller);
// A fence goes to every pool this thread flushed to since its last fence, or, when there is
// none, to the pool it flushed to last (a fence is a persistence event of that pool).
void sim_registry_fence();

}  // namespace dptree::pm
