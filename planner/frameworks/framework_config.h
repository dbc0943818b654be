// A training framework's own configuration for a plan: the fragment to
// merge into the run's config file, and what the framework cannot express.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace pipeplan::planner {

struct FrameworkConfig {
  // The fragment, naming in its comments where it runs otherwise than
  // planned; empty where the framework cannot run the plan at all.
  std::string text;
  // Why the framework cannot run the plan (then text is empty): one line
  // each, naming what stands in the way and what to plan with instead.
  std::vector<std::string> refusals;
  // Where the fragment runs the plan otherwise than planned: what the plan
  // uses that the framework cannot express and what runs in its place.
  std::vector<std::string> notes;
};

// Collects a framework's refusals: a note where the fragment runs the plan
// another way, a refusal where it cannot be written.
class FrameworkRefusals {
 public:
  void note(std::string line) { notes_.push_back(std::move(line)); }
  void refuse(std::string line) { refused_.push_back(std::move(line)); }
  // `header`, the notes as comments (`comment` their marker) and `body`;
  // no text once something is refused.
  FrameworkConfig finish(const std::string& header, const std::string& body, const std::string& comment) const {
    FrameworkConfig config{"", refused_, notes_};
    if (!refused_.empty()) return config;
    config.text = header;
    for (const std::string& line : notes_) config.text += comment + " not as planned: " + line + "\n";
    config.text += body;
    return config;
  }

 private:
  std::vector<std::string> refused_, notes_;
};

}  // namespace pipeplan::planner
