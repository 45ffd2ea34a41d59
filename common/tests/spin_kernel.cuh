// A kernel that runs for a known time: it spins until the device's global timer has moved on by
// `ns` nanoseconds. Work the tests can time (test_timer.cu) or leave running past a call
// (remote_test_worker.cu). Internal to each file that includes it.
#pragma once

static __global__ void spin(unsigned long long ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}
