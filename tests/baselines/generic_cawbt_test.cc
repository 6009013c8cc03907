// CAWBT through the generic fixtures (generic_peer_fixture.h): its crash run, the slowest of the
// three peers', in a binary of its own.
#include <gtest/gtest.h>

#include <string>

#include "baselines/generic_peer_fixture.h"

namespace dptree::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Index, GenericPeer, ::testing::Values("cawbt"), IndexParamName());

}  // namespace
}  // namespace dptree::testing
