// Reading Nsight Compute's report (kit/profiler.hpp) and the count a tiled kernel must reach
// (kit/locality.hpp), on hand-made ncu output: no GPU and no ncu needed.
#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "fake_gate.hpp"
#include "kit/gpu_gate.hpp"
#include "kit/locality.hpp"
#include "kit/probe.hpp"
#include "kit/process_log.hpp"
#include "kit/profiler.hpp"
#include "kit/sanitizer.hpp"

namespace {

// A fresh folder under /tmp for a test's stand-in programs, named from `prefix`, removed with
// all it holds when the test ends, passed or failed.
class TempFolder {
 public:
  explicit TempFolder(const std::string& prefix) : path_("/tmp/" + prefix + "-XXXXXX") {
    REQUIRE(mkdtemp(path_.data()) != nullptr);
  }
  ~TempFolder() { (void)std::system(("rm -rf '" + path_ + "'").c_str()); }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// An executable script `name` in `folder` that holds `text`: a stand-in for a tool or a probe.
std::string write_script(const std::string& folder, const std::string& name,
                         const std::string& text) {
  const std::string path = folder + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "w");
  REQUIRE(f != nullptr);
  std::fputs(text.c_str(), f);
  std::fclose(f);
  REQUIRE(std::system(("chmod +x '" + path + "'").c_str()) == 0);
  return path;
}

// A file's whole text; "" where it cannot be read.
std::string read_text(const std::string& path) {
  std::string text;
  if (std::FILE* f = std::fopen(path.c_str(), "r")) {
    for (int c; (c = std::fgetc(f)) != EOF;) text += static_cast<char>(c);
    std::fclose(f);
  }
  return text;
}

// This test program run again on the hidden case `tag`, with the shell assignments `env` before
// it and `options` after, its output kept in `folder`: its exit status and what it printed. A
// FAIL of the hidden case is what the callers look for, which only a process of its own can give.
std::pair<int, std::string> run_hidden_case(const std::string& env, const std::string& tag,
                                            const std::string& folder,
                                            const std::string& options = "") {
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  REQUIRE(n > 0);
  const std::string out = folder + "/out.txt";
  const std::string command = env + " '" + std::string(self, static_cast<std::size_t>(n)) + "' '" +
                              tag + "' " + options + " > '" + out + "' 2>&1";
  const int status = std::system(command.c_str());
  return {status, read_text(out)};
}

// What `ncu --metrics ... --csv` printed around a run of lab 03's probe, abridged: its own
// ==PROF== lines, the probe's output, then one CSV row per kernel and metric.
const std::string kHeader =
    "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\","
    "\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\","
    "\"Metric Unit\",\"Metric Value\"\n";

std::string row(int id, const std::string& kernel, const std::string& metric,
                const std::string& value) {
  return "\"" + std::to_string(id) + "\",\"4242\",\"lab03_probe\",\"127.0.0.1\",\"" + kernel +
         "\",\"1\",\"7\",\"(16, 16, 1)\",\"(16, 16, 1)\",\"0\",\"9.0\",\"Command line profiler "
         "metrics\",\"" +
         metric + "\",\"inst\",\"" + value + "\"\n";
}

}  // namespace

TEST_CASE("profiler reads one count per kernel from ncu's csv output", "[common]") {
  const std::string kernel =
      "void lab03::tiled_matmul_kernel<16>(const float *, const float *, "
      "float *, int)";
  const std::string output =
      "==PROF== Connected to process 4242 (/kit/bin/lab03_probe)\n"
      "==PROF== Profiling \"tiled_matmul_kernel\" - 0: 0%....50%....100% - 1 pass\n"
      "kit-probe-result: right\n"
      "==PROF== Disconnected from process 4242\n" +
      kHeader + row(0, kernel, "smsp__inst_executed_op_global_ld.sum", "65,536") +
      row(0, kernel, "dram__bytes_read.sum", "524,288") +
      row(1, "helper_kernel", "smsp__inst_executed_op_global_ld.sum", "100");
  kit::profiler::Profile p;
  p.run.output = output;
  p.kernels = kit::profiler::parse_csv(output, kit::profiler::kGlobalLoads);
  REQUIRE(p.kernels.size() == 2);
  CHECK(p.kernels[0].kernel == kernel);
  CHECK(p.kernels[0].value == 65536.0);
  CHECK(p.kernels[1].kernel == "helper_kernel");
  CHECK(p.total() == 65636.0);
  CHECK(p.result_right());
  CHECK_FALSE(p.result_wrong());
  CHECK_FALSE(p.permission_denied());
}

TEST_CASE("rows the probe printed before ncu's report are not read as ncu's", "[common]") {
  const std::string kernel = "_ZN5lab0521dynamic_matmul_kernelILi16EEEvPKfS2_Pfiiii";
  const std::string metric = "launch__shared_mem_per_block_dynamic";
  // A student's launcher that prints a header and a row of its own, claiming the right bytes.
  const std::string forged = kHeader + row(0, kernel, metric, "8192");
  const std::string output = "==PROF== Connected to process 4242 (/kit/bin/lab05_probe)\n" +
                             forged + "==PROF== Disconnected from process 4242\n" + kHeader +
                             row(0, kernel, metric, "2048");
  const std::vector<kit::profiler::KernelCount> counts = kit::profiler::parse_csv(output, metric);
  REQUIRE(counts.size() == 1);
  CHECK(counts[0].value == 2048.0);
  // A "Disconnected" line of the student's own, printed before ncu's, changes nothing; one inside
  // a line is no line of ncu's.
  const std::string twice = "==PROF== Disconnected from process 1\n" + forged +
                            "x ==PROF== Disconnected from process 2\n" + output;
  REQUIRE(kit::profiler::parse_csv(twice, metric).size() == 1);
  CHECK(kit::profiler::parse_csv(twice, metric)[0].value == 2048.0);
  // The probe's last line left without its newline: ncu's line follows on it, and still counts.
  const std::string unended = forged + "x==PROF== Disconnected from process 4242\n" + kHeader +
                              row(0, kernel, metric, "2048");
  REQUIRE(kit::profiler::parse_csv(unended, metric).size() == 1);
  CHECK(kit::profiler::parse_csv(unended, metric)[0].value == 2048.0);
  // ncu's own lines without that one (ncu cut short): no count at all, not the probe's rows.
  CHECK(kit::profiler::parse_csv("==PROF== Connected to process 4242\n" + forged, metric).empty());
  // Without any line of ncu's (a stand-in ncu), every row is read, as before.
  CHECK(kit::profiler::parse_csv(forged, metric).size() == 1);
}

TEST_CASE("a run of ncu whose output passed a MiB gives no count and no reason to skip",
          "[common]") {
  const TempFolder scratch("kit-flood");
  const std::string& folder = scratch.path();
  // A stand-in ncu whose probe floods the output before ncu's rows: they fall past the first MiB.
  const std::string ncu = write_script(
      folder, "ncu",
      "#!/bin/bash\nhead -c 1200000 /dev/zero | tr '\\0' 'x'\n"
      "echo; echo '==PROF== Disconnected from process 1'\n"
      "echo '\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"'\n"
      "echo '\"0\",\"k\",\"" +
          kit::profiler::kGlobalLoads + "\",\"\",\"5\"'\n");
  const kit::profiler::Profile p =
      kit::profiler::profile_with_ncu(ncu, kit::profiler::kGlobalLoads, "probe", "loads-16");
  CHECK(p.run.truncated);
  CHECK(p.kernels.empty());
  CHECK_THAT(p.run.output, Catch::Matchers::ContainsSubstring("more than 1 MiB"));
  // Its selftest floods too: that is the probe's doing, so the machine is not blamed.
  CHECK(kit::profiler::unusable_reason(ncu, kit::profiler::kGlobalLoads, "probe").empty());
}

