// `dptree microbench`: the PM-layer microbenchmark: ns per persist of 1, 4 and 16 cache lines
// in each mode, allocator operations per second and the crash simulator's capture cost, as a
// table or (--json) for scripts.
#include <fmt/core.h>

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "bench/machine.h"
#include "bench/report.h"
#include "checks.h"
#include "commands.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"

using namespace dptree::pm;
using Clock = std::chrono::steady_clock;

namespace {

// ordered: each line is flushed and fenced before the next is written, as an index that
// orders its lines must (FAST_FAIR's shift); otherwise one fence covers them all.
double ns_per_persist(Pool& pool, std::size_t lines, int iters, bool ordered = false) {
  auto* p = pool.at<unsigned char>(pool.allocator().reserve(16 * 64 * 64));
  std::size_t span = lines * 64;
  auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) {
    unsigned char* d = p + (static_cast<std::size_t>(i) % 64) * span;
    if (ordered) {
      for (std::size_t l = 0; l < lines; ++l) {
        std::memset(d + l * 64, i, 64);
        persist(d + l * 64, 64);
      }
      continue;
    }
    std::memset(d, i, span);  // make the lines dirty, as an index write would
    persist(d, span);
  }
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / iters;
}

double alloc_ops_per_sec(Pool& pool, std::size_t size, int iters) {
  auto& a = pool.allocator();
  auto table = a.reserve(64 * 8);
  std::memset(pool.at(table), 0, 64 * 8);
  a.activate(pool.root_word(), table);
  auto* slots = pool.at<std::uint64_t>(table);
  auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) {
    auto& slot = slots[i % 64];
    if (slot) a.free(&slot);
    a.activate(&slot, a.reserve(size));
  }
  double s = std::chrono::duration<double>(Clock::now() - t0).count();
  for (int i = 0; i < 64; ++i) a.free(&slots[i]);
  a.free(pool.root_word());
  return 2.0 * iters / s;  // each iteration is one reserve+activate and (mostly) one free
}

// Crash-simulator cost: capture a 1 MiB pool with a few dirty lines, then open the image as a
// pool (allocator recovery included), as a crash test does for every image. Returns the
// microseconds of one capture and of one open.
std::pair<double, double> sim_capture_cost() {
  set_mode(Mode::sim);
  auto pool = Pool::create_in_memory(1 << 20);
  auto* p = pool->at<std::uint64_t>(pool->allocator().reserve(4096));
  const int iters = 2000;
  double capture_us = 0, open_us = 0;
  for (int i = 0; i < iters; ++i) {
    p[(i * 8) % 512] = static_cast<std::uint64_t>(i);  // a dirty line
    flush(&p[(i * 8 + 64) % 512], 8);                  // and a pending one
    auto t0 = Clock::now();
    Image img = pool->sim()->capture(CaptureOptions{static_cast<std::uint64_t>(i), 0.5, 0.5});
    auto t1 = Clock::now();
    auto opened = Pool::open_image(std::move(img));
    auto t2 = Clock::now();
    capture_us += std::chrono::duration<double, std::micro>(t1 - t0).count();
    open_us += std::chrono::duration<double, std::micro>(t2 - t1).count();
    fence();
  }
  set_mode(Mode::dram);
  return {capture_us / iters, open_us / iters};
}

// One mode's figures: ns per persist and allocator operations per second.
struct ModeCosts {
  Mode mode;
  double one_line, four_lines, four_ordered, sixteen_lines, alloc_64, alloc_4k;
};

ModeCosts measure(Mode m, const std::filesystem::path& path) {
  set_mode(m);
  std::filesystem::remove(path);
  ModeCosts c{m, 0, 0, 0, 0, 0, 0};
  {
    auto pool = Pool::create(path, 64 << 20);
    const int iters = m == Mode::sim ? 20000 : 200000;
    c.one_line = ns_per_persist(*pool, 1, iters);
    c.four_lines = ns_per_persist(*pool, 4, iters);
    c.four_ordered = ns_per_persist(*pool, 4, iters, true);
    c.sixteen_lines = ns_per_persist(*pool, 16, iters / 4);
    c.alloc_64 = alloc_ops_per_sec(*pool, 64, iters / 4);
    c.alloc_4k = alloc_ops_per_sec(*pool, 4096, iters / 4);
  }
  std::filesystem::remove(path);
  return c;
}

