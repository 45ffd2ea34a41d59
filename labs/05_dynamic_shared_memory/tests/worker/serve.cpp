// Lab 05's worker: the calls it serves from the student's code (or, built as the reference
// worker, from the reference's). kit/remote.hpp's worker main does the rest.
#include "../calls.hpp"
#include "dynamic_matmul.h"

namespace {
using ChooseFor = lab05::Config (*)(const lab05::DeviceLimits&, const lab05::OccupancyQuery&);
using ChooseHere = lab05::Config (*)();

[[maybe_unused]] const bool served[] = {
    kit::remote::serve<lab05_calls::SharedBytesFor>(&lab05::shared_bytes_for),
    kit::remote::serve<lab05_calls::DeviceLimits>(&lab05::device_limits),
    kit::remote::serve<lab05_calls::BlocksPerSm>(&lab05::blocks_per_sm),
    kit::remote::serve<lab05_calls::CheckConfig>(&lab05::check_config),
    kit::remote::serve<lab05_calls::ChooseConfigFor>(static_cast<ChooseFor>(&lab05::choose_config)),
    kit::remote::serve<lab05_calls::ChooseConfig>(static_cast<ChooseHere>(&lab05::choose_config)),
    kit::remote::serve<lab05_calls::LaunchDynamicMatmul>(&lab05::launch_dynamic_matmul),
    kit::remote::serve<lab05_calls::DynamicMatmul>(&lab05::dynamic_matmul),
};
}  // namespace