TEST_CASE("profiler finds no count where ncu could not profile", "[common]") {
  kit::profiler::Profile p;
  p.run.output =
      "==PROF== Connected to process 4242 (/kit/bin/lab03_probe)\n"
      "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
      "Performance Counters on the target device 0.\n"
      "kit-probe-result: right\n";
  p.kernels = kit::profiler::parse_csv(p.run.output, kit::profiler::kGlobalLoads);
  CHECK(p.kernels.empty());
  CHECK(p.permission_denied());
  // A value that is not a number is no count.
  CHECK(kit::profiler::parse_csv(kHeader + row(0, "k", kit::profiler::kGlobalLoads, "n/a"),
                                 kit::profiler::kGlobalLoads)
            .empty());
}

TEST_CASE("a failed count's message keeps the probe's explanation and drops ncu's rows",
          "[common]") {
  // As ncu wrote it for lab 05's N_strip_without_phase_offset on an H200: its rows come after
  // the probe has ended, so the plain tail of the output was rows only.
  kit::profiler::Profile p;
  p.run.output =
      "==WARNING== Note: Running with uncontrolled GPU caches.\n"
      "==PROF== Connected to process 5449 (lab05_probe)\n"
      "kit-probe-result: wrong\n"
      "lab05_probe: width 256, TILE_WIDTH 16: P[0][0] is 2.000000, expected 7\n"
      "==PROF== Disconnected from process 5449\n"
      "==WARNING== No kernels were profiled.\n"
      "==ERROR== The application returned an error code (4).\n" +
      kHeader +
      row(0, "_ZN5lab0521dynamic_matmul_kernelILi16EEEvPKfS2_Pfiiii", kit::profiler::kGlobalLoads,
          "65,536");
  CHECK(p.explanation(4) ==
        "| lab05_probe: width 256, TILE_WIDTH 16: P[0][0] is 2.000000, expected 7\n"
        "| ==WARNING== No kernels were profiled.\n"
        "| ==ERROR== The application returned an error code (4).\n");
  CHECK(p.explanation(1) == "| ==ERROR== The application returned an error code (4).\n");
  CHECK_THAT(kit::sanitizer::tail(p.run.output, 4),
             !Catch::Matchers::ContainsSubstring("expected 7"));
}

TEST_CASE("profiler splits csv fields with quoted commas and quotes", "[common]") {
  const auto fields = kit::profiler::csv_fields("\"a\",\"b, c\",d,\"say \"\"hi\"\"\"\r");
  REQUIRE(fields.size() == 4);
  CHECK(fields[1] == "b, c");
  CHECK(fields[2] == "d");
  CHECK(fields[3] == "say \"hi\"");
  CHECK(kit::profiler::metric_value("1,234,567") == 1234567.0);
  CHECK(kit::profiler::metric_value("") < 0);
}

TEST_CASE("a tiled kernel's global loads are the counts measured on the H100", "[common]") {
  // bench/RESULTS.md, "Global loads counted by Nsight Compute": 33.6 M at TILE_WIDTH 16 and
  // 16.8 M at 32 for width 2048, and the naive kernel's 536.9 M, TILE_WIDTH times the tiled
  // kernel's.
  CHECK(kit::tiled_global_loads(2048, 16) == 33554432.0);
  CHECK(kit::tiled_global_loads(2048, 32) == 16777216.0);
  CHECK(kit::tiled_global_loads(2048, 16) * 16 == 536870912.0);
  CHECK(kit::tiled_global_loads(kit::probe::kCountedMatmulWidth, 16) == 65536.0);
}

TEST_CASE("the fewest global loads that read M and N stay far below a tiled kernel's", "[common]") {
  const int width = kit::probe::kCountedMatmulWidth;
  CHECK(kit::fewest_global_loads(width) == 1024.0);  // 2 x 256^2 floats, 128 a warp's load
  // A tiled kernel issues 4 * width / tile times as many: 64 at 16, 32 at 32.
  CHECK(kit::tiled_global_loads(width, 16) == 64 * kit::fewest_global_loads(width));
  CHECK(kit::tiled_global_loads(width, 32) == 32 * kit::fewest_global_loads(width));
}

TEST_CASE("profiler splits one run of several probe trials at the kit's trial-end kernels",
          "[common]") {
  const std::string metric = kit::profiler::kGlobalLoads;
  // The names as ncu writes them with --print-kernel-base mangled (kit::profiler::profile).
  const std::string marker = "_ZN3kit12_GLOBAL__N_19trial_endEv";
  const std::string output =
      "kit-probe-result: right\nkit-probe-result: right\n" + kHeader +
      row(0, "_ZN5lab0319tiled_matmul_kernelILi16EEvPKfS2_Pfi", metric, "65,536") +
      row(1, marker, metric, "0") + row(2, "_ZN5lab036helperEv", metric, "10") +
      row(3, "_ZN5lab0319tiled_matmul_kernelILi32EEvPKfS2_Pfi", metric, "32,768") +
      row(4, marker, metric, "0");
  kit::profiler::Profile p;
  p.run.output = output;
  p.kernels = kit::profiler::parse_csv(output, metric);
  CHECK(p.results_right() == 2);
  const auto trials = p.trials();
  REQUIRE(trials.size() == 2);
  REQUIRE(trials[0].size() == 1);
  CHECK(trials[0][0].value == 65536.0);
  REQUIRE(trials[1].size() == 2);
  CHECK(trials[1][0].value + trials[1][1].value == 32778.0);

  SECTION("a student's kernel named like the marker does not split a trial") {
    p.kernels.insert(p.kernels.begin() + 1, {"_ZN5lab039trial_endEv", 5.0});
    p.kernels.insert(p.kernels.begin() + 1, {"_ZN5lab031fIXadL_ZN3kit9trial_endEvEEEvv", 5.0});
    const auto same = p.trials();
    REQUIRE(same.size() == 2);
    CHECK(same[0].size() == 3);
  }
  SECTION(
      "kernels after the last marker, of a trial that did not finish, are a group of their own") {
    p.kernels.push_back({"void lab03::tiled_matmul_kernel<8>()", 7.0});
    CHECK(p.trials().size() == 3);
  }
}

TEST_CASE("a tool run confined writes its temporary files in the view's own /tmp", "[common]") {
  // The judge's TMPDIR is its own folder, which a confined tool cannot see: compute-sanitizer
  // and ncu refused to run with it. Here the confining prefix is a plain env, so the command
  // sees this machine's /tmp.
  const std::string names[] = {"KIT_WORKER_COMMAND", "TMPDIR"};
  std::string kept[2];
  bool had[2];
  for (int i = 0; i < 2; ++i) {
    const char* value = std::getenv(names[i].c_str());
    had[i] = value != nullptr;
    kept[i] = had[i] ? value : "";
  }
  setenv("KIT_WORKER_COMMAND", "/usr/bin/env\n", 1);
  setenv("TMPDIR", "/nonexistent/judge-run-folder", 1);
  const kit::sanitizer::Run r =
      kit::sanitizer::run_command("echo $TMPDIR $HOME; test -w \"$TMPDIR\" && echo writable");
  for (int i = 0; i < 2; ++i) {
    had[i] ? setenv(names[i].c_str(), kept[i].c_str(), 1) : unsetenv(names[i].c_str());
  }
  CHECK(r.exit_code == 0);
  CHECK(r.output == "/tmp /tmp\nwritable\n");
}

