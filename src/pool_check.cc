// check_pool (dptree/pool_check.h): the registry's persistent indexes asked in turn.
#include "dptree/pool_check.h"

#include <memory>
#include <type_traits>

#include "dptree/error.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"

namespace dptree {

namespace {

// One persistent index in one key form: false when its factory refuses the pool as another
// index's; any other refusal is the pool's problem and propagates.
template <class Create>
bool check_with(pm::Pool& pool, const IndexInfo& info, const Create& create, bool strings,
                PoolCheck& out) {
  if (!create) return false;
  IndexConfig c;
  c.pool = &pool;
  std::unique_ptr<std::remove_reference_t<decltype(*create(c))>> idx;
  try {
    idx = create(c);
  } catch (const Error& e) {
    if (e.code() == Errc::wrong_index) return false;
    throw;
  }
  out.index = info.name;
  out.strings = strings;
  out.report = idx->check();
  out.stats = idx->stats();
  return true;
}

}  // namespace

PoolCheck check_pool(pm::Pool& pool) {
  if (*pool.root_word() == 0)
    throw Error(Errc::wrong_index,
                "pool '" + pool.name() +
                    "' holds no index: its root word is empty (a pool made but never given an "
                    "index); nothing to check");
  PoolCheck out;
  for (const auto& info : registered_indexes()) {
    if (!info.persistent) continue;
    if (check_with(pool, info, info.create, false, out) ||
        check_with(pool, info, info.create_string, true, out))
      return out;
  }
  throw Error(Errc::wrong_index,
              "pool '" + pool.name() +
                  "' holds no index of this project's registry (`dptree bench --list`, "
                  "persistent ones): it was made by another program or its root was damaged");
}

}  // namespace dptree
