#pragma once
/// @file attribute.hpp
/// A named scalar attribute (real, signed, unsigned or text) as stored in the HDF5
/// result file (models.md §5: attributes are scalars, seeds are uint64). Models
/// describe themselves with these; analysis writes them without knowing the model.

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace topokpm {

struct Attribute {
    std::string name;
    std::variant<double, std::int64_t, std::uint64_t, std::string> value;
};

using AttributeList = std::vector<Attribute>;

}  // namespace topokpm
