#pragma once
// The field table: every deck key once, with its section, type, default
// (the Deck structs' initialisers), allowed values and meaning. The reader,
// the resolved writer, operator==, deck_keys() and the docs tables all follow
// it, in its order. Internal to src/io/deck*.cpp.

#include <functional>
#include <string>
#include <vector>

#include "io/deck.hpp"

namespace distzo::io::deck_detail {

class SectionReader;

struct Field {
  Field(const char* section_name, const char* key_name, bool is_required = false)
      : section(section_name), key(key_name), required(is_required) {}

  const char* section;
  const char* key;
  bool required;
  std::string type;     // docs: "integer", "number", "path", ...
  std::string allowed;  // docs: the values accepted
  std::string meaning;  // docs
  /// The name a resume compares this key under when it alters the run's
  /// trajectory (resume_keys(): "section.key", or "model" for the base
  /// model's digest); empty for every other key.
  std::string resume_key;
  /// A trajectory key no resume can change, not even an allowed one: how
  /// the seed log's rows are read (run_constant_keys()).
  bool run_constant = false;
  std::function<void(const SectionReader&, Deck&)> read;
  /// The value as a YAML scalar that reads back exactly; two decks are equal
  /// when every field writes the same text.
  std::function<std::string(const Deck&)> write;
};

struct SectionInfo {
  const char* name;
  bool required;
};

/// The sections in deck order.
const std::vector<SectionInfo>& sections();
/// Every field, section by section, in deck order.
const std::vector<Field>& fields();

/// The section names in deck order.
std::vector<const char*> section_names();
/// "model, data, ...": the section names for messages.
std::string section_list();
/// The keys of one section in deck order.
std::vector<const char*> keys_of(const std::string& section);

}  // namespace distzo::io::deck_detail
