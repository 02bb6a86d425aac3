#pragma once
// Every distzo kernel. Conventions shared by all of them:
//  - the execution-space instance comes first; all work is queued on it and
//    nothing fences unless the function says so (read_loss);
//  - tensors are LayoutRight Views, shapes in the comments as (rows, cols);
//  - shapes are checked on the host (distzo::Error); index values (token ids,
//    positions, targets) are not, the caller validates them on load.
#include "kernels/activations.hpp"
#include "kernels/attention.hpp"
#include "kernels/embedding.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/linear.hpp"
#include "kernels/losses.hpp"
