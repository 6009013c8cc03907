// PiBench's tree interface (https://github.com/sfu-dis/pibench, include/tree_api.hpp),
// restated here so the wrapper builds without a PiBench checkout. The layout must stay
// exactly PiBench's: it loads the library with dlopen, calls create_tree and then calls
// these virtual functions through the vtable.
#ifndef __TREE_API_HPP__
#define __TREE_API_HPP__

#include <cstddef>
#include <string>

struct tree_options_t {
  size_t key_size = 8;
  size_t value_size = 8;
  std::string pool_path = "";
  size_t pool_size = 0;
  size_t num_threads = 1;
};

class tree_api;
extern "C" tree_api* create_tree(const tree_options_t& opt);

class tree_api {
 public:
  virtual ~tree_api() {}
  // Optional; PiBench falls back to inserts when it returns false.
  virtual bool bulk_load(const char* data, size_t num_records, size_t key_sz, size_t value_sz) {
    (void)data, (void)num_records, (void)key_sz, (void)value_sz;
    return false;
  }
  // True and the value in value_out when the key is present.
  virtual bool find(const char* key, size_t sz, char* value_out) = 0;
  // False when the key already exists.
  virtual bool insert(const char* key, size_t key_sz, const char* value, size_t value_sz) = 0;
  // False when the key does not exist.
  virtual bool update(const char* key, size_t key_sz, const char* value, size_t value_sz) = 0;
  // False when the key did not exist.
  virtual bool remove(const char* key, size_t key_sz) = 0;
  // Up to scan_sz records from key on, ascending: values_out points to <key><value> pairs
  // packed back to back, owned by the wrapper (valid until the calling thread's next scan).
  virtual int scan(const char* key, size_t key_sz, int scan_sz, char*& values_out) = 0;
};

#endif
