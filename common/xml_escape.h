// Escaping text for XML and HTML (SVG charts, trace names, reports).
#pragma once

#include <string>
#include <string_view>

namespace pipeplan {

// Replaces & < > " ' with entities and drops control characters XML forbids.
std::string escape_xml(std::string_view text);

}  // namespace pipeplan
