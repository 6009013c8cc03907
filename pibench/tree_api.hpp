// The interface PiBench (https://github.com/sfu-dis/pibench) loads a tree library through,
// restated so the wrapper builds without a PiBench checkout. PiBench calls create_tree from
// the library it dlopens and then calls these virtual functions through the vtable, so the
// options struct and the order of the virtual functions must stay exactly PiBench's: five
// virtual functions after the destructor, and no others (the later PiBench variant with
// bulk_load and tls_setup is a different interface, not provided).
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
  // True, with the value copied to value_out, when the key is present.
  virtual bool find(const char* key, size_t sz, char* value_out) = 0;
  // True when the key was absent and is now stored.
  virtual bool insert(const char* key, size_t key_sz, const char* value, size_t value_sz) = 0;
  // True when the key was present and now holds the new value.
  virtual bool update(const char* key, size_t key_sz, const char* value, size_t value_sz) = 0;
  // True when the key was present and is now gone.
  virtual bool remove(const char* key, size_t key_sz) = 0;
  // How many records (up to scan_sz) from key on were found, in ascending key order;
  // values_out points to them, owned by the library.
  virtual int scan(const char* key, size_t key_sz, int scan_sz, char*& values_out) = 0;
};

#endif
