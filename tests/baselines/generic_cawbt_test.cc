// CAWBT through the generic fixtures (generic_peer_fixture.h): its crash run, the slowest of the
// three peers', in a binary of its own.
#include <gtest/gtest.h>

#include <string>

#include "baselines/generic_peer_fixture.h"

namespace dptree::testing {
namespace {

const Peer kPeers[] = {
    {"cawbt", {}, "nodes", 500, pm::Unit::line64, 2400},
};

INSTANTIATE_TEST_SUITE_P(Index, GenericPeer, ::testing::ValuesIn(kPeers), PeerName());

}  // namespace
}  // namespace dptree::testing
