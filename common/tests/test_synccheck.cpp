// kit/synccheck.hpp on the host: what the barrier test tells from a report.
#include <catch2/catch_test_macros.hpp>
#include <string>

#include "kit/synccheck.hpp"

TEST_CASE("the barrier test names the line of the student's file that synccheck reports first",
          "[common][synccheck]") {
  const std::string report =
      "========= Barrier error detected. Divergent thread(s) in warp\n"
      "=========     at block_sums_kernel(const float *, float *, int)+0x2d0 in "
      "/tmp/kit/obj/3424faf0/memory_qualifiers.cu:103\n"
      "=========     by thread (0,0,0) in block (0,0,0)\n"
      "=========     at 0x1b0 in /usr/local/cuda/include/other_memory_qualifiers.cu:7\n";
  CHECK(kit::synccheck::first_line_in(report, {"memory_qualifiers.cu"}) ==
        "memory_qualifiers.cu line 103");
  // The first of several files the report names, and nothing of a file it does not name.
  CHECK(kit::synccheck::first_line_in(report, {"block_transpose.cu", "memory_qualifiers.cu"}) ==
        "memory_qualifiers.cu line 103");
  CHECK(kit::synccheck::first_line_in(report, {"tiled_matmul.cu"}).empty());
  // Of two files, the one the report names first, whichever is listed first; a name that is only
  // the end of another file's (other_memory_qualifiers.cu), or has no line number, is not it.
  const std::string two =
      "=========     at k+0x10 in /tmp/obj/my_tiled_matmul.cu:5\n"
      "=========     at k+0x10 in /tmp/obj/tiled_matmul.cu:\n"
      "=========     at k+0x20 in /tmp/obj/block_transpose.cu:41\n"
      "=========     at k+0x30 in /tmp/obj/tiled_matmul.cu:88\n";
  CHECK(kit::synccheck::first_line_in(two, {"tiled_matmul.cu", "block_transpose.cu"}) ==
        "block_transpose.cu line 41");
  CHECK(kit::synccheck::first_line_in(two, {"tiled_matmul.cu"}) == "tiled_matmul.cu line 88");
}

TEST_CASE("the barrier test quotes only the lines of the report that explain it",
          "[common][synccheck]") {
  const std::string report =
      "student output: hint: this is not the kit's\n"
      "========= Barrier error detected. Divergent thread(s) in warp\n"
      "========= ERROR SUMMARY: 3 errors\n";
  const std::string kept = kit::synccheck::report_lines(report);
  CHECK(kept.find("| ========= Barrier error detected") != std::string::npos);
  CHECK(kept.find("| ========= ERROR SUMMARY") != std::string::npos);
  CHECK(kept.find("not the kit's") == std::string::npos);
}
