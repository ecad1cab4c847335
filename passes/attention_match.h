// Attention written out as core ATen writes scaled_dot_product_attention's math path, matched
// back into one scaled_dot_product_attention node, so that inductor for CUDA can run it as one
// cuDNN fused-attention call (docs/gpu.md, "Fused attention").
//
// The pattern, as torch.export's run_decompositions() and fxc's --dtype conversion leave it:
//
//   qs = mul(q, c1)                          q [B, H, Sq, D]; c1 optional
//   kt = mul(permute(k, [0, 1, 3, 2]), c2)   k [B, H, Skv, D]; c2 optional, before or after
//   s  = view(bmm(view(clone(expand(qs))), view(clone(expand(kt)))), [B, H, Sq, Skv])
//   s  = s · c3 or s / c3                    optional
//   s  = s + mask                            optional, mask broadcasting to [B, H, Sq, Skv]
//   p  = _softmax(s, -1)                     [+ PyTorch's _safe_softmax: where(all -inf, 0, p)]
//   o  = view(bmm(view(expand(p)), view(clone(expand(v)))), [B, H, Sq, Dv])
//
// with dtype casts (_to_copy) allowed between the steps and the clones and expands optional.
// Each match whose q, k, v (and mask) cudnn_attention() accepts becomes
// scaled_dot_product_attention(q, k, v, mask, scale = c1·c2·c3); the nodes only it used go.
#pragma once

#include "frontend/graph.h"

namespace fxc {

/// `g` with every matched attention replaced (see above); `matched`, when given, receives the
/// number of matches. Returns `g` unchanged when nothing matches.
Graph match_attention(const Graph& g, int* matched = nullptr);

} // namespace fxc
