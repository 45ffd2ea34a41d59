// Lab 04's worker: the calls it serves from the student's code (or, built as the reference
// worker, from the reference's). kit/remote.hpp's worker main does the rest.
#include "../calls.hpp"
#include "boundary_matmul.h"

namespace {
[[maybe_unused]] const bool served[] = {
    kit::remote::serve<lab04_calls::LaunchTiledMatmul>(&lab04::launch_tiled_matmul),
    kit::remote::serve<lab04_calls::LaunchRectMatmul>(&lab04::launch_rect_matmul),
    kit::remote::serve<lab04_calls::RectMatmul>(&lab04::rect_matmul),
};
}  // namespace