TEST_CASE("tests that share a run of Nsight Compute ask for it with the same command", "[common]") {
  const std::string launch = "launch__shared_mem_per_block_dynamic";
  const std::string loads = kit::profiler::kGlobalLoads;
  const std::string one = kit::profiler::profile_command("ncu", {launch, loads}, "probe", "sizes");
  CHECK(one == kit::profiler::profile_command("ncu", {loads, launch, loads}, "probe", "sizes"));
  CHECK_THAT(one, Catch::Matchers::ContainsSubstring(" --metrics " + launch + "," + loads + " "));
  CHECK(one != kit::profiler::profile_command("ncu", {launch}, "probe", "sizes"));
  CHECK(one != kit::profiler::profile_command("ncu", {launch, loads}, "probe", "sizes loads-16"));
}

namespace {

// An environment variable set for the block's length, and put back after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* before = std::getenv(name);
    had_ = before != nullptr;
    if (had_) before_ = before;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, before_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  bool had_ = false;
  std::string before_;
};

// Counting with Nsight Compute alone (KIT_LOAD_COUNTER_PATH empty), as the grader counts with
// --ncu-loads or without a counter built: the tests of ncu's runs below.
struct NoLoadCounter : ScopedEnv {
  NoLoadCounter() : ScopedEnv("KIT_LOAD_COUNTER_PATH", "") {}
};

// A stand-in for ncu in a temporary folder: for each mode of the probe it prints one count of each
// metric it is asked for, and the kit's marker after each mode when there are several (as
// kit::probe::main launches it). It exits with 1 at once when a metric it is asked for holds
// `refused`, and at the mode `fails_at` (after the modes before it), as a probe that fails there.
std::string fake_ncu(const std::string& folder, const std::string& refused,
                     const std::string& fails_at) {
  const std::string path = folder + "/ncu";
  std::FILE* f = std::fopen(path.c_str(), "w");
  REQUIRE(f != nullptr);
  std::fprintf(
      f,
      "#!/bin/sh\n"
      "metrics=$2; shift 11; shift\n"
      "[ \"$1\" = --profiled ] || { echo 'the probe was not told it is profiled'; exit 1; }; "
      "shift\n"
      "case \"$metrics\" in *'%s'*) echo 'ERR_NVGPUCTRPERM'; exit 1;; esac\n"
      "echo '\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"'\n"
      "id=0\n"
      "for mode in \"$@\"; do\n"
      "  [ \"$mode\" = '%s' ] && { echo 'kit-probe-result: wrong'; exit 1; }\n"
      "  for m in $(echo $metrics | tr , ' '); do\n"
      "    echo \"\\\"$id\\\",\\\"_ZN5lab059kernel_$mode\\\",\\\"$m\\\",\\\"\\\",\\\"7\\\"\"\n"
      "  done\n"
      "  id=$((id+1))\n"
      "  if [ $# -gt 1 ]; then for m in $(echo $metrics | tr , ' '); do\n"
      "    echo "
      "\"\\\"$id\\\",\\\"_ZN3kit12_GLOBAL__N_19trial_endEv\\\",\\\"$m\\\",\\\"\\\",\\\"0\\\"\"\n"
      "  done; id=$((id+1)); fi\n"
      "done\n",
      refused.c_str(), fails_at.c_str());
  std::fclose(f);
  REQUIRE(std::system(("chmod +x '" + path + "'").c_str()) == 0);
  return path;
}

std::string kernel_names(const std::vector<kit::profiler::KernelCount>& kernels) {
  std::string names;
  for (const kit::profiler::KernelCount& k : kernels) names += k.kernel + " ";
  return names;
}

}  // namespace

TEST_CASE("tests that share a run of Nsight Compute read it only where their own trials finished",
          "[common]") {
  // Each section has a folder of its own: profile keeps every run of its process by command.
  const NoLoadCounter ncu_alone;
  const TempFolder scratch("kit-fake-ncu");
  const std::string& folder = scratch.path();
  const std::string launch = "launch__shared_mem_per_block_dynamic";
  const std::string loads = kit::profiler::kGlobalLoads;
  // Lab 05's two tests: the launches' sizes first, then the counted trials.
  const kit::profiler::SharedProfile for_sizes{{}, {"loads-16", "loads-32"}, {loads}};
  const kit::profiler::SharedProfile for_loads{{"sizes"}, {}, {launch}};
  std::size_t first = 99;

  SECTION("a clean run is shared, each test's trials where its modes ran") {
    const std::string ncu = fake_ncu(folder, "no-such-metric", "no-such-mode");
    const kit::profiler::Profile sizes =
        kit::profiler::profile_shared(ncu, launch, "probe", "sizes", for_sizes, first);
    CHECK(first == 0);
    CHECK_THAT(sizes.run.command, Catch::Matchers::ContainsSubstring("sizes loads-16 loads-32"));
    REQUIRE(sizes.trials().size() == 3);
    CHECK(kernel_names(sizes.trials()[first]) == "_ZN5lab059kernel_sizes ");
    const kit::profiler::Profile counted =
        kit::profiler::profile_shared(ncu, loads, "probe", "loads-16 loads-32", for_loads, first);
    CHECK(counted.run.command == sizes.run.command);  // one run between them
    CHECK(first == 1);
    REQUIRE(counted.trials().size() == 3);
    CHECK(kernel_names(counted.trials()[1]) == "_ZN5lab059kernel_loads-16 ");
  }
  SECTION("a run that failed after a test's own trials is still that test's, not the next's") {
    const std::string ncu = fake_ncu(folder, "no-such-metric", "loads-16");
    const kit::profiler::Profile sizes =
        kit::profiler::profile_shared(ncu, launch, "probe", "sizes", for_sizes, first);
    CHECK(sizes.run.exit_code == 1);
    CHECK_THAT(sizes.run.command, Catch::Matchers::ContainsSubstring("sizes loads-16"));
    REQUIRE(first == 0);
    CHECK(kernel_names(sizes.trials()[first]) == "_ZN5lab059kernel_sizes ");
    const kit::profiler::Profile counted =
        kit::profiler::profile_shared(ncu, loads, "probe", "loads-16 loads-32", for_loads, first);
    CHECK(first == 0);  // its own run, which fails at loads-16 as it did before it shared
    CHECK_THAT(counted.run.command, !Catch::Matchers::ContainsSubstring("sizes"));
    CHECK(counted.result_wrong());
  }
  SECTION("after a run that failed in a test's own trials, it runs its own modes alone") {
    const std::string ncu = fake_ncu(folder, "no-such-metric", "sizes");
    const kit::profiler::Profile sizes =
        kit::profiler::profile_shared(ncu, launch, "probe", "sizes", for_sizes, first);
    CHECK(first == 0);
    CHECK_THAT(sizes.run.command, !Catch::Matchers::ContainsSubstring("loads"));
    const kit::profiler::Profile counted =
        kit::profiler::profile_shared(ncu, loads, "probe", "loads-16 loads-32", for_loads, first);
    CHECK(first == 0);
    CHECK(counted.run.exit_code == 0);
    REQUIRE(counted.trials().size() == 2);
    CHECK(kernel_names(counted.trials()[0]) == "_ZN5lab059kernel_loads-16 ");
  }
  SECTION("a metric the other test needs that ncu refuses leaves this test its own run") {
    const std::string ncu = fake_ncu(folder, launch, "no-such-mode");
    const kit::profiler::Profile counted =
        kit::profiler::profile_shared(ncu, loads, "probe", "loads-16 loads-32", for_loads, first);
    CHECK(first == 0);
    CHECK(counted.run.exit_code == 0);
    CHECK(counted.kernels.size() == 4);  // two trials, each its kernel and the marker
  }
}

