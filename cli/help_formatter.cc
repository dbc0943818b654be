#include "cli/help_formatter.h"

#include <algorithm>
#include <memory>
#include <string>

#include "common/text_wrap.h"

namespace pipeplan::cli {
namespace {

class WrappingFormatter : public CLI::Formatter {
 public:
  std::string make_description(const CLI::App* app) const override {
    const std::string description = CLI::Formatter::make_description(app);
    std::string wrapped;
    std::size_t begin = 0;
    while (begin < description.size()) {
      const std::size_t end = std::min(description.find('\n', begin), description.size());
      wrapped += wrap(description.substr(begin, end - begin), "", kTextWidth);
      begin = end + 1;
    }
    return wrapped;
  }

  std::string make_option_desc(const CLI::Option* option) const override {
    const std::string description = CLI::Formatter::make_option_desc(option);
    const std::size_t width = kTextWidth - get_column_width();
    if (description.size() <= width) return description;
    // CLI11 indents the lines after a newline under the description column.
    std::string wrapped = wrap(description, "", width);
    wrapped.pop_back();  // wrap's closing newline
    return wrapped;
  }
};

}  // namespace

void use_wrapping_help(CLI::App& app) { app.formatter(std::make_shared<WrappingFormatter>()); }

}  // namespace pipeplan::cli
