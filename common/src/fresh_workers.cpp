// Each test case of a lab's tests starts with no worker: the first call of the case starts a new
// one. The grader may run several test cases in one judge process (grader/run.py,
// tests_per_process), and a test's verdict must not depend on what the student's code kept from
// an earlier case (state, leaked device memory, a kernel still running). Linked into every split
// lab's test executable (cmake/KitLab.cmake), since nothing else refers to it.
#include <catch2/reporters/catch_reporter_event_listener.hpp>
#include <catch2/reporters/catch_reporter_registrars.hpp>

#include "kit/remote.hpp"

namespace {

class FreshWorkers : public Catch::EventListenerBase {
 public:
  using Catch::EventListenerBase::EventListenerBase;

  void testCaseStarting(const Catch::TestCaseInfo&) override {
    kit::remote::stop_worker(kit::remote::Role::student);
    kit::remote::stop_worker(kit::remote::Role::reference);
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(FreshWorkers)