TEST_CASE("a probe that Nsight Compute killed while it held the profiler turn does not keep it",
          "[common]") {
  // ncu kills its application after a kernel faults, before the probe's hold ends: this stand-in
  // asks for the turn on the gate the judge passed down, as the probe does, and is killed.
  const NoLoadCounter ncu_alone;
  const TempFolder scratch("kit-fake-ncu");
  const std::string& folder = scratch.path();
  const std::string ncu = write_script(
      folder, "ncu", "#!/bin/sh\nfd=${KIT_GPU_GATE%%,*}\neval \"printf P >&$fd\"\nkill -9 $$\n");
  kit_tests::FakeGate gate;
  const kit::profiler::Profile p =
      kit::profiler::profile(ncu, kit::profiler::kGlobalLoads, "probe", "loads-16");
  CHECK(p.run.exit_code == 128 + 9);
  CHECK(gate.asked() == "PR");  // the judge gave back the turn its killed child held
  // A judge that holds the GPU itself gives nothing back for its child: its own hold is not done.
  gate.grant_once();
  {
    const kit::ExclusiveGpu alone;
    CHECK(gate.asked() == "A");
    kit::release_hold_of_ended_child();
    CHECK(gate.asked().empty());
  }
  CHECK(gate.asked() == "R");
}

TEST_CASE(
    "the load counter's lines are read only when each carries the run's token and the end counts "
    "them",
    "[common]") {
  const std::string t = "0123456789abcdef0123456789abcdef";
  const std::string launch1 = t + " 1 65536 _ZN5lab0319tiled_matmul_kernelILi16EEvPKfS2_Pfi\n";
  const std::string marker = t + " 2 0 _ZN3kit12_GLOBAL__N_19trial_endEv\n";
  SECTION("a clean run: its launches in order, markers included") {
    const kit::profiler::CounterLines c =
        kit::profiler::parse_counter(launch1 + marker + t + " end 2 2\n", t);
    CHECK(c.complete);
    REQUIRE(c.kernels.size() == 2);
    CHECK(c.kernels[0].value == 65536.0);
    CHECK(c.kernels[0].kernel == "_ZN5lab0319tiled_matmul_kernelILi16EEvPKfS2_Pfi");
    kit::profiler::Profile p;
    p.kernels = c.kernels;
    CHECK(p.trials_finished() == 1);  // the kit's marker splits trials as under ncu
  }
  SECTION("a kernel's name may hold spaces") {
    const kit::profiler::CounterLines c =
        kit::profiler::parse_counter(t + " 1 7 void f(int, float)\n" + t + " end 1 1\n", t);
    REQUIRE(c.complete);
    CHECK(c.kernels[0].kernel == "void f(int, float)");
  }
  SECTION("no clean run without its end line") {
    const kit::profiler::CounterLines c = kit::profiler::parse_counter(launch1 + marker, t);
    CHECK_FALSE(c.complete);
    CHECK_THAT(c.problem, Catch::Matchers::ContainsSubstring("no end line"));
  }
  SECTION("a line with another token, or none, spoils the run") {
    const std::string forged = "fedcba9876543210fedcba9876543210 1 0 _ZN5lab036forgedEv\n";
    CHECK_FALSE(kit::profiler::parse_counter(forged + t + " end 1 1\n", t).complete);
    CHECK_FALSE(kit::profiler::parse_counter(launch1 + " 2 0 x\n" + t + " end 2 2\n", t).complete);
    CHECK_THAT(kit::profiler::parse_counter(launch1 + "2 0 x\n", t).problem,
               Catch::Matchers::ContainsSubstring("without this run's token"));
  }
  SECTION("a launch missing, counted twice or not counted spoils the run") {
    CHECK_FALSE(kit::profiler::parse_counter(marker + t + " end 1 1\n", t).complete);  // no 1
    CHECK_FALSE(kit::profiler::parse_counter(launch1 + launch1 + t + " end 2 2\n", t).complete);
    CHECK_FALSE(kit::profiler::parse_counter(launch1 + t + " end 2 1\n", t).complete);
    CHECK_FALSE(kit::profiler::parse_counter(launch1 + t + " end 2 2\n", t).complete);
  }
  SECTION("an error line, or a line after the end, spoils the run") {
    CHECK_THAT(
        kit::profiler::parse_counter(launch1 + t + " error sanitizerAlloc: out of memory\n", t)
            .problem,
        Catch::Matchers::ContainsSubstring("sanitizerAlloc"));
    CHECK_FALSE(kit::profiler::parse_counter(launch1 + t + " end 1 1\n" + launch1, t).complete);
  }
  SECTION("no token, no count") {
    CHECK_FALSE(kit::profiler::parse_counter(" end 0 0\n", "").complete);
  }
}

TEST_CASE("a counted run gets its token on one pipe and gives its lines back on another",
          "[common]") {
  const std::string t = "00112233445566778899aabbccddeeff";
  std::string lines;
  // What the counter does, by a shell (dash names descriptors above 9 only as /dev/fd/N): the
  // token from descriptor 1000, the lines to 1001.
  const kit::sanitizer::Run run = kit::profiler::run_with_counter_pipes(
      "read t </dev/fd/1000; "
      "echo \"$t 1 42 _ZN5lab039kernelEv\" >/dev/fd/1001; "
      "echo \"$t end 1 1\" >/dev/fd/1001; "
      "echo 'fedcba9876543210fedcba9876543210 1 0 forged' >/dev/fd/1001; "
      "echo \"$t 1 0 on stdout\"; echo 'kit-probe-result: right' >&2",
      t, lines);
  CHECK(run.exit_code == 0);
  // The probe's own output stays apart from the counter's lines.
  CHECK_THAT(run.output, Catch::Matchers::ContainsSubstring("kit-probe-result: right"));
  CHECK_THAT(run.output, Catch::Matchers::ContainsSubstring("on stdout"));
  CHECK_THAT(lines, !Catch::Matchers::ContainsSubstring("on stdout"));
  const kit::profiler::CounterLines c = kit::profiler::parse_counter(lines, t);
  CHECK_FALSE(c.complete);  // the line after the end, with another token
  CHECK(kit::profiler::parse_counter(lines.substr(0, lines.find("fedcba")), t).complete);
  std::string none;
  CHECK(kit::profiler::run_with_counter_pipes("exit 3", t, none).exit_code == 3);
  CHECK(none.empty());
}

namespace {

// The load counter the kit's build made (`for_tests`: its copy for tests, which can end without a
// CUDA driver); the test skips, saying why, where it made none.
std::string built_counter_or_skip(bool for_tests = false) {
  const std::string counter = for_tests ? std::string(KIT_LOAD_COUNTER_FOR_TESTS)
                                        : kit::profiler::built_load_counter_path();
  if (counter.empty()) {
    SKIP(
        "the kit's load counter was not built here (no Compute Sanitizer API: "
        "common/load_counter/CMakeLists.txt)");
  }
  return counter;
}

}  // namespace

TEST_CASE("code in the probe's executable runs only after the load counter has taken the token",
          "[common]") {
  const std::string counter = built_counter_or_skip();
  const std::string forger = KIT_COUNTER_FORGER;
  SECTION(
      "a constructor that reads the token's descriptor finds it empty, and its lines spoil the "
      "run") {
    const kit::profiler::Profile p = kit::profiler::count_loads(counter, forger, "forge");
    CAPTURE(p.run.command, p.run.output);
    CHECK(p.run.exit_code == 0);
    CHECK_THAT(p.run.output, Catch::Matchers::ContainsSubstring("read 0 bytes of the token"));
    CHECK_THAT(p.counter_problem, Catch::Matchers::ContainsSubstring("without this run's token"));
  }
  SECTION("a program the CUDA driver never loaded the counter into has no count") {
    // The copy a probe is given ignores the tests' variable: a student's code could set it.
    const ScopedEnv no_driver("KIT_LOAD_COUNT_END_WITHOUT_DRIVER", "1");
    const kit::profiler::Profile p = kit::profiler::count_loads(counter, forger, "quiet");
    CAPTURE(p.run.command, p.run.output);
    CHECK_FALSE(p.counter_problem
                    .empty());  // no driver here: no InitializeInjection, so not a count of zero
    CHECK_THAT(p.counter_problem, Catch::Matchers::ContainsSubstring("never started the counter"));
  }
  SECTION(
      "told to end without the driver, a program that launches nothing has its end line alone") {
    const ScopedEnv no_driver("KIT_LOAD_COUNT_END_WITHOUT_DRIVER", "1");
    const kit::profiler::Profile p =
        kit::profiler::count_loads(built_counter_or_skip(true), forger, "quiet");
    CAPTURE(p.run.command, p.run.output, p.counter_problem);
    CHECK(p.counter_problem.empty());  // usable
    CHECK(p.kernels.empty());
    CHECK(p.counted_by == "the kit's load counter");
  }
}

