#pragma once
// Two hand-made datasets whose every field is spelled out, for the file
// tests (test_dataset) and the batch tests (test_batch_builder).

#include "model/dataset.hpp"

namespace distzo::test_support {

// 3 examples, T = 4, pad 0.
//   ex0: 5 6 7 . (len 3) targets at t=2          -> labels row: -  7  -  -
//   ex1: 8 9 10 11 (len 4) targets at t=1,2,3    -> labels row: 9 10 11  -
//   ex2: 4 12 . . (len 2) target at t=1          -> labels row: 12 -  -  -
inline model::Dataset small_causal() {
  model::Dataset d;
  d.task = model::Task::causal_lm;
  d.pad_token_id = 0;
  d.description = "hand-made";
  d.num_examples = 3;
  d.seq_len = 4;
  d.input_ids = {5, 6, 7, 0, /**/ 8, 9, 10, 11, /**/ 4, 12, 0, 0};
  d.lengths = {3, 4, 2};
  d.target_mask = {0, 0, 1, 0, /**/ 0, 1, 1, 1, /**/ 0, 1, 0, 0};
  return d;
}

// 3 examples, T = 4, pad 1, candidates {20, 21, 22}.
inline model::Dataset small_classification() {
  model::Dataset d;
  d.task = model::Task::classification;
  d.pad_token_id = 1;
  d.num_examples = 3;
  d.seq_len = 4;
  d.input_ids = {7, 8, 1, 1, /**/ 9, 10, 11, 12, /**/ 13, 14, 15, 1};
  d.lengths = {2, 4, 3};
  d.candidates = {20, 21, 22};
  d.labels = {2, 0, 1};
  return d;
}

}  // namespace distzo::test_support
