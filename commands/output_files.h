// Writing the files a command was asked for.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pipeplan::commands {

// Throws InputError naming the option when the file cannot be written.
void write_text_file(const std::string& path, std::string_view contents, std::string_view option);

// A command's files, written together once all are known: every one or none
// (each goes to a temporary beside it, renamed when all are written), and no
// two options may name one file.
class OutputFiles {
 public:
  // Throws InputError when another option already names the file.
  void add(const std::string& path, std::string contents, std::string_view option);
  // Throws InputError naming the option whose file cannot be written; then
  // none is written.
  void write_all() const;

 private:
  struct File {
    std::string path, contents, option;
  };
  std::vector<File> files_;
};

}  // namespace pipeplan::commands
