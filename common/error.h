// Typed errors thrown by library code. Library code never prints or exits:
// the CLI catches these and maps them to exit codes (InputError -> 2).
#pragma once

#include <stdexcept>
#include <string>

namespace pipeplan {

// Anything the user can fix: a bad option, a malformed file, an impossible
// schedule. what() is one line that names the field and the fix.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

// A file that could not be parsed; the message carries file, line and column.
class ParseError : public InputError {
 public:
  ParseError(const std::string& file, int line, int column, const std::string& message)
      : InputError(file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " +
                   message),
        file_(file),
        line_(line),
        column_(column) {}
  const std::string& file() const { return file_; }
  int line() const { return line_; }
  int column() const { return column_; }

 private:
  std::string file_;
  int line_;
  int column_;
};

// A schedule that breaks a rule (missing action, wrong order, deadlock).
// what() is the one-line verdict; detail() holds the multi-line grid that
// shows where, ranks by steps, with the offending cells marked.
class ScheduleError : public InputError {
 public:
  explicit ScheduleError(const std::string& message, std::string detail = {})
      : InputError(message), detail_(std::move(detail)) {}
  const std::string& detail() const { return detail_; }

 private:
  std::string detail_;
};

}  // namespace pipeplan
