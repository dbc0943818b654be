// Every knob of the layout table (models/layout_fields.h) is an option of
// the commands that take a layout, under the table's name and with its
// help: what Python keywords and study keys are made of.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "commands/in_process.h"
#include "models/layout_fields.h"

namespace pipeplan::commands {
namespace {

const OptionInfo* find_option(const std::vector<OptionInfo>& table, std::string_view name) {
  const auto found =
      std::find_if(table.begin(), table.end(), [&](const OptionInfo& option) { return option.name == name; });
  return found == table.end() ? nullptr : &*found;
}

void expect_every_knob(std::string_view command, std::initializer_list<std::string_view> searched_apart) {
  const std::vector<OptionInfo> table = option_table(command);
  for (const models::LayoutField& field : models::layout_fields()) {
    if (std::find(searched_apart.begin(), searched_apart.end(), field.key) != searched_apart.end()) continue;
    const OptionInfo* option = find_option(table, field.option);
    if (option == nullptr) {
      ADD_FAILURE() << command << " has no --" << field.option;
      continue;
    }
    EXPECT_TRUE(option->description.starts_with(field.help)) << command << " --" << field.option;
    EXPECT_EQ(option->flag, field.kind == models::FieldKind::kFlag) << command << " --" << field.option;
  }
}

TEST(LayoutOptions, SimulateTakesEveryKnob) { expect_every_knob("simulate", {}); }

// The plan's micro-batch count follows from the global batch it is given.
TEST(LayoutOptions, PlanFixesEveryKnobButTheMicroBatchCount) { expect_every_knob("plan", {"microbatches"}); }

}  // namespace
}  // namespace pipeplan::commands
