// How often a cluster fails and what a restart and a checkpoint cost it:
// the description `pipeplan goodput` plans the run with. A hardware file
// may give it as `reliability:`, field by field over the built-in
// defaults (Llama 3's pre-training interruptions).
#pragma once

#include <string>
#include <vector>

namespace YAML {
class Node;
}

namespace pipeplan::models {

// A share of the job's failures by cause, and whether such a failure
// takes its node out for repair (a GPU or host fault) or not (software).
struct FailureCause {
  std::string name;
  double share = 0;
  bool takes_node_out = true;
};

struct ReliabilityConfig {
  // Mean time between failures that take down one GPU, per GPU; and of a
  // node's other parts (host, NIC, switch port, software), per node.
  double gpu_mtbf_s = 0;
  double node_mtbf_s = 0;
  // Checkpoint storage, bytes per second: per node (0: the node's network
  // ports, network.bandwidth x GPUs) and in all (0: no limit beyond the
  // nodes').
  double storage_write_per_node = 0;
  double storage_read_per_node = 0;
  double storage_write_total = 0;
  double storage_read_total = 0;
  // Host memory per node an asynchronous checkpoint's snapshot must fit in.
  double host_memory_per_node = 0;
  // A restart: the job relaunched, its communicators set up, and steps run
  // before it trains at its pace again (besides loading the checkpoint).
  double relaunch_s = 0;
  double init_s = 0;
  int warmup_steps = 0;
  // The failures by cause, shares adding up to at most 1 (empty: unknown;
  // every failure then takes a node out).
  std::vector<FailureCause> causes;
  // Of the job's failures, the share that takes a node out for repair.
  double node_out_share() const;
  std::string source;
};

// Llama 3's: 419 unexpected interruptions in 54 days on 16,384 H100s
// (2,048 nodes of 8), 58.7 % of them GPU issues, spread evenly over the
// GPU-hours and the rest over the node-hours, 78 % confirmed or suspected
// hardware (a node out), the rest software and other causes; 2 TB/s of sustained storage
// throughput; a DGX H100's 2 TB of host memory. The restart's parts have
// no published figure and are assumed.
ReliabilityConfig default_reliability();

// Reads a `reliability:` map over `config` (only what it gives). Throws
// ParseError naming the file, line and field.
void read_reliability(const YAML::Node& node, const std::string& file, ReliabilityConfig& config);

}  // namespace pipeplan::models
