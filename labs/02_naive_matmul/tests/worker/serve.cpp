// Lab 02's worker: the calls it serves from the student's code (or, built as the reference
// worker, from the reference's). kit/remote.hpp's worker main does the rest.
#include "../calls.hpp"
#include "naive_matmul.h"

namespace {
[[maybe_unused]] const bool served[] = {
    kit::remote::serve<lab02_calls::LaunchNaiveMatmul>(&lab02::launch_naive_matmul),
    kit::remote::serve<lab02_calls::NaiveMatmul>(&lab02::naive_matmul),
};
}  // namespace