TEST_CASE("a counted probe that found P wrong is read and one that failed another way is not",
          "[common]") {
  const std::string counter = built_counter_or_skip(true);
  // A stand-in probe, a bash script: the counter, preloaded into its shell, takes the token and
  // writes its end line when the shell exits (bash ends with exit; dash with _exit, which runs no
  // library's destructor).
  const TempFolder scratch("kit-fake-probe");
  const std::string& folder = scratch.path();
  const std::string probe = write_script(
      folder, "probe",
      "#!/bin/bash\n"
      "case $1 in\n"
      "  wrong) echo 'kit-probe-result: wrong'; echo 'P[0][1] is 3, expected 4' >&2; exit 4;;\n"
      "  says-nothing) exit 4;;\n"
      "  crashed) echo 'cudaErrorIllegalAddress' >&2; exit 1;;\n"
      "esac\n");
  const ScopedEnv no_driver("KIT_LOAD_COUNT_END_WITHOUT_DRIVER", "1");  // a shell, not CUDA
  const kit::profiler::Profile wrong = kit::profiler::count_loads(counter, probe, "wrong");
  CAPTURE(wrong.run.output, wrong.counter_problem);
  CHECK(wrong.counter_problem.empty());  // usable
  CHECK(wrong.result_wrong());
  CHECK_THAT(wrong.explanation(), Catch::Matchers::ContainsSubstring("expected 4"));
  // Exit code 4 without the probe's line: not the probe's wrong P.
  CHECK(kit::profiler::count_loads(counter, probe, "says-nothing").counter_problem ==
        "the probe exited with code 4");
  const kit::profiler::Profile crashed = kit::profiler::count_loads(counter, probe, "crashed");
  CHECK(crashed.counter_problem == "the probe exited with code 1");
}

TEST_CASE(
    "a count of the kit's own launch is judged as it ended and falls back to Nsight Compute only "
    "where the kit's set-up failed",
    "[common]") {
  const std::string counter = built_counter_or_skip(true);
  // A stand-in kit_device_count: it prints its arguments, then ends as its first mode says.
  const TempFolder scratch("kit-fake-device-count");
  const std::string& folder = scratch.path();
  const std::string program = write_script(
      folder, "kit_device_count",
      "#!/bin/bash\n"
      "echo \"args: $*\" >&2\n"
      "case $5 in\n"
      "  right) echo 'kit-probe-result: right';;\n"
      "  wrong) echo 'kit-probe-result: wrong'; echo 'P[0][1] is 3, expected 4' >&2; exit 4;;\n"
      "  faulted) echo 'cuLaunchKernel failed: an illegal memory access' >&2; exit 1;;\n"
      "  spoiled-clean) echo 'kit-probe-result: right'; echo 'junk' >&1001;;\n"
      "  usage) exit 2;;\n"
      "  no-kernel) echo 'no lab03::tiled_matmul_kernel<16>' >&2; exit 7;;\n"
      "  not-set-up) echo 'kit_device_count: cuInit failed: no CUDA-capable device' >&2; exit 6;;\n"
      "esac\n");
  const ScopedEnv no_driver("KIT_LOAD_COUNT_END_WITHOUT_DRIVER", "1");  // a shell, not CUDA
  const kit::profiler::KitLaunch launch{"lab05::dynamic_matmul_kernel", 64, "/bin/cuobjdump"};
  const auto counted = [&](const std::string& mode) {
    return kit::profiler::count_kernel_alone(counter, program, launch, "/probes/lab05_probe", mode);
  };
  const kit::profiler::Profile right = counted("right");
  CAPTURE(right.run.output, right.counter_problem);
  // The kit's program is told the cuobjdump, the probe, the kernel and the strips' depth.
  CHECK_THAT(right.run.output,
             Catch::Matchers::ContainsSubstring(
                 "args: /bin/cuobjdump /probes/lab05_probe lab05::dynamic_matmul_kernel 64 right"));
  CHECK(right.counter_problem.empty());
  CHECK(right.kit_launched);
  CHECK(right.result_right());
  CHECK_THAT(right.counted_by, Catch::Matchers::ContainsSubstring("the kit launching the kernel"));
  const kit::profiler::Profile wrong = counted("wrong");
  CHECK(wrong.counter_problem.empty());
  CHECK(wrong.result_wrong());
  // A kernel that failed under the kit's launch, or a probe without the lesson's kernel, is judged
  // (the test fails): never handed to Nsight Compute over the student's own launcher.
  for (const std::string& failed : {"faulted", "no-kernel"}) {
    const kit::profiler::Profile p = counted(failed);
    CAPTURE(failed, p.run.output);
    CHECK(p.counter_problem.empty());
    CHECK(p.run.exit_code != 0);
    CHECK(p.results_right() == 0);
  }
  // Only what is the kit's doing falls back, saying why: its set-up failing, the program refusing
  // its arguments, the counter's lines spoiled in a run that ended cleanly.
  const kit::profiler::Profile not_set_up = counted("not-set-up");
  CHECK_THAT(not_set_up.counter_problem,
             Catch::Matchers::ContainsSubstring("could not set its count up"));
  CHECK_THAT(not_set_up.counter_problem, Catch::Matchers::ContainsSubstring("cuInit failed"));
  CHECK_THAT(counted("usage").counter_problem,
             Catch::Matchers::ContainsSubstring("could not be run (exit code 2)"));
  CHECK_THAT(counted("spoiled-clean").counter_problem,
             Catch::Matchers::ContainsSubstring("without this run's token"));
}

TEST_CASE("a run of the kit's own launch falls back only for what is the kit's doing", "[common]") {
  using kit::profiler::kit_side_problem;
  // A kernel that faulted: the counter's own error line spoils the lines, and the run is judged.
  CHECK(kit_side_problem(1, false, "the counter failed: sanitizerStreamSynchronize: illegal", "")
            .empty());
  CHECK(kit_side_problem(kit::probe::kNoLessonKernel, false, "", "").empty());
  CHECK(kit_side_problem(134, false, "no end line: the probe did not end", "").empty());
  // Clean ends are judged where the lines are whole, and fall back where they are not.
  CHECK(kit_side_problem(0, false, "", "").empty());
  CHECK(kit_side_problem(kit::probe::kWrongResult, true, "", "").empty());
  CHECK(kit_side_problem(0, false, "the counter failed: sanitizerSubscribe", "") ==
        "the counter failed: sanitizerSubscribe");
  CHECK(kit_side_problem(-1, false, "the probe could not be run or waited for", "") ==
        "the probe could not be run or waited for");
  // Exit code 4 without the wrong-P line is a failure like any other: judged.
  CHECK(kit_side_problem(kit::probe::kWrongResult, false, "the probe exited with code 4", "")
            .empty());
  for (int code : {2, 125, 126, 127}) {
    CAPTURE(code);
    CHECK_THAT(kit_side_problem(code, false, "", "env: not found"),
               Catch::Matchers::ContainsSubstring("could not be run"));
  }
  CHECK_THAT(kit_side_problem(kit::probe::kCountNotSetUp, false, "", "cuInit failed"),
             Catch::Matchers::ContainsSubstring("could not set its count up: cuInit failed"));
}

