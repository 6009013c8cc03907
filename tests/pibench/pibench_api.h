// PiBench's interface as the tests declare it on their own, from PiBench's include/tree_api.hpp,
// and not from the wrapper's restatement (pibench/tree_api.hpp): a wrapper whose vtable or
// options struct differ from PiBench's then fails the tests.
#pragma once

#include <cstddef>
#include <string>

// PiBench's options, field by field with its defaults.
struct tree_options_t {
  size_t key_size = 8;
  size_t value_size = 8;
  std::string pool_path = "";
  size_t pool_size = 0;
  size_t num_threads = 1;
};
// The size PiBench's binary sees (LP64, libstdc++); the wrapper asserts the same number.
static_assert(sizeof(tree_options_t) == 64);

// PiBench's tree interface: the destructor, then exactly these five, in this order.
class tree_api {
 public:
  virtual ~tree_api() {}
  virtual bool find(const char* key, size_t sz, char* value_out) = 0;
  virtual bool insert(const char* key, size_t key_sz, const char* value, size_t value_sz) = 0;
  virtual bool update(const char* key, size_t key_sz, const char* value, size_t value_sz) = 0;
  virtual bool remove(const char* key, size_t key_sz) = 0;
  virtual int scan(const char* key, size_t key_sz, int scan_sz, char*& values_out) = 0;
};
