#include "study/expression.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <vector>

#include "common/error.h"
#include "common/quote.h"

namespace pipeplan::study {

struct ExpressionNode {
  enum class Kind { kNumber, kName, kUnary, kBinary, kCall };
  explicit ExpressionNode(Kind node_kind) : kind(node_kind) {}
  Kind kind;
  double number = 0;
  std::string name;  // a variable or a function
  char op = 0;
  std::vector<std::shared_ptr<const ExpressionNode>> children;
};

namespace {

using Node = std::shared_ptr<const ExpressionNode>;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Node parse() {
    if (text_.size() > kLongest) {
      throw InputError(fmt::format("expression {}: {} characters, over the limit of {}", quoted_input(text_),
                                   text_.size(), kLongest));
    }
    Node node = sum();
    skip_space();
    if (at_ < text_.size()) fail("unexpected text");
    return node;
  }

 private:
  [[noreturn]] void fail(std::string_view what) const {
    throw InputError(fmt::format("expression {}: {} at position {}", quoted_input(text_), what, at_ + 1));
  }
  void skip_space() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  bool take(char c) {
    skip_space();
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  static Node binary(char op, Node left, Node right) {
    auto node = std::make_shared<ExpressionNode>(ExpressionNode::Kind::kBinary);
    node->op = op;
    node->children = {std::move(left), std::move(right)};
    return node;
  }

  Node sum() {
    Node node = product();
    while (true) {
      if (take('+')) {
        node = binary('+', node, product());
      } else if (take('-')) {
        node = binary('-', node, product());
      } else {
        return node;
      }
    }
  }

  Node product() {
    Node node = factor();
    while (true) {
      if (take('*')) {
        node = binary('*', node, factor());
      } else if (take('/')) {
        node = binary('/', node, factor());
      } else {
        return node;
      }
    }
  }

  Node factor() {
    // Parentheses, unary minus and calls recurse: bounded, so that no input
    // can exhaust the stack.
    if (++depth_ > kDeepest) fail(fmt::format("nested deeper than {}", kDeepest));
    Node node = unary_or_primary();
    --depth_;
    return node;
  }

  Node unary_or_primary() {
    if (take('-')) {
      auto node = std::make_shared<ExpressionNode>(ExpressionNode::Kind::kUnary);
      node->op = '-';
      node->children = {factor()};
      return node;
    }
    if (take('(')) {
      Node inner = sum();
      if (!take(')')) fail("missing ')'");
      return inner;
    }
    skip_space();
    if (at_ < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[at_])) || text_[at_] == '.')) {
      return number();
    }
    return name_or_call();
  }

  Node number() {
    double value = 0;
    const auto [end, error] = std::from_chars(text_.data() + at_, text_.data() + text_.size(), value);
    if (error != std::errc()) fail("bad number");
    at_ = static_cast<std::size_t>(end - text_.data());
    auto node = std::make_shared<ExpressionNode>(ExpressionNode::Kind::kNumber);
    node->number = value;
    return node;
  }

  Node name_or_call() {
    const std::size_t start = at_;
    while (at_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[at_])) || text_[at_] == '_')) ++at_;
    if (at_ == start) fail("expected a number, a name or '('");
    auto node = std::make_shared<ExpressionNode>(ExpressionNode::Kind::kName);
    node->name = std::string(text_.substr(start, at_ - start));
    if (!take('(')) return node;
    node->kind = ExpressionNode::Kind::kCall;
    if (node->name != "min" && node->name != "max" && node->name != "sqrt") fail("unknown function");
    do {
      node->children.push_back(sum());
    } while (take(','));
    if (!take(')')) fail("missing ')'");
    if (node->children.size() != (node->name == "sqrt" ? 1u : 2u)) fail("wrong number of arguments");
    return node;
  }

  static constexpr std::size_t kLongest = 10'000;
  static constexpr int kDeepest = 200;
  std::string_view text_;
  std::size_t at_ = 0;
  int depth_ = 0;
};

double evaluate_node(const ExpressionNode& node,
                     const std::function<std::optional<double>(const std::string&)>& lookup) {
  auto child = [&](std::size_t i) { return evaluate_node(*node.children[i], lookup); };
  switch (node.kind) {
    case ExpressionNode::Kind::kNumber: return node.number;
    case ExpressionNode::Kind::kName: {
      const std::optional<double> value = lookup(node.name);
      if (!value) throw InputError(fmt::format("expression names '{}', which is no numeric option here", node.name));
      return *value;
    }
    case ExpressionNode::Kind::kUnary: return -child(0);
    case ExpressionNode::Kind::kCall:
      if (node.name == "sqrt") return std::sqrt(child(0));
      return node.name == "min" ? std::min(child(0), child(1)) : std::max(child(0), child(1));
    case ExpressionNode::Kind::kBinary:
      switch (node.op) {
        case '+': return child(0) + child(1);
        case '-': return child(0) - child(1);
        case '*': return child(0) * child(1);
        default: return child(0) / child(1);
      }
  }
  return 0;
}

}  // namespace

double Expression::evaluate(const std::function<std::optional<double>(const std::string& name)>& lookup) const {
  return evaluate_node(*root_, lookup);
}

Expression parse_expression(std::string_view text) { return Expression(Parser(text).parse()); }

}  // namespace pipeplan::study
