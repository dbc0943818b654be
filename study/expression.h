// Small arithmetic expressions for closed forms drawn beside measured
// curves: numbers, names, + - * /, parentheses, unary minus, and min(a, b),
// max(a, b), sqrt(a). Names stand for option values; write '-' in an option
// name as '_' ("micro_batch_size").
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace pipeplan::study {

struct ExpressionNode;

class Expression {
 public:
  explicit Expression(std::shared_ptr<const ExpressionNode> root) : root_(std::move(root)) {}
  // Throws InputError naming an unknown name.
  double evaluate(const std::function<std::optional<double>(const std::string& name)>& lookup) const;

 private:
  std::shared_ptr<const ExpressionNode> root_;
};

// Throws InputError with the position of the first problem.
Expression parse_expression(std::string_view text);

}  // namespace pipeplan::study