TEST_CASE("the kit's own launch is counted only where kit_device_count is beside the counter",
          "[common]") {
  const TempFolder scratch("kit-fake-counter");
  const std::string& folder = scratch.path();
  const std::string counter = write_script(folder, "libkit_load_counter.so", "");
  CHECK(kit::profiler::device_count_path(counter).empty());
  CHECK(kit::profiler::device_count_path("").empty());
  const std::string program = write_script(folder, "kit_device_count", "#!/bin/sh\n");
  CHECK(kit::profiler::device_count_path(counter) == program);
}

TEST_CASE("each run of a tool over the probe is logged against the test that ran it", "[common]") {
  const TempFolder scratch("kit-process-log");
  const std::string& folder = scratch.path();
  const std::string log = folder + "/processes.log";
  const auto read_log = [&log] {
    std::FILE* f = std::fopen(log.c_str(), "r");
    std::string text;
    if (f == nullptr) return text;
    char buffer[256];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) text.append(buffer, n);
    std::fclose(f);
    return text;
  };
  {
    const ScopedEnv logging("KIT_PROCESS_LOG", log.c_str());
    kit::set_logged_test("tiled kernel has no shared-memory race under racecheck");
    kit::sanitizer::run("/bin/true", "--tool racecheck", "probe", "tiles");
    kit::sanitizer::run("/bin/true", "--tool racecheck", "probe", "strips");
    kit::log_process_start("worker");
    CHECK(read_log() ==
          "tool\ttiled kernel has no shared-memory race under racecheck\n"
          "tool\ttiled kernel has no shared-memory race under racecheck\n"
          "worker\ttiled kernel has no shared-memory race under racecheck\n");
  }
  // Without the variable (CTest, make check): nothing written.
  const ScopedEnv no_log("KIT_PROCESS_LOG", "");
  kit::log_process_start("worker");
  const std::string after = read_log();
  CHECK(std::count(after.begin(), after.end(), '\n') == 3);
  kit::set_logged_test("");
}

TEST_CASE("a sanitizer test's modes run one process each or all in one when the grader asks",
          "[common]") {
  // A stand-in for compute-sanitizer that prints the probe and its arguments, past its options.
  const TempFolder scratch("kit-fake-sanitizer");
  const std::string& folder = scratch.path();
  const std::string tool =
      write_script(folder, "compute-sanitizer", "#!/bin/sh\nshift 6; echo \"probe args: $*\"\n");
  {
    const ScopedEnv each("KIT_SANITIZER_MODES_TOGETHER", "0");
    const std::vector<kit::sanitizer::ModesRun> runs =
        kit::sanitizer::run_modes(tool, "--tool memcheck", "probe", {"tiles", "strips"});
    REQUIRE(runs.size() == 2);
    CHECK(runs[0].modes == "tiles");
    CHECK_THAT(runs[1].run.output, Catch::Matchers::ContainsSubstring("probe args: probe strips"));
  }
  {
    const ScopedEnv together("KIT_SANITIZER_MODES_TOGETHER", "1");
    const std::vector<kit::sanitizer::ModesRun> runs =
        kit::sanitizer::run_modes(tool, "--tool memcheck", "probe", {"square", "rect", "thin"});
    REQUIRE(runs.size() == 1);
    CHECK(runs[0].modes == "square, rect and thin");
    CHECK_THAT(runs[0].run.output,
               Catch::Matchers::ContainsSubstring("probe args: probe --together square rect thin"));
    // One mode is one run, as before.
    CHECK(kit::sanitizer::run_modes(tool, "--tool memcheck", "probe", {"tiles"})[0].modes ==
          "tiles");
  }
}

TEST_CASE("a race check runs its modes together first and apart only when that run is not clean",
          "[common]") {
  // A stand-in for compute-sanitizer that notes each run's probe arguments and exits with the
  // code the file `exit-<first argument>` holds (0 where there is none).
  const TempFolder scratch("kit-fake-racecheck");
  const std::string& folder = scratch.path();
  const std::string runs = folder + "/runs";
  const std::string tool =
      write_script(folder, "compute-sanitizer",
                   "#!/bin/sh\nshift 6; echo \"$*\" >> '" + runs + "'\ncode=$(cat '" + folder +
                       "/exit-'\"$2\" 2>/dev/null)\nexit ${code:-0}\n");
  const std::vector<std::string> modes = {"matmul-one-phase", "matmul"};
  const auto race = [&] {
    std::remove(runs.c_str());
    return kit::sanitizer::run_each_unless_clean_together(tool, "--tool racecheck", "probe", modes);
  };
  {
    const ScopedEnv together("KIT_SANITIZER_MODES_TOGETHER", "1");
    // Clean together: one run stands for both modes.
    std::vector<kit::sanitizer::Run> got = race();
    REQUIRE(got.size() == 2);
    CHECK(got[0].exit_code == 0);
    CHECK(got[1].exit_code == 0);
    CHECK(read_text(runs) == "probe --together matmul-one-phase matmul\n");
    // A hazard found together: each mode again on its own, and those runs are what is judged.
    const std::string found = std::to_string(kit::sanitizer::kErrorsFound);
    write_script(folder, "exit---together", found);
    write_script(folder, "exit-matmul", found);
    got = race();
    REQUIRE(got.size() == 2);
    CHECK(got[0].exit_code == 0);
    CHECK(got[1].exit_code == kit::sanitizer::kErrorsFound);
    const std::string three = read_text(runs);
    CHECK(std::count(three.begin(), three.end(), '\n') == 3);
    CHECK_THAT(three, Catch::Matchers::ContainsSubstring("probe matmul-one-phase\n"));
    CHECK_THAT(three, Catch::Matchers::ContainsSubstring("probe matmul\n"));
  }
  {
    // Run as it is (CTest): apart from the start.
    const ScopedEnv apart("KIT_SANITIZER_MODES_TOGETHER", "0");
    const std::vector<kit::sanitizer::Run> got = race();
    REQUIRE(got.size() == 2);
    CHECK(got[1].exit_code == kit::sanitizer::kErrorsFound);
    const std::string two = read_text(runs);
    CHECK(std::count(two.begin(), two.end(), '\n') == 2);
    CHECK_THAT(two, !Catch::Matchers::ContainsSubstring("--together"));
  }
  {
    // A run together whose output was cut at 1 MiB is not taken for clean, though it exits 0.
    const ScopedEnv together("KIT_SANITIZER_MODES_TOGETHER", "1");
    const std::string flooding = write_script(
        folder, "flooding-sanitizer",
        "#!/bin/sh\nshift 6; echo \"$*\" >> '" + runs +
            "'\n[ \"$2\" = --together ] && head -c 1100000 /dev/zero | tr '\\0' x\nexit 0\n");
    std::remove(runs.c_str());
    const std::vector<kit::sanitizer::Run> got = kit::sanitizer::run_each_unless_clean_together(
        flooding, "--tool racecheck", "probe", modes);
    REQUIRE(got.size() == 2);
    CHECK_FALSE(got[0].truncated);
    const std::string three = read_text(runs);
    CHECK(std::count(three.begin(), three.end(), '\n') == 3);
  }
}

