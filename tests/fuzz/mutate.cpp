#include "mutate.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <sstream>
#include <vector>

namespace distzo::fuzz {

namespace {

std::string hex(std::uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(value));
  return buffer;
}

// ---------------------------------------------------------------- HDF5 bytes

// Where HDF5 keeps its metadata: the superblock ("\x89HDF") and the v1/v2
// B-trees, local and global heaps, symbol-table nodes, object headers and
// free-space and extensible-array structures of the format specification.
const char* const kSignatures[] = {"\x89HDF", "TREE", "HEAP", "SNOD", "GCOL", "OHDR", "OCHK",
                                   "BTHD",    "BTLF", "BTIN", "FRHP", "FHDB", "FHIB", "FSHD",
                                   "FSSE",    "EAHD", "EAIB", "EADB", "FAHD", "FADB"};

std::vector<std::size_t> signature_offsets(const std::string& bytes) {
  std::vector<std::size_t> offsets;
  for (const char* signature : kSignatures) {
    for (std::size_t at = bytes.find(signature); at != std::string::npos;
         at = bytes.find(signature, at + 1))
      offsets.push_back(at);
  }
  return offsets;
}

// An offset in [0, size): a third near the start, a quarter near the end, some
// just after a metadata signature, the rest anywhere. size > 0.
std::size_t pick_offset(std::size_t size, const std::vector<std::size_t>& signatures, Random& rng) {
  const auto r = rng.below(100);
  if (r < 30) return rng.below(std::min<std::size_t>(size, 4096));
  if (r < 55) return size - 1 - rng.below(std::min<std::size_t>(size, 8192));
  if (r < 75 && !signatures.empty())
    return std::min(size - 1, rng.pick(signatures) + rng.below(96));
  return rng.below(size);
}

// A range length: mostly short (one field), sometimes a whole structure.
std::size_t pick_length(std::size_t available, Random& rng) {
  const std::size_t cap = rng.chance(70) ? 16 : 4096;
  return 1 + rng.below(std::max<std::size_t>(1, std::min(cap, available)));
}

// Values that break sizes, counts and offsets: 0, 1, sign boundaries, all ones.
const std::uint64_t kBoundaries[] = {0,
                                     1,
                                     2,
                                     0x7f,
                                     0x80,
                                     0xff,
                                     0x7fff,
                                     0x8000,
                                     0xffff,
                                     0x10000,
                                     0x7fffffff,
                                     0x80000000,
                                     0xffffffff,
                                     0x100000000,
                                     0x7fffffffffffffff,
                                     0x8000000000000000,
                                     0xffffffffffffffff,
                                     0x4000000000000000};

std::string mutate_bytes_once(std::string& bytes, Random& rng) {
  const std::vector<std::size_t> signatures = signature_offsets(bytes);
  const std::size_t size = bytes.size();
  std::ostringstream what;
  if (size == 0) {
    bytes.push_back(static_cast<char>(rng.below(256)));
    return "append 1 byte to an empty file";
  }
  switch (rng.below(8)) {
    case 0:
    case 1: {  // the most common change: a few flipped bits or bytes
      const auto n = 1 + rng.below(8);
      what << "flip " << n << " byte(s):";
      for (std::uint64_t i = 0; i < n; ++i) {
        const std::size_t at = pick_offset(size, signatures, rng);
        const auto mask =
            static_cast<unsigned char>(rng.chance(50) ? 1u << rng.below(8) : 1 + rng.below(255));
        bytes[at] = static_cast<char>(static_cast<unsigned char>(bytes[at]) ^ mask);
        what << " " << hex(at) << "^" << hex(mask);
      }
      break;
    }
    case 2: {
      const std::size_t width = std::size_t{1}
                                << rng.below(4);  // 1, 2, 4 or 8 bytes, little endian
      std::uint64_t value = kBoundaries[rng.below(sizeof kBoundaries / sizeof kBoundaries[0])];
      if (rng.chance(25))
        value = size + rng.below(64) - 32;  // just past or before the end of the file
      const std::size_t at =
          std::min(pick_offset(size, signatures, rng), size - std::min(size, width));
      for (std::size_t i = 0; i < width && at + i < size; ++i)
        bytes[at + i] = static_cast<char>(value >> (8 * i));
      what << "write " << width << "-byte " << hex(value) << " at " << hex(at);
      break;
    }
    case 3: {
      const std::size_t at = pick_offset(size, signatures, rng);
      const std::size_t n = pick_length(size - at, rng);
      std::fill_n(bytes.begin() + static_cast<std::ptrdiff_t>(at), n, '\0');
      what << "zero [" << hex(at) << ", " << hex(at + n) << ")";
      break;
    }
    case 4: {
      const std::size_t to = rng.chance(50)
                                 ? rng.below(size)
                                 : size - 1 - rng.below(std::min<std::size_t>(size, 1024));
      what << "truncate " << size << " -> " << to << " bytes";
      bytes.resize(to);
      break;
    }
    case 5: {  // a structure duplicated over another: plausible-looking metadata in the wrong place
      const std::size_t from = pick_offset(size, signatures, rng);
      const std::size_t n = pick_length(size - from, rng);
      const std::size_t to = std::min(pick_offset(size, signatures, rng), size - n);
      const std::string chunk = bytes.substr(from, n);
      bytes.replace(to, n, chunk);
      what << "copy [" << hex(from) << ", " << hex(from + n) << ") over " << hex(to);
      break;
    }
    case 6: {  // every later offset now points a little off
      const std::size_t from = pick_offset(size, signatures, rng);
      const std::size_t n = pick_length(size - from, rng);
      const std::size_t to = pick_offset(size, signatures, rng);
      const std::string chunk = bytes.substr(from, n);
      bytes.insert(to, chunk);
      what << "insert a copy of [" << hex(from) << ", " << hex(from + n) << ") at " << hex(to);
      break;
    }
    default: {
      const std::size_t at = pick_offset(size, signatures, rng);
      const std::size_t n = pick_length(size - at, rng);
      bytes.erase(at, n);
      what << "delete [" << hex(at) << ", " << hex(at + n) << ")";
      break;
    }
  }
  return what.str();
}

// ---------------------------------------------------------------- decks

struct Line {
  std::string indent, key, value;  // key empty: not a `key: value` line
  std::string text;
};

Line parse_line(const std::string& text) {
  Line line{"", "", "", text};
  const std::size_t first = text.find_first_not_of(' ');
  const std::size_t colon = text.find(':');
  if (first == std::string::npos || colon == std::string::npos || colon < first ||
      text[first] == '#')
    return line;
  line.indent = text.substr(0, first);
  line.key = text.substr(first, colon - first);
  const std::size_t value_at = text.find_first_not_of(' ', colon + 1);
  line.value = value_at == std::string::npos ? "" : text.substr(value_at);
  return line;
}

std::string join(const Line& line) { return line.indent + line.key + ": " + line.value; }

std::string nested(std::size_t depth, const std::string& open, const std::string& inner,
                   const std::string& close) {
  std::string s;
  for (std::size_t i = 0; i < depth; ++i) s += open;
  s += inner;
  for (std::size_t i = 0; i < depth; ++i) s += close;
  return s;
}

// Nine levels of ten aliases each: a billion nodes for a reader that expands them.
std::string alias_bomb() {
  std::string s = "[&a0 [x, x, x, x, x, x, x, x, x, x]";
  for (int level = 1; level < 9; ++level) {
    s += ", &a" + std::to_string(level) + " [";
    for (int i = 0; i < 10; ++i) s += (i ? ", *a" : "*a") + std::to_string(level - 1);
    s += "]";
  }
  return s + "]";
}

// Values no deck key accepts, or accepts only at its edge. Paths are
// relative: a deck under test must write nowhere but its scratch directory.
std::string nasty_value(Random& rng) {
  static const std::vector<std::string> kValues = {
      "0",
      "-0",
      "+0",
      "1",
      "-1",
      "2",
      "3",
      "16",
      "32",
      "33",
      "2147483647",
      "2147483648",
      "-2147483648",
      "-2147483649",
      "4294967296",
      "9223372036854775807",
      "9223372036854775808",
      "-9223372036854775808",
      "-9223372036854775809",
      "18446744073709551615",
      "18446744073709551616",
      "99999999999999999999999999999",
      "1e308",
      "1e309",
      "-1e308",
      "4.9e-324",
      "1e-400",
      "2.2250738585072014e-308",
      ".nan",
      ".inf",
      "-.inf",
      "0x10",
      "0o17",
      "1_000",
      "1.5",
      "-0.0",
      "1e3",
      "true",
      "false",
      "no",
      "~",
      "null",
      "",
      "\"\"",
      "\"16\"",
      "'x'",
      "[]",
      "{}",
      "[1, 2]",
      "{a: 1}",
      "[[[]]]",
      "!!binary aGVsbG8=",
      "!!int 3",
      "!!str",
      "!!map {}",
      "&anchor 1",
      "*undefined_alias",
      "? a",
      "|",
      ">-",
      "\"\\0\"",
      "\"\\xff\"",
      "\"\\ud800\"",
      "\"\\U0010ffff\"",
      "\xff\xfe",
      "\xc3\x28",
      "é",
      "\t",
      "'",
      "\"",
      "#",
      ": :",
      "- -",
      ".",
      "..",
      "model.h5",
      "train.h5",
      "eval.h5",
      "deck.yaml",
      "out",
      "run",
      "latest",
      "ckpt-000001.h5",
      "run/ckpt-000002.h5",
      "run/ckpt-000001.h5",
      "constant",
      "cosine",
      "offload",
      "resident",
      "bf16",
      "fp16",
      "nearest",
      "stochastic",
      "rademacher",
      "auto",
      "off",
      "mpi",
      "nccl",
      "shared_memory",
      "one_at_a_time",
      "[optim.lr, optim.lr]",
      "[model, data.train, optim.steps, precision.storage]",
      "[nonsense.key]"};
  switch (rng.below(8)) {
    case 0:
      return std::string(std::size_t{1} << (6 + rng.below(15)),
                         "xy/:.\\"[rng.below(6)]);  // 64 B to 1 MiB
    case 1: {
      const std::size_t depth = std::size_t{10} << (2 * rng.below(6));  // 10 to 10240 levels
      return rng.chance(50) ? nested(depth, "[", "1", "]") : nested(depth, "{a: ", "1", "}");
    }
    case 2:
      return alias_bomb();
    default:
      return rng.pick(kValues);
  }
}

// Values each key accepts, at or near the edges of what it accepts, so that
// some mutated decks pass the loader and run in corners: the smallest and
// largest batches, bf16 and fp16 storage, offload with no resident block,
// another file as the model or training set.
const std::map<std::string, std::vector<std::string>> kValidValues = {
    {"path", {"model.h5", "input.h5", "run/ckpt-000001.h5", "run/ckpt-000002.h5", "train.h5"}},
    {"train", {"train.h5", "eval.h5", "lm.h5", "input.h5", "model.h5"}},
    {"eval", {"eval.h5", "train.h5", "lm.h5", "input.h5", "\"\""}},
    {"micro_batch", {"1", "2", "31", "32", "33", "64", "65", "4096"}},
    {"shuffle_seed", {"0", "18446744073709551615"}},
    {"seed", {"0", "18446744073709551615"}},
    {"steps", {"0", "1", "3"}},
    {"lr", {"1e-30", "1e30", "3.4e38", "1"}},
    {"schedule", {"constant", "linear", "cosine"}},
    {"warmup_steps", {"0", "1", "2"}},
    {"eps", {"1e-30", "1e-45", "1e30", "1"}},
    {"weight_decay", {"0", "1", "1e30"}},
    {"queries", {"1", "2", "32"}},
    {"distribution", {"gaussian", "rademacher"}},
    {"z_recipe", {"1", "2"}},
    {"max_nonfinite", {"1", "2147483647"}},
    {"interval", {"0", "1", "2", "9223372036854775807"}},
    {"max_examples", {"0", "1", "9223372036854775807"}},
    {"keep", {"1", "2147483647"}},
    {"resume", {"latest", "\"\"", "run/ckpt-000001.h5", "run/ckpt-000002.h5", "model.h5"}},
    {"allow_changes",
     {"[]", "[optim.lr, data.train, model, precision.storage]", "[optim.steps, optim.steps]"}},
    {"dir", {"out", "run", ".", "new/deeper/dir", "\"with space: and # hash\""}},
    {"log_interval", {"1", "9223372036854775807"}},
    {"perturbation", {"1", "2"}},
    {"data", {"1", "2"}},
    {"check_interval", {"0", "1", "9223372036854775807"}},
    {"watchdog", {"auto", "off", "1e-9", "0.5", "1e300"}},
    {"mode", {"resident", "offload"}},
    {"resident_blocks", {"0", "1", "2", "3", "2147483647"}},
    {"prefetch", {"1", "2", "2147483647"}},
    {"slots", {"1", "2", "3", "2147483647"}},
    {"share_host_master", {"auto", "true", "false"}},
    {"exchange", {"auto", "mpi", "shared_memory", "nccl"}},
    {"perturbed_weights", {"together", "one_at_a_time"}},
    {"storage", {"fp32", "bf16", "fp16"}},
    {"rounding", {"stochastic", "nearest"}}};

// Keys of every deck section (docs/decks.md) and some that are near misses.
const std::vector<std::string> kKeys = {"model",
                                        "data",
                                        "optim",
                                        "eval",
                                        "checkpoint",
                                        "output",
                                        "parallel",
                                        "placement",
                                        "precision",
                                        "path",
                                        "train",
                                        "micro_batch",
                                        "shuffle_seed",
                                        "steps",
                                        "lr",
                                        "schedule",
                                        "warmup_steps",
                                        "eps",
                                        "weight_decay",
                                        "queries",
                                        "distribution",
                                        "z_recipe",
                                        "seed",
                                        "max_nonfinite",
                                        "interval",
                                        "max_examples",
                                        "keep",
                                        "resume",
                                        "allow_changes",
                                        "dir",
                                        "log_interval",
                                        "perturbation",
                                        "check_interval",
                                        "watchdog",
                                        "mode",
                                        "resident_blocks",
                                        "prefetch",
                                        "slots",
                                        "share_host_master",
                                        "exchange",
                                        "perturbed_weights",
                                        "storage",
                                        "rounding",
                                        "<<",
                                        "Steps",
                                        "steps ",
                                        "\"steps\"",
                                        "",
                                        "-"};

std::string mutate_deck_once(std::vector<Line>& lines, Random& rng) {
  std::vector<std::size_t> keyed;
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (!lines[i].key.empty()) keyed.push_back(i);
  if (keyed.empty()) {
    lines.push_back(parse_line("model: " + nasty_value(rng)));
    return "append a model line";
  }
  std::ostringstream what;
  const std::size_t i = rng.pick(keyed);
  Line& line = lines[i];
  const auto valid = kValidValues.find(line.key);
  if (valid != kValidValues.end() && rng.chance(30)) {
    line.value = rng.pick(valid->second);
    line.text = join(line);
    return "line " + std::to_string(i + 1) + ": " + line.key + " = " + line.value;
  }
  switch (rng.below(10)) {
    case 0: {  // one character of one line: YAML's own syntax
      static const std::string kSyntax = ":{}[],#&*!|>'\"%@`-? \t\\";
      std::string& text = line.text;
      if (text.empty()) text = " ";
      const std::size_t at = rng.below(text.size());
      const char c =
          rng.chance(70) ? kSyntax[rng.below(kSyntax.size())] : static_cast<char>(rng.below(256));
      what << "line " << i + 1 << ": byte " << at << " '" << text[at] << "' -> byte "
           << hex(static_cast<unsigned char>(c));
      text[at] = c;
      return what.str();
    }
    case 1: {
      const std::size_t j = rng.pick(keyed);
      Line& other = lines[j];
      what << "swap the values of line " << i + 1 << " (" << line.key << ") and line " << j + 1
           << " (" << other.key << ")";
      std::swap(line.value, other.value);
      other.text = join(other);
      break;
    }
    case 2:
    case 3:
    case 4: {
      line.value = nasty_value(rng);
      what << "line " << i + 1 << ": " << line.key << " = " << line.value.substr(0, 60)
           << (line.value.size() > 60 ? "... (" + std::to_string(line.value.size()) + " bytes)"
                                      : "");
      break;
    }
    case 5: {
      what << "delete line " << i + 1 << " (" << line.text << ")";
      lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(i));
      return what.str();
    }
    case 6: {  // a duplicated key, or with a section header a duplicated section
      std::size_t end = i + 1;
      while (end < lines.size() && lines[end].indent.size() > line.indent.size()) ++end;
      const std::vector<Line> block(lines.begin() + static_cast<std::ptrdiff_t>(i),
                                    lines.begin() + static_cast<std::ptrdiff_t>(end));
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(rng.chance(50) ? end : lines.size()),
                   block.begin(), block.end());
      what << "duplicate lines " << i + 1 << "-" << end << " (" << line.key << ")";
      return what.str();
    }
    case 7: {
      Line added{line.indent, rng.pick(kKeys), nasty_value(rng), ""};
      added.text = join(added);
      what << "insert after line " << i + 1 << ": " << added.text.substr(0, 60);
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(i + 1), added);
      return what.str();
    }
    case 8: {
      const std::size_t shift = 1 + rng.below(4);
      if (rng.chance(50) || line.indent.size() < shift) {
        line.indent += std::string(shift, ' ');
      } else {
        line.indent.resize(line.indent.size() - shift);
      }
      what << "line " << i + 1 << " (" << line.key << "): indent " << line.indent.size();
      break;
    }
    default: {  // block-style nesting: one key per line, each indented deeper
      const std::size_t depth = std::size_t{4} << rng.below(9);  // 4 to 1024 levels
      std::string block;
      for (std::size_t d = 0; d < depth; ++d)
        block += "\n" + line.indent + std::string(2 * (d + 1), ' ') + "a:";
      line.value = block + " 1";
      what << "line " << i + 1 << ": " << line.key << " nested " << depth << " maps deep";
      break;
    }
  }
  line.text = join(line);
  return what.str();
}

}  // namespace

std::string mutate_bytes(std::string& bytes, Random& rng) {
  std::string what;
  for (auto n = 1 + rng.below(3); n > 0; --n) what += mutate_bytes_once(bytes, rng) + "\n";
  return what;
}

std::string mutate_deck(std::string& text, Random& rng) {
  std::vector<Line> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(parse_line(line));
  std::string what;
  for (auto n = 1 + rng.below(3); n > 0; --n) what += mutate_deck_once(lines, rng) + "\n";
  text.clear();
  for (const Line& line : lines) text += line.text + "\n";
  return what;
}

}  // namespace distzo::fuzz
