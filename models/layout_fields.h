// Each knob of a job's layout (models/job_layout.h) named once: its plan-file
// key, its command-line option, its help, and how its text reads into and
// writes out of a JobLayout. Plan files read and write through this table,
// `simulate --plan` applies the options given over the plan's layout with
// it, simulate's override list is made from it, and the commands take their
// help from it; Python keywords and study keys are the options' names.
//
// A knob added to the layout: a member of JobLayout (of RankLayout when a
// layer's costs read it, of RuntimeFlags for a framework flag), a row here,
// the cost model that reads it, its option in commands/model_options.cc
// (and, for `plan` to fix it, plan_command.cc's request), and the framework
// writers that spell it (planner/frameworks/). Plan files, replays with
// overrides, Python keywords and study keys then take it as they are.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "models/job_layout.h"

namespace pipeplan::models {

enum class FieldKind {
  kValue,  // one value: a number or a name
  kFlag,   // true or false (an option without a value; --no-NAME turns it off where the option has that form)
  kList,   // comma-separated on the command line, a YAML list in a file (per-stage recomputation)
};

struct LayoutField {
  std::string_view key;     // in a plan file: "micro_batch_size"
  std::string_view option;  // on the command line, without dashes: "micro-batch-size"
  std::string_view help;
  FieldKind kind = FieldKind::kValue;
  // Reads `text` (a flag's: "true" or "false") into `layout`; throws
  // InputError naming `field` (the option or the key) for a bad value.
  void (*read)(std::string_view text, std::string_view field, JobLayout& layout) = nullptr;
  // The text a plan file holds; empty: the field is left out (at its default).
  std::string (*write)(const JobLayout& layout) = nullptr;
  // The command line's spelling where it differs from the file's: --precision
  // fp8 where a file has fp8: true. Null: `read` takes both.
  void (*read_option)(std::string_view text, std::string_view field, JobLayout& layout) = nullptr;
};

// In the order a plan file writes them.
std::span<const LayoutField> layout_fields();
// By plan-file key or option name; null for neither.
const LayoutField* find_layout_field(std::string_view key_or_option);

// Reads a command-line value into `layout` through the field's option
// spelling, naming the option (--tp) in errors.
void read_option_value(const LayoutField& field, std::string_view text, JobLayout& layout);

}  // namespace pipeplan::models
