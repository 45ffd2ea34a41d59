// Lab 03's worker: the calls it serves from the student's code (or, built as the reference
// worker, from the reference's). kit/remote.hpp's worker main does the rest.
#include "../calls.hpp"
#include "block_transpose.h"
#include "tiled_matmul.h"

namespace {
[[maybe_unused]] const bool served[] = {
    kit::remote::serve<lab03_calls::LaunchBlockTranspose>(&lab03::launch_block_transpose),
    kit::remote::serve<lab03_calls::LaunchTiledMatmul>(&lab03::launch_tiled_matmul),
    kit::remote::serve<lab03_calls::TiledMatmul>(&lab03::tiled_matmul),
};
}  // namespace
