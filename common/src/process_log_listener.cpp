// Names the test case now running for kit/process_log.hpp, and logs the judge's own CUDA start
// once, against the case that made it (most judges make none: bench/RESULTS.md, "A judge without
// a context"). Linked into every split lab's test executable (cmake/KitLab.cmake), since nothing
// else refers to it.
#include <catch2/catch_test_case_info.hpp>
#include <catch2/reporters/catch_reporter_event_listener.hpp>
#include <catch2/reporters/catch_reporter_registrars.hpp>

#include "kit/process_log.hpp"
#include "kit/remote.hpp"

namespace {

class ProcessLog : public Catch::EventListenerBase {
 public:
  using Catch::EventListenerBase::EventListenerBase;

  void testCaseStarting(const Catch::TestCaseInfo& info) override {
    kit::set_logged_test(info.name);
  }

  void testCaseEnded(const Catch::TestCaseStats&) override {
    if (!judge_logged_ && kit::remote::cuda_started()) {
      kit::log_process_start("judge");
      judge_logged_ = true;
    }
    kit::set_logged_test("");  // a start between cases is no case's
  }

 private:
  bool judge_logged_ = false;
};

}  // namespace

CATCH_REGISTER_LISTENER(ProcessLog)
