#pragma once
// Token and position embeddings, position ids, and row gathers.
//
// Index validity: token ids, positions and row indices are read on the device
// and are NOT range-checked there (a device-side check would need a fence and
// a host read on every call). Callers validate ids when they are loaded or
// built on the host (dataset loader: 0 <= id < vocab). An out-of-range id reads
// out of bounds (caught by Kokkos' bounds checking in debug builds only).

#include "core/types.hpp"
#include "kernels/weight_matrix.hpp"

namespace distzo::kernels {

/// out[b*T + t, :] = table[tokens[b, t], :] * scale (Gemma 3 scales its
/// embeddings by sqrt(C) rounded to float; scale 1 copies them exactly)
///   out: (B*T, D)   tokens: (B, T) ids in [0, V)   table: (V, D), float32 or
///   2-byte words (decoded exactly)
void embedding_gather(const ExecSpace& space, const Mat& out, const ConstIntMat& tokens,
                      const WeightMatrix& table, real scale = real(1));

/// Position ids from the attention mask: pos = cumsum(mask, dim=1) * mask - 1,
/// exactly Hugging Face's OPTLearnedPositionalEmbedding (no past key values)
/// and, at real tokens, the position_ids transformers' generate() gives Llama.
/// The first real token of a row gets 0, the next 1, ...; padding gets -1,
/// wherever it is (left or right padding). No real token reads a padding
/// position (keys there are masked), so its value never reaches a loss.
///   pos: (B, T)   mask: (B, T), 1 = real token, 0 = padding
void positions_from_mask(const ExecSpace& space, const IntMat& pos, const ConstIntMat& mask);

/// x[b*T + t, :] += table[pos[b, t] + offset, :]
/// OPT's learned position table has max_positions + 2 rows and is indexed
/// with offset 2, so padding (pos = -1) reads row 1, as Hugging Face does.
///   x: (B*T, C)   pos: (B, T) in [-offset, rows - offset)   table: (rows, C),
///   float32 or 2-byte words
void add_positional(const ExecSpace& space, const Mat& x, const ConstIntMat& pos,
                    const WeightMatrix& table, int offset = 2);

/// out[r, :] = x[rows[r], :]  (e.g. the hidden state of each sequence's last
/// real token for a classification head).
///   out: (R, C)   x: (N, C)   rows: (R) in [0, N)
/// out must not alias x.
void gather_rows(const ExecSpace& space, const Mat& out, const ConstMat& x,
                 const ConstIntVec& rows);

/// used[r] = 1 if r is a token id of `tokens` or one of `extra`, else 0: the
/// rows of a (V, D) table that embedding_gather(tokens) and a gather of the
/// `extra` rows read (the perturbed weights cover only those rows of embed_tokens).
///   used: (V)   tokens: (B, T) ids in [0, V)   extra: (K) ids in [0, V)
void mark_rows(const ExecSpace& space, const IntVec& used, const ConstIntMat& tokens,
               const ConstIntVec& extra);

/// The rows that any rank of a node reads (Placement II: w± of the shared
/// embed_tokens must serve every rank's batch). A rank writes its marks as
/// floats into its slice of an exchange buffer, the slices are gathered, and
/// each rank takes their union:
///   publish_rows   slice[r] = used[r]                 slice: (>= V)
///   union_rows     used[r] = max_s buffer[s*L + r]    buffer: (S*L), L >= V
void publish_rows(const ExecSpace& space, const Vec& slice, const ConstIntVec& used);
void union_rows(const ExecSpace& space, const IntVec& used, const ConstVec& buffer, int slices);

}  // namespace distzo::kernels
