#include "common/yaml_document_check.h"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <vector>

#include "common/error.h"

namespace pipeplan {
namespace {

// Walks a text's events, counting each node as many times as aliases
// repeat it, and remembering where a second document with content starts.
class DocumentWalk : public YAML::EventHandler {
 public:
  explicit DocumentWalk(const std::string& file) : file_(file) {}

  bool second_has_content() const { return content_; }
  const YAML::Mark& second_start() const { return second_start_; }

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ == 2) second_start_ = mark;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { leaf(mark, anchor); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, const std::string&) override {
    leaf(mark, anchor);
    seen();
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    seen();
    if (std::any_of(open_.begin(), open_.end(), [&](const Open& node) { return node.anchor == anchor; })) {
      fail(mark, "an alias inside the node it names (as in '&a [*a]') makes a tree that contains itself; "
                 "write the value out instead");
    }
    const auto known = sizes_.find(anchor);
    add(mark, known == sizes_.end() ? 1 : known->second);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(mark, anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(mark, anchor);
  }
  void OnMapEnd() override { close(); }

 private:
  // A collection whose end is still to come, and the nodes seen inside it.
  struct Open {
    YAML::anchor_t anchor;
    YAML::Mark mark;
    long long nodes;
  };

  void seen() { content_ = content_ || documents_ == 2; }

  void leaf(const YAML::Mark& mark, YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor) sizes_[anchor] = 1;
    add(mark, 1);
  }
  void open(const YAML::Mark& mark, YAML::anchor_t anchor) {
    seen();
    count(mark, 1);
    open_.push_back({anchor, mark, 1});
  }
  void close() {
    const Open done = open_.back();
    open_.pop_back();
    if (done.anchor != YAML::NullAnchor) sizes_[done.anchor] = done.nodes;
    if (!open_.empty()) open_.back().nodes += done.nodes;  // counted in the total as they came
  }

  // A node (or an alias's copy of `nodes`) inside the enclosing collection.
  void add(const YAML::Mark& mark, long long nodes) {
    count(mark, nodes);
    if (!open_.empty()) open_.back().nodes += nodes;
  }

  // The text's nodes so far, aliases expanded: failing past the bound keeps
  // every count below twice it.
  void count(const YAML::Mark& mark, long long nodes) {
    total_ += nodes;
    if (total_ > kMaxYamlNodes) {
      fail(mark, fmt::format("aliases expand this text to over {} nodes; write the values out or use fewer "
                             "aliases of aliases",
                             kMaxYamlNodes));
    }
  }

  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& message) const {
    throw ParseError(file_, std::max(mark.line, 0) + 1, std::max(mark.column, 0) + 1, message);
  }

  const std::string& file_;
  int documents_ = 0;
  bool content_ = false;
  YAML::Mark second_start_;
  std::vector<Open> open_;
  std::map<YAML::anchor_t, long long> sizes_;
  long long total_ = 0;
};

}  // namespace

void check_yaml_document(const std::string& text, const std::string& file) {
  // yaml-cpp's LoadAll never ends on some malformed texts (",," is an
  // endless run of empty documents), so documents are walked one at a
  // time, two at most, and empty ones count for nothing.
  std::stringstream stream(text);
  YAML::Parser parser(stream);
  DocumentWalk walk(file);
  if (parser.HandleNextDocument(walk)) parser.HandleNextDocument(walk);
  if (walk.second_has_content()) {
    throw ParseError(file, walk.second_start().line + 1, walk.second_start().column + 1,
                     "a second YAML document (after '---'): a file holds one; remove the '---' or split the file");
  }
}

}  // namespace pipeplan
