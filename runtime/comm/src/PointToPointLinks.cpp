//===- PointToPointLinks.cpp - Directed links of a pipeline axis ----------===//

#include "cleave/runtime/comm/PointToPointLinks.h"

#include <stdexcept>
#include <string>

namespace cleave::comm {

namespace {

void check(int64_t x, int64_t p, int64_t offset) {
  if (p < 2 || x < 0 || x >= p || (offset != 1 && offset != -1))
    throw std::invalid_argument(
        "a point-to-point link joins neighbours (offset +1 or -1) along an "
        "axis of at least 2 ranks; got offset " +
        std::to_string(offset) + " at coordinate " + std::to_string(x) +
        " of " + std::to_string(p));
}

int64_t below(int64_t x, int64_t p) { return (x + p - 1) % p; }

} // namespace

int linkClass(int64_t link, int64_t p) {
  // Links i and i + 1 share coordinate i + 1: alternate. On an odd axis
  // the last link (p - 1 -> 0) would share coordinate 0 with link 0, both
  // even: it gets a class of its own.
  if (p % 2 == 1 && link == p - 1)
    return 2;
  return static_cast<int>(link % 2);
}

std::optional<int64_t> linkOfClass(int64_t x, int64_t p, int cls) {
  if (p < 2)
    return std::nullopt;
  for (int64_t link : {x, below(x, p)})
    if (linkClass(link, p) == cls)
      return link;
  return std::nullopt;
}

LinkRoute sendRoute(int64_t x, int64_t p, int64_t offset) {
  check(x, p, offset);
  LinkRoute r;
  // Up: x is the lower end of link x. Down: x is the upper end of the
  // link below it.
  r.up = offset > 0;
  r.link = r.up ? x : below(x, p);
  r.selfEnd = r.up ? 0 : 1;
  r.peerEnd = 1 - r.selfEnd;
  r.linkClass = linkClass(r.link, p);
  return r;
}

LinkRoute recvRoute(int64_t x, int64_t p, int64_t offset) {
  check(x, p, offset);
  LinkRoute r;
  // From below (offset -1) the message travels up the link below x; from
  // above it travels down link x.
  r.up = offset < 0;
  r.link = r.up ? below(x, p) : x;
  r.selfEnd = r.up ? 1 : 0;
  r.peerEnd = 1 - r.selfEnd;
  r.linkClass = linkClass(r.link, p);
  return r;
}

} // namespace cleave::comm
