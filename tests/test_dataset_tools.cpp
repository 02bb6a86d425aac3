// Datasets written by tools/make_dataset.py (Python, h5py) load in C++ with
// exactly the token ids the tokenizer produced. tests/data/sst_fixture.h5 and
// sst_fixture_ids.txt were written together by the tool (command in the
// file's description attribute); the .txt holds LABEL<TAB>ids per example
// from tokenizer.encode(prompt).ids, and "# candidates:" / "# pad_token_id:".

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "io/dataset.hpp"

namespace {

using namespace distzo;

TEST(DatasetTools, PythonWrittenDatasetMatchesTokenizerIds) {
  const std::string base = std::string(DISTZO_TEST_DATA) + "/sst_fixture";
  std::ifstream in(base + "_ids.txt");
  ASSERT_TRUE(in.good());
  std::vector<int> labels, candidates;
  std::vector<std::vector<int>> ids;
  std::int64_t pad = -1;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# candidates:", 0) == 0) {
      std::istringstream is(line.substr(13));
      for (int v; is >> v;) candidates.push_back(v);
    } else if (line.rfind("# pad_token_id:", 0) == 0) {
      pad = std::stoll(line.substr(15));
    } else if (!line.empty() && line[0] != '#') {
      std::istringstream is(line);
      int label;
      is >> label;
      labels.push_back(label);
      ids.emplace_back();
      for (int v; is >> v;) ids.back().push_back(v);
    }
  }
  ASSERT_FALSE(ids.empty());

  const io::Dataset d = io::load_dataset(base + ".h5", 4096);
  EXPECT_EQ(d.task, model::Task::classification);
  EXPECT_EQ(d.pad_token_id, pad);
  EXPECT_EQ(d.candidates, candidates);
  ASSERT_EQ(d.num_examples, static_cast<std::int64_t>(ids.size()));
  for (std::int64_t i = 0; i < d.num_examples; ++i) {
    ASSERT_EQ(d.lengths[i], static_cast<int>(ids[i].size())) << "example " << i;
    for (std::int64_t t = 0; t < d.seq_len; ++t)
      EXPECT_EQ(d.token(i, t), t < d.lengths[i] ? ids[i][t] : pad)
          << "example " << i << ", t " << t;
    EXPECT_EQ(d.labels[i], labels[i]) << "example " << i;
  }
}

}  // namespace
