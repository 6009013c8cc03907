// A libFuzzer target over one persistent index (DPTREE_FUZZ_INDEX, set per binary by
// CMakeLists.txt): each input is a pool image, opened, recovered and checked (pool_fuzz.h).
// Half the mutations are pool_fuzz.h's word-level ones, half libFuzzer's own. With
// DPTREE_FUZZ_SEED_DIR set, the seed pools are written there first (the corpus `make fuzz`
// starts from).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "fuzz/pool_fuzz.h"

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

namespace {

const dptree::fuzz::Target& the_target() {
  static const auto& t = dptree::fuzz::target(DPTREE_FUZZ_INDEX);
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = std::getenv("DPTREE_FUZZ_SEED_DIR");
  if (!dir) return 0;
  std::filesystem::create_directories(dir);
  auto seeds = dptree::fuzz::make_seeds(the_target());
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    std::ofstream out(std::filesystem::path(dir) / ("seed-" + std::to_string(i)), std::ios::binary);
    out.write(reinterpret_cast<const char*>(seeds[i].data()),
              static_cast<std::streamsize>(seeds[i].size()));
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dptree::fuzz::run_one(the_target(), data, size);
  return 0;
}

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size,
                                               std::size_t max_size, unsigned int seed) {
  if (seed % 2) return LLVMFuzzerMutate(data, size, max_size);
  dptree::fuzz::Bytes img(data, data + size);
  std::mt19937_64 rng(seed);
  dptree::fuzz::mutate(img, rng);
  std::memcpy(data, img.data(), img.size());
  return img.size();
}
