// The engine's pending events, earliest first. An event is 16 bytes (time
// and a tag packing the sequence number, a transfer bit and the rank or link
// id) so the binary heap stays cheap to sift; a 4-ary heap measured ~20%
// slower here. Ties resolve by insertion order, so replays are deterministic.
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

namespace pipeplan::sim {

class EventQueue {
 public:
  struct Event {
    double time_s;
    std::uint64_t tag;  // sequence << 25 | transfer bit << 24 | id
  };
  static constexpr int kIdBits = 24;  // ranks and links must stay below 2^24
  static constexpr std::uint64_t kIdMask = (std::uint64_t{1} << kIdBits) - 1;
  static constexpr std::uint64_t kTransferBit = std::uint64_t{1} << kIdBits;

  bool empty() const { return heap_.empty(); }
  double next_time_s() const { return heap_.top().time_s; }  // of the earliest; not empty

  void push(double time_s, int id, bool is_transfer) {
    const std::uint64_t tag = next_sequence_++ << (kIdBits + 1) | (is_transfer ? kTransferBit : 0) |
                              static_cast<std::uint64_t>(id);
    heap_.push(Event{time_s, tag});
  }
  Event pop() {
    const Event top = heap_.top();
    heap_.pop();
    return top;
  }

  static int id(const Event& event) { return static_cast<int>(event.tag & kIdMask); }
  static bool is_transfer(const Event& event) { return (event.tag & kTransferBit) != 0; }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.time_s != b.time_s ? a.time_s > b.time_s : a.tag > b.tag;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  std::uint64_t next_sequence_ = 0;
};

}  // namespace pipeplan::sim
