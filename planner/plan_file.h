// A plan as a YAML file: what `pipeplan plan --out` writes and `pipeplan
// simulate --plan` replays with identical figures.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/plan.h"

namespace pipeplan::planner {

// Consecutive pipeline ranks on one GPU kind of a cluster of several
// (planner/mixed/mixed_pipeline.h): the kind by its hardware name.
struct PlanSegment {
  std::string kind;
  int stages = 1;
  int tp = 1;
  friend bool operator==(const PlanSegment&, const PlanSegment&) = default;
};

struct PlanFile {
  std::string model;     // zoo name or path, as given
  std::string hardware;  // built-in name or path, as given
  int global_batch = 0;
  int seq_len = 0;
  PlanCandidate plan;    // the configuration (figures are informative)
  std::string layout;    // Megatron layout of the split, checked against the model when replayed
  std::string profile;   // the measured profile it was costed with, if any (a path)
  std::int64_t memory_cap_bytes = 0;  // the cap it was searched under when given (0: the GPU's usable memory)
  // Read from a file: where, and where its layout is (for errors the model
  // finds in it on replay).
  std::string path = {};
  int layout_line = 0, layout_column = 0;
  // A pipeline over several GPU kinds of the cluster `hardware` names, in
  // pipeline order (its tp is the first one's); empty: one kind.
  std::vector<PlanSegment> segments = {};
  // The GPUs the plan takes: t x c x p x d, or each segment's stages x t x c x d.
  long long gpus() const;
};

std::string write_plan_yaml(const PlanFile& plan);
// Throws ParseError naming the file, line and field.
PlanFile read_plan_yaml(const std::string& path);

}  // namespace pipeplan::planner
