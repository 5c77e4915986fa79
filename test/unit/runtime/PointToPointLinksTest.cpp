//===- PointToPointLinksTest.cpp - Links of a pipeline axis ---------------===//

#include "cleave/runtime/comm/PointToPointLinks.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <utility>

using namespace cleave::comm;

TEST(PointToPointLinks, NoRankEndsTwoLinksOfOneClass) {
  for (int64_t p = 2; p <= 9; ++p) {
    // (class, link) -> its ends, as each rank finds it.
    std::map<std::pair<int, int64_t>, std::set<int64_t>> ends;
    for (int64_t x = 0; x < p; ++x) {
      int links = 0;
      for (int c = 0; c < kLinkClasses; ++c)
        if (std::optional<int64_t> l = linkOfClass(x, p, c)) {
          ++links;
          EXPECT_EQ(linkClass(*l, p), c);
          ends[{c, *l}].insert(x);
        }
      EXPECT_EQ(links, 2) << "coordinate " << x << " of " << p;
    }
    EXPECT_EQ(ends.size(), static_cast<size_t>(p)) << "axis of " << p;
    for (auto &[key, members] : ends) {
      int64_t link = key.second;
      EXPECT_EQ(members, (std::set<int64_t>{link, (link + 1) % p}))
          << "link " << link << " of " << p;
    }
  }
}

TEST(PointToPointLinks, SendAndReceiveMeetOnOneLink) {
  for (int64_t p = 2; p <= 9; ++p)
    for (int64_t x = 0; x < p; ++x)
      for (int64_t offset : {1, -1}) {
        int64_t peer = ((x + offset) % p + p) % p;
        LinkRoute s = sendRoute(x, p, offset);
        LinkRoute r = recvRoute(peer, p, -offset);
        EXPECT_EQ(s.link, r.link);
        EXPECT_EQ(s.linkClass, r.linkClass);
        EXPECT_EQ(s.up, r.up);
        EXPECT_EQ(s.selfEnd, r.peerEnd);
        EXPECT_EQ(s.peerEnd, r.selfEnd);
        // The sender's link of that class is the route's link.
        EXPECT_EQ(linkOfClass(x, p, s.linkClass), s.link);
        EXPECT_EQ(linkOfClass(peer, p, r.linkClass), r.link);
      }
}

TEST(PointToPointLinks, OnlyNeighboursOnAnAxisOfTwoOrMore) {
  EXPECT_THROW(sendRoute(0, 1, 1), std::invalid_argument);
  EXPECT_THROW(sendRoute(0, 4, 2), std::invalid_argument);
  EXPECT_THROW(recvRoute(5, 4, -1), std::invalid_argument);
}