TEST_CASE("a probe profiled by Nsight Compute holds the profiling turn while a single mode runs",
          "[common]") {
  // Two processes profiled at once on a GPU fail; the selftest, which asks whether ncu can count
  // here, then said it could not, and the test was skipped (kit::profiler::unusable_reason). The
  // selftest takes the same path as a single mode (kit::probe::main).
  std::string program = "lab99_probe", profiled = kit::probe::kProfiled, only = "only";
  {
    kit_tests::FakeGate gate;
    gate.grant_once();
    std::string asked_before_running;  // what the probe had asked when its mode ran
    const std::vector<kit::probe::Mode> modes = {{"only", [&gate, &asked_before_running] {
                                                    return asked_before_running = gate.asked(), 0;
                                                  }}};
    char* one[] = {program.data(), profiled.data(), only.data()};
    CHECK(kit::probe::main(3, one, program, modes) == 0);
    CHECK(asked_before_running == "P");  // the turn held while it ran
    CHECK(gate.asked() == "R");          // and given back after
  }
  {
    kit_tests::FakeGate gate;  // unprofiled (a sanitizer's run), one mode asks for nothing
    bool ran = false;
    const std::vector<kit::probe::Mode> modes = {{"only", [&ran] { return ran = true, 0; }}};
    char* plain[] = {program.data(), only.data()};
    CHECK(kit::probe::main(2, plain, program, modes) == 0);
    CHECK(ran);
    CHECK(gate.asked().empty());
  }
  // The command that runs the probe under ncu says so.
  CHECK_THAT(kit::profiler::profile_command("ncu", {kit::profiler::kGlobalLoads}, "probe", "sizes"),
             Catch::Matchers::EndsWith("'probe' --profiled sizes"));
}

TEST_CASE("a probe given its modes together runs them in order as a plain process", "[common]") {
  kit_tests::FakeGate gate;  // a plain process asks for no profiler turn (nor anything else)
  std::string ran;
  const std::vector<kit::probe::Mode> modes = {
      {"first", [&ran] { return ran += "first ", 0; }},
      {"fails", [&ran] { return ran += "fails ", 4; }},
      {"last", [&ran] { return ran += "last ", 0; }},
  };
  std::string program = "lab99_probe", together = kit::sanitizer::kModesTogether;
  std::string first = "first", last = "last", fails = "fails";
  char* clean[] = {program.data(), together.data(), first.data(), last.data()};
  CHECK(kit::probe::main(4, clean, program, modes) == 0);
  CHECK(ran == "first last ");
  ran.clear();
  // It stops at the first mode that fails, with that mode's exit code.
  char* failing[] = {program.data(), together.data(), first.data(), fails.data(), last.data()};
  CHECK(kit::probe::main(5, failing, program, modes) == 4);
  CHECK(ran == "first fails ");
  CHECK(gate.asked().empty());
}

namespace {
// A stand-in for ncu that runs no probe: each of the probe's modes "computes P right" and its
// kernel issues `loads` global load instructions, the kit's marker after each (kit::probe::main
// under ncu with several modes).
std::string fake_counting_ncu(const std::string& folder, int loads) {
  return write_script(
      folder, "ncu",
      "#!/bin/sh\n"
      "metric=$2; shift 11; shift; shift\n"  // ncu's options, the probe, --profiled
      "echo '\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"'\n"
      "id=0\n"
      "for mode in \"$@\"; do\n"
      "  echo 'kit-probe-result: right'\n"
      "  echo "
      "\"\\\"$id\\\",\\\"_Z19tiled_matmul_kernelPKfS0_Pfi\\\",\\\"$metric\\\",\\\"\\\",\\\"" +
          std::to_string(loads) +
          "\\\"\"\n"
          "  id=$((id+1))\n"
          "  echo \"\\\"$id\\\",\\\"_ZN3kit12_GLOBAL__N_19trial_endEv\\\",\\\"$metric\\\","
          "\\\"\\\",\\\"0\\\"\"\n"
          "  id=$((id+1))\n"
          "done\n");
}
// A copy of the counter built for tests in `root`/counter/for_tests, with the API's library where
// its rpath looks ($ORIGIN/..), so that a stand-in kit_device_count can be put beside it (a bash
// script the counter is preloaded into); skips where no counter was built.
std::string counter_copy(const std::string& root) {
  const std::string built = built_counter_or_skip(true);
  const std::string built_dir = built.substr(0, built.rfind('/'));
  REQUIRE(std::system(("mkdir -p '" + root + "/counter/for_tests' && cp '" + built + "' '" + root +
                       "/counter/for_tests/' && cp '" + built_dir +
                       "/../libsanitizer-public.so' '" + root + "/counter/'")
                          .c_str()) == 0);
  return root + "/counter/for_tests/" + built.substr(built.rfind('/') + 1);
}

}  // namespace

TEST_CASE(
    "profile counts the kit's launch and the launcher's run with the counter and keeps them and "
    "asks ncu only where the kit's set-up failed",
    "[common]") {
  const TempFolder scratch("kit-profile");
  const std::string& root = scratch.path();
  const std::string counter = counter_copy(root);
  const ScopedEnv given("KIT_LOAD_COUNTER_PATH", counter.c_str());
  const ScopedEnv no_driver("KIT_LOAD_COUNT_END_WITHOUT_DRIVER", "1");  // bash, not CUDA
  // Each stand-in notes its run in a file, so that the test sees which ran and how often.
  const std::string runs = root + "/runs.txt";
  write_script(root + "/counter/for_tests", "kit_device_count",
               "#!/bin/bash\necho \"kit $2\" >> '" + runs +
                   "'\ncase $2 in *unset*) echo 'cuInit failed' >&2; exit 6;; esac\n"
                   "echo 'kit-probe-result: right'\n");
  const std::string probe = write_script(
      root, "probe",
      "#!/bin/bash\necho \"probe $*\" >> '" + runs + "'\necho 'kit-probe-result: right'\n");
  const std::string unset_probe = write_script(root, "probe-unset", "#!/bin/bash\nexit 0\n");
  const std::string ncu = write_script(
      root, "ncu",
      "#!/bin/bash\necho \"ncu\" >> '" + runs + "'\necho '==PROF== Disconnected from process 1'\n");
  const auto ran = [&] {
    const std::string text = read_text(runs);
    std::remove(runs.c_str());
    return text;
  };
  const kit::profiler::KitLaunch launch{"lab03::tiled_matmul_kernel", 0, "/bin/true"};
  const std::string loads = kit::profiler::kGlobalLoads;
  const kit::profiler::Profile p =
      kit::profiler::profile(ncu, loads, probe, "loads-16 loads-32", {}, launch);
  CAPTURE(p.run.output, p.counter_problem);
  CHECK(p.kit_launched);
  CHECK(p.counter_problem.empty());
  REQUIRE(p.launcher != nullptr);  // the launcher's own run, beside a clean count
  CHECK(p.launcher->results_right() == 1);
  CHECK(ran() == "kit " + probe + "\nprobe loads-16 loads-32\n");  // no ncu
  // Asked again in the same process: the runs are kept, none is made again.
  CHECK(kit::profiler::profile(ncu, loads, probe, "loads-16 loads-32", {}, launch).kit_launched);
  CHECK(ran().empty());
  // The kit's set-up failing: ncu counts the probe instead, and the Profile says why.
  const kit::profiler::Profile fell =
      kit::profiler::profile(ncu, loads, unset_probe, "loads-16", {}, launch);
  CHECK_FALSE(fell.kit_launched);
  CHECK_THAT(fell.counter_problem,
             Catch::Matchers::ContainsSubstring("could not set its count up"));
  CHECK(ran() == "kit " + unset_probe + "\nncu\n");
  // Without a kit launch named, or for another metric, ncu counts, as it always did.
  kit::profiler::profile(ncu, loads, probe, "loads-32");
  kit::profiler::profile(ncu, "launch__shared_mem_per_block_dynamic", probe, "sizes", {}, launch);
  CHECK(ran() == "ncu\nncu\n");
}