void print_text(const std::vector<ModeCosts>& modes, std::pair<double, double> sim) {
  fmt::print("PM layer microbenchmark (pool file under {}, flush instruction: {})\n",
             default_pool_dir().string(), to_string(flush_instruction()));
  fmt::print("{:<6} {:>14} {:>14} {:>14} {:>14} {:>16} {:>16}\n", "mode", "persist 1 line",
             "4 lines", "4 ordered", "16 lines", "alloc ops/s 64B", "alloc ops/s 4KiB");
  for (const ModeCosts& c : modes)
    fmt::print("{:<6} {:>11.1f} ns {:>11.1f} ns {:>11.1f} ns {:>11.1f} ns {:>16.0f} {:>16.0f}\n",
               to_string(c.mode), c.one_line, c.four_lines, c.four_ordered, c.sixteen_lines,
               c.alloc_64, c.alloc_4k);
  fmt::print(
      "(per persist: memset of the lines + flush + fence; 4 ordered: each line written, flushed "
      "and fenced before the next; alloc: reserve+activate / free)\n");
  fmt::print(
      "crash simulator, 1 MiB pool: capture {:.1f} us, open image (with recovery) {:.1f} us\n",
      sim.first, sim.second);
}

// The same figures for scripts (docs/bench.md).
std::string to_json(const std::vector<ModeCosts>& modes, std::pair<double, double> sim,
                    const dptree::bench::MachineState& machine) {
  nlohmann::ordered_json j;
  j["pool_dir"] = default_pool_dir().string();
  j["machine"] = dptree::bench::machine_json(machine);
  j["flush_instruction"] = std::string(to_string(flush_instruction()));
  nlohmann::ordered_json& by_mode = j["modes"] = nlohmann::ordered_json::object();
  for (const ModeCosts& c : modes)
    by_mode[std::string(to_string(c.mode))] = {
        {"persist_ns",
         {{"one_line", c.one_line},
          {"four_lines", c.four_lines},
          {"four_ordered", c.four_ordered},
          {"sixteen_lines", c.sixteen_lines}}},
        {"alloc_ops_per_second", {{"64", c.alloc_64}, {"4096", c.alloc_4k}}}};
  j["sim"] = {{"capture_us", sim.first}, {"open_image_us", sim.second}};
  return j.dump(2) + "\n";
}

void microbench(const std::string& json) {
  dptree::cli::check_output_path(json, "--json");
  const auto path = default_pool_dir() / fmt::format("dptree-pm-microbench-{}.pool", getpid());
  dptree::bench::MachineState machine = dptree::bench::machine_state(default_pool_dir());
  machine.load1_before = dptree::bench::load1();
  std::vector<ModeCosts> modes;
  for (Mode m : {Mode::pmem, Mode::eadr, Mode::dram, Mode::sim}) modes.push_back(measure(m, path));
  const auto sim = sim_capture_cost();
  machine.load1_after = dptree::bench::load1();
  if (json != "-") print_text(modes, sim);
  if (!json.empty()) dptree::cli::write_whole_file(json, to_json(modes, sim, machine), "JSON");
}

const dptree::cli::Registrar kRegistrar{
    {"microbench",
     "PM-layer microbenchmark: ns per persist of 1, 4 and 16 cache lines in each PM mode (and of "
     "4 lines persisted one after another), "
     "allocator operations per second, crash-simulator capture cost",
     [](CLI::App& app) {
       auto json = std::make_shared<std::string>();
       app.add_option("--json", *json,
                      "Also write the figures as JSON to FILE ('-': stdout, without the table)");
       app.callback([json] { microbench(*json); });
     }}};

}  // namespace
