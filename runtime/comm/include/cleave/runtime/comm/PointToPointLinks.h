//===- PointToPointLinks.h - Directed links of a pipeline axis --*- C++ -*-===//
//
// A communicator whose messages complete in order per channel (NCCL: one
// stream per communicator, messages matched by order) deadlocks as soon as
// two unrelated messages share a channel and the schedule makes one wait
// for the other's receiver: the interleaved schedule's wrap-around send
// from the last stage to the first closes such a ring. Giving every
// directed link its own channel removes that: along an axis of size p,
// link i joins coordinate i (its lower end) and (i + 1) mod p (its upper
// end), and a message travels up (lower to upper) or down. Each rank ends
// two links; the links fall into classes such that no rank ends two links
// of one class, so that a class can be made by one collective split
// (ncclCommSplit with the link as color).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_COMM_POINTTOPOINTLINKS_H
#define CLEAVE_RUNTIME_COMM_POINTTOPOINTLINKS_H

#include <cstdint>
#include <optional>

namespace cleave::comm {

/// Link classes: even links, odd links, and the wrap-around link of an
/// odd-sized axis (which shares rank 0 with link 0).
inline constexpr int kLinkClasses = 3;

/// The class of link `link` along an axis of size p (p >= 2).
int linkClass(int64_t link, int64_t p);

/// The link of class `linkClass` that coordinate x ends, if any.
std::optional<int64_t> linkOfClass(int64_t x, int64_t p, int linkClass);

/// Where a message between coordinate x and its neighbour x + offset
/// (offset +1 or -1, wrapping around) travels.
struct LinkRoute {
  int64_t link = 0;
  int linkClass = 0;
  bool up = true;
  /// 0 for the link's lower end, 1 for its upper end.
  int selfEnd = 0, peerEnd = 1;
};

/// The route of a message sent from x to x + offset, or received at x
/// from x + offset. Throws std::invalid_argument unless p >= 2 and offset
/// is +1 or -1.
LinkRoute sendRoute(int64_t x, int64_t p, int64_t offset);
LinkRoute recvRoute(int64_t x, int64_t p, int64_t offset);

} // namespace cleave::comm

#endif // CLEAVE_RUNTIME_COMM_POINTTOPOINTLINKS_H
