// lab06_curves: the three sweeps of the occupancy spreadsheet's charts, as CSV, computed with
// the student's calculator (lab06::occupancy). plot_occupancy.py draws them.
//
//   lab06_curves --preset 9.0 --threads 256 --registers 32 --shared 2048
//   lab06_curves --list
//
// Output: one header line, then one row per point:
//   sweep,value,active_blocks,active_warps,occupancy,limited_by,current
// sweep is threads_per_block, registers_per_thread or shared_memory_per_block; value is that
// input (the other two stay at the configuration given); current is 1 on the given one.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>

#include "device_presets.h"
#include "occupancy.h"

namespace {

struct Options {
  std::string preset = "9.0";
  lab06::KernelUsage kernel{256, 32, 2048};
  bool list = false;
};

int parse_int(const std::string& flag, const char* text) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0') {
    throw std::invalid_argument(flag + " wants a whole number, got '" + text + "'");
  }
  return static_cast<int>(value);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--list") {
      o.list = true;
      continue;
    }
    if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value");
    const char* value = argv[++i];
    if (flag == "--preset") {
      o.preset = value;
    } else if (flag == "--threads") {
      o.kernel.threads_per_block = parse_int(flag, value);
    } else if (flag == "--registers") {
      o.kernel.registers_per_thread = parse_int(flag, value);
    } else if (flag == "--shared") {
      o.kernel.shared_memory_per_block = parse_int(flag, value);
    } else {
      throw std::invalid_argument("unknown option " + flag +
                                  "; use --preset CC --threads N --registers N --shared BYTES, "
                                  "or --list");
    }
  }
  return o;
}

void print_point(const char* sweep, int value, const lab06::Occupancy& o, bool current) {
  std::printf("%s,%d,%d,%d,%.6f,%s,%d\n", sweep, value, o.active_blocks, o.active_warps,
              o.occupancy, lab06::limit_names(o.limited_by).c_str(), current ? 1 : 0);
}

void print_sweeps(const lab06::DeviceLimits& d, const lab06::KernelUsage& k) {
  std::printf("sweep,value,active_blocks,active_warps,occupancy,limited_by,current\n");
  for (int threads = d.warp_size; threads <= d.max_threads_per_block; threads += d.warp_size) {
    lab06::KernelUsage point = k;
    point.threads_per_block = threads;
    print_point("threads_per_block", threads, lab06::occupancy(d, point), false);
  }
  print_point("threads_per_block", k.threads_per_block, lab06::occupancy(d, k), true);

  for (int regs = 0; regs <= d.max_registers_per_thread; ++regs) {
    lab06::KernelUsage point = k;
    point.registers_per_thread = regs;
    print_point("registers_per_thread", regs, lab06::occupancy(d, point), false);
  }
  print_point("registers_per_thread", k.registers_per_thread, lab06::occupancy(d, k), true);

  // One point per allocation unit is enough: within a unit nothing changes.
  const int step = d.shared_memory_allocation_unit;
  for (int bytes = 0; bytes <= d.max_shared_memory_per_block; bytes += step) {
    lab06::KernelUsage point = k;
    point.shared_memory_per_block = bytes;
    print_point("shared_memory_per_block", bytes, lab06::occupancy(d, point), false);
  }
  print_point("shared_memory_per_block", k.shared_memory_per_block, lab06::occupancy(d, k), true);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    if (o.list) {
      for (const lab06::DeviceLimits& d : lab06::device_presets()) {
        std::printf("%d.%d  %s\n", d.cc_major, d.cc_minor, d.name.c_str());
      }
      return 0;
    }
    const lab06::DeviceLimits& d = lab06::device_preset(o.preset);
    // Checks the configuration once, so a bad one fails with the calculator's message.
    lab06::occupancy(d, o.kernel);
    print_sweeps(d, o.kernel);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lab06_curves: %s\n", e.what());
    return 2;
  }
}
