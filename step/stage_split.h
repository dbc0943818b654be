// Which layers each pipeline stage holds. Layers are numbered as
// models::ModelLayers lists them: 0 the embedding, 1..L the transformer
// blocks, L + 1 the output layer. Stages (p x v of them, in model order) hold
// contiguous runs; splits read from users and made by the planner give every
// stage at least one layer (a block, unless a layout says otherwise).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pipeplan::step {

class StageSplit {
 public:
  // `boundaries`: stages + 1 non-decreasing layer indices from 0 to the
  // layer count; stage k holds layers [boundaries[k], boundaries[k + 1]).
  explicit StageSplit(std::vector<int> boundaries);

  int stages() const { return static_cast<int>(boundaries_.size()) - 1; }
  int first_layer(int stage) const { return boundaries_[static_cast<std::size_t>(stage)]; }
  int end_layer(int stage) const { return boundaries_[static_cast<std::size_t>(stage) + 1]; }
  // Transformer blocks on a stage (the embedding and output layer excluded).
  int transformer_layers(int stage) const;
  std::vector<int> transformer_layer_counts() const;
  const std::vector<int>& boundaries() const { return boundaries_; }
  int layer_count() const { return boundaries_.back(); }

  friend bool operator==(const StageSplit&, const StageSplit&) = default;

 private:
  std::vector<int> boundaries_;
};

// Megatron's default: the blocks split evenly (they must divide), the
// embedding on the first stage, the output layer on the last.
StageSplit even_split(int transformer_layers, int stages);

// Blocks per stage ("--layers 18,22,22,18"), each at least one; they must
// sum to the model's.
StageSplit split_from_counts(const std::vector<int>& blocks_per_stage, int transformer_layers);

// Megatron's pipeline_model_parallel_layout ("Et*3|(tt|)*29,m|L"): stages
// separated by '|', E embedding, t block, L output layer and loss, "x*n"
// and "(...)*n" repeat, commas are cosmetic. Multi-token prediction layers
// ('m') run with the loss: `mtp_layers` of them just before L, or none.
// The stage count must be `stages`.
StageSplit split_from_layout(std::string_view layout, int transformer_layers, int stages, int mtp_layers = 0);

// The number of stages a layout string describes.
int layout_stage_count(std::string_view layout);

// The Megatron layout string of a split, e.g. "Et*18|t*22|t*22|t*18L", with
// `mtp_layers` 'm' before L ("...|t*18mL").
std::string format_layout(const StageSplit& split, int mtp_layers = 0);

// "18,22,22,18"
std::vector<int> parse_layer_counts(std::string_view text);

}  // namespace pipeplan::step
