// Measured costs in place of the analytical ones: per-layer times and
// activation bytes from a profile, for the shape being simulated. Exact
// shapes are used as measured; others are interpolated linearly in the
// micro-batch size at the same sequence length (costs are linear in it),
// else in tokens across sequence lengths, and extrapolated the same way,
// which the returned notes say.
#pragma once

#include <string>
#include <vector>

#include "models/layers.h"
#include "models/profile_file.h"
#include "models/time_model.h"

namespace pipeplan::step {

struct ProfiledCosts {
  std::vector<models::LayerTimes> times;  // per layer of the model
  std::vector<std::string> notes;         // interpolations and extrapolations made
};

// Replaces each layer's activation, weight-gradient and working bytes in
// `layers` and returns its times. Throws InputError when the profile is of
// another model or tensor-parallel size, lacks a layer kind, or the shape
// recomputes activations (the profile measured without). A profile at t > 1
// measured one rank's shard on one device: the tensor-parallel collectives
// the passes leave exposed are added from `hardware`'s time model.
ProfiledCosts apply_profile(const models::Profile& profile, const std::string& model_name,
                            const models::TrainingShape& shape, const models::HardwareConfig& hardware,
                            models::ModelLayers& layers);

// "profile FILE (cpu fp32 on <device>, <date>)" plus the notes.
std::string profile_source(const std::string& file, const models::Profile& profile,
                           const std::vector<std::string>& notes);

}  // namespace pipeplan::step