// Run by the next case in a process of its own, with KIT_LOAD_COUNTER_PATH naming a counter
// beside a stand-in kit_device_count and no ncu anywhere: what the locality test makes of it.
TEST_CASE("locality without ncu: the kit's counter counts or the test says why not",
          "[.locality_without_ncu]") {
  const char* tools = std::getenv("KIT_TEST_TOOLS");  // a folder with a stand-in cuobjdump
  kit::check_tiled_global_loads("probe", tools != nullptr ? tools : "",
                                {{16, "loads-16"}, {32, "loads-32"}},
                                {"tiled_matmul_kernel", "README section 5", "lab03"});
}

TEST_CASE(
    "the locality test counts with the kit's counter where ncu is missing and skips only where "
    "neither can count",
    "[common]") {
  if (!kit::profiler::find_ncu("/nonexistent").empty()) {
    SKIP("ncu is installed here: this case needs a machine without it");
  }
  const TempFolder scratch("kit-no-ncu");
  const std::string& root = scratch.path();
  const std::string counter = counter_copy(root);
  REQUIRE(std::system(("mkdir -p '" + root + "/tools'").c_str()) == 0);
  write_script(root + "/tools", "cuobjdump", "#!/bin/sh\n");
  const auto judged = [&](const std::string& program) {
    write_script(root + "/counter/for_tests", "kit_device_count", program);
    return run_hidden_case(
               "PATH=/usr/bin:/bin KIT_LOAD_COUNT_END_WITHOUT_DRIVER=1 "
               "KIT_LOAD_COUNTER_PATH='" +
                   counter + "' KIT_TEST_TOOLS='" + root + "/tools'",
               "[.locality_without_ncu]", root, "--reporter compact")
        .second;
  };
  // The kit's program ran (no SKIP for want of ncu) and its run was judged: both trials right,
  // but a stand-in launches no kernel for the counter to count.
  const std::string counted = judged(
      "#!/bin/bash\necho 'kit-probe-result: right'; echo 'kit-probe-result: right'; exit 0\n");
  CAPTURE(counted);
  CHECK_THAT(counted, Catch::Matchers::ContainsSubstring(
                          "the probe failed under the kit's load counter, the kit launching"));
  CHECK_THAT(counted, !Catch::Matchers::ContainsSubstring("skipped"));
  // The kit's set-up failed and there is no ncu to count instead: a SKIP that says both.
  const std::string not_set_up =
      judged("#!/bin/bash\necho 'kit_device_count: cuInit failed: no device' >&2; exit 6\n");
  CAPTURE(not_set_up);
  CHECK_THAT(not_set_up, Catch::Matchers::ContainsSubstring("could not count here"));
  CHECK_THAT(not_set_up, Catch::Matchers::ContainsSubstring("cuInit failed"));
}

// Run by the next case in a process of its own, one scenario each ($KIT_TEST_LAUNCHER): the
// lab's launcher counted in the probe beside the kit's own launch (kit::check_launcher).
TEST_CASE("launcher check: the lab's launcher must launch the kernel as the kit did",
          "[.launcher_check]") {
  const char* given = std::getenv("KIT_TEST_LAUNCHER");
  const std::string scenario = given != nullptr ? given : "same";
  const std::string marker = "_ZN3kit12_GLOBAL__N_19trial_endEv";
  const std::string k16 = "_ZN5lab0319tiled_matmul_kernelILi16EEvPKfS2_Pfi";
  const std::string k32 = "_ZN5lab0319tiled_matmul_kernelILi32EEvPKfS2_Pfi";
  const std::vector<std::vector<kit::profiler::KernelCount>> kits = {{{k16, 65536.0}},
                                                                     {{k32, 32768.0}}};
  kit::profiler::Profile own;
  own.run.exit_code = 0;
  own.run.output = "kit-probe-result: right\nkit-probe-result: right\n";
  own.kernels = {{k16, 65536.0}, {marker, 0.0}, {k32, 32768.0}, {marker, 0.0}};
  if (scenario == "host") {
    own.kernels = {{marker, 0.0}, {marker, 0.0}};  // P right, no kernel of the launcher's
  } else if (scenario == "reads-once") {
    own.kernels = {{k16, 1024.0}, {marker, 0.0}, {k32, 1024.0}, {marker, 0.0}};
  } else if (scenario == "wrong") {
    own.run.exit_code = kit::probe::kWrongResult;
    own.run.output = "kit-probe-result: wrong\nlab03_probe: P[0][1] is 3, expected 4\n";
    own.kernels = {{k16, 65536.0}};
  } else if (scenario == "crashed") {
    own.run.exit_code = 1;
    own.counter_problem = "the probe exited with code 1";
    own.kernels = {{k16, 65536.0}};
  }
  kit::check_launcher(own, kits, {{16, "loads-16"}, {32, "loads-32"}},
                      {"tiled_matmul_kernel", "README section 5", "lab03"});
}

TEST_CASE("a launcher that does not launch the kernel as the kit did fails the count", "[common]") {
  const TempFolder scratch("kit-launcher-check");
  const std::string& folder = scratch.path();
  const auto judged = [&](const std::string& scenario) {
    return run_hidden_case("KIT_TEST_LAUNCHER=" + scenario, "[.launcher_check]", folder,
                           "--reporter compact");
  };
  const auto [same_status, same_text] = judged("same");
  CAPTURE(same_text);
  CHECK(same_status == 0);
  const auto [host_status, host_text] = judged("host");
  CAPTURE(host_text);
  CHECK(host_status != 0);
  CHECK_THAT(host_text, Catch::Matchers::ContainsSubstring("P was computed without a kernel"));
  const auto [once_status, once_text] = judged("reads-once");
  CAPTURE(once_text);
  CHECK(once_status != 0);
  CHECK_THAT(once_text, Catch::Matchers::ContainsSubstring("issued 1024 global load instructions, "
                                                           "where the kit's own launch"));
  const auto [wrong_status, wrong_text] = judged("wrong");
  CAPTURE(wrong_text);
  CHECK(wrong_status != 0);
  CHECK_THAT(wrong_text, Catch::Matchers::ContainsSubstring("launched by the lab's launcher, "
                                                            "computed a wrong P"));
  const auto [crash_status, crash_text] = judged("crashed");
  CAPTURE(crash_text);
  CHECK(crash_status != 0);
  CHECK_THAT(crash_text, Catch::Matchers::ContainsSubstring("the probe exited with code 1"));
}

// Run by the next case in a process of its own, with the stand-in ncu first on PATH: a FAIL is
// what it checks for.
TEST_CASE("locality floor: kernels that load less than M and N hold fail", "[.locality_floor]") {
  const NoLoadCounter ncu_alone;
  kit::check_tiled_global_loads("probe", "", {{16, "loads-16"}, {32, "loads-32"}},
                                {"tiled_matmul_kernel", "README section 5"});
}

TEST_CASE("a kernel that issues fewer global loads than reading M and N takes fails the count",
          "[common]") {
  const TempFolder scratch("kit-fake-ncu");
  const std::string& folder = scratch.path();
  const auto judged = [&](int loads) {
    fake_counting_ncu(folder, loads);
    return run_hidden_case("PATH='" + folder + "':\"$PATH\"", "[.locality_floor]", folder);
  };
  // An empty kernel beside P computed on the host: 0 loads. Below the floor, however few.
  const auto [empty_status, empty_text] = judged(0);
  CAPTURE(empty_text);
  CHECK(empty_status != 0);
  CHECK_THAT(empty_text, Catch::Matchers::ContainsSubstring("fewer than the 1024"));
  CHECK_THAT(empty_text, Catch::Matchers::ContainsSubstring("was not computed from M and N"));
  // A tiled kernel's own count at TILE_WIDTH 32 (the lower of the two) passes the floor.
  const auto [tiled_status, tiled_text] = judged(32768);
  CAPTURE(tiled_text);
  CHECK(tiled_status == 0);
  CHECK_THAT(tiled_text, Catch::Matchers::ContainsSubstring("global_load_ratio"));
}
