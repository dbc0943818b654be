// The `pipeplan._pipeplan` extension: runs `plan`, `simulate`, `goodput` and
// `serve` in this process and hands back their --json output as Python
// objects. pipeplan/__init__.py turns keyword arguments into options.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "commands/in_process.h"
#include "common/error.h"
#include "common/quote.h"

namespace py = pybind11;

namespace {

// JSON as Python: objects become dicts in the order the command wrote them.
py::object to_python(const nlohmann::ordered_json& value) {
  switch (value.type()) {
    case nlohmann::ordered_json::value_t::null:
      return py::none();
    case nlohmann::ordered_json::value_t::boolean:
      return py::bool_(value.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return py::int_(value.get<long long>());
    case nlohmann::ordered_json::value_t::number_unsigned:
      return py::int_(value.get<unsigned long long>());
    case nlohmann::ordered_json::value_t::number_float:
      return py::float_(value.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return py::str(value.get_ref<const std::string&>());
    case nlohmann::ordered_json::value_t::array: {
      py::list list;
      for (const auto& item : value) list.append(to_python(item));
      return list;
    }
    case nlohmann::ordered_json::value_t::object: {
      py::dict dict;
      for (const auto& [key, item] : value.items()) dict[py::str(key)] = to_python(item);
      return dict;
    }
    default:
      return py::none();  // binary and discarded values: the commands write neither
  }
}

py::object run(const std::string& command, const std::vector<std::string>& args) {
  nlohmann::ordered_json result;
  {
    // Plans take seconds on several threads: other Python threads run meanwhile.
    py::gil_scoped_release release;
    result = pipeplan::commands::run_as_command_line(command, args);
  }
  return to_python(result);
}

std::vector<std::tuple<std::string, std::string, bool, bool>> option_table(const std::string& command) {
  std::vector<std::tuple<std::string, std::string, bool, bool>> table;
  for (auto& option : pipeplan::commands::option_table(command)) {
    table.emplace_back(std::move(option.name), std::move(option.description), option.flag, option.several);
  }
  return table;
}

}  // namespace

PYBIND11_MODULE(_pipeplan, module) {
  module.doc() = "pipeplan's commands, in-process (use the pipeplan package, not this module)";
  module.attr("__version__") = PIPEPLAN_VERSION;
  // Every error the user can fix, with the line the CLI would print.
  static py::exception<pipeplan::InputError> input_error(module, "InputError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr raised) {
    try {
      if (raised) std::rethrow_exception(raised);
    } catch (const pipeplan::ScheduleError& error) {
      const std::string detail = error.detail().empty() ? "" : "\n" + error.detail();
      input_error((pipeplan::one_line(error.what()) + detail).c_str());
    } catch (const pipeplan::InputError& error) {
      input_error(pipeplan::one_line(error.what()).c_str());
    }
  });
  module.def("run", &run, py::arg("command"), py::arg("args"),
             "Runs a command with command-line arguments; returns its --json output");
  module.def("option_table", &option_table, py::arg("command"),
             "The command's long options (without dashes) as (name, help text, is a flag, takes several values)");
}
