# Cross-checks fxc's meta functions against PyTorch: runs each case in torch on real tensors
# with the given layouts and compares dtype, sizes, strides and storage offset (or that both fail).
# Usage: tools/meta_oracle/run.sh (needs python3-torch; Debian's 1.13 differs from 2.x in a few
# known places: bool Scalars through torch.ops, squeeze.dims, int32 indices, copy/slice_scatter).
import json, subprocess, sys, torch
DT = {torch.float32:'f32', torch.float64:'f64', torch.float16:'f16', torch.bfloat16:'bf16', torch.int64:'i64',
      torch.int32:'i32', torch.int16:'i16', torch.int8:'i8', torch.uint8:'u8', torch.bool:'b8'}
RDT = {v:k for k,v in DT.items()}
cases = []
def mk(dtype, sizes, strides=None, offset=0):
    if strides is None:
        t = torch.empty(sizes, dtype=dtype)
        strides = list(t.stride())
    need = offset + 1 + sum((s-1)*st for s, st in zip(sizes, strides)) if all(s > 0 for s in sizes) else offset + 1
    base = torch.zeros(max(need, 1), dtype=dtype)
    if dtype.is_floating_point: base.uniform_(0.1, 1)
    elif dtype == torch.bool: pass
    else: base.random_(0, 2)
    return base.as_strided(sizes, strides, offset)
def case(target, inputs, call):
    """inputs: dict name -> tensor; call: list of (kwname, (kind, value))"""
    cases.append(dict(target=target, inputs=inputs, call=call))
def T(n): return ('', ('t', n))
def I(v): return ('', ('i', v))
def F(v): return ('', ('f', v))
def B(v): return ('', ('b', v))
def Is(v): return ('', ('is', v))
def KW(k, a): return (k, a)

layouts = {
 'contig': lambda d: mk(d, [2,3,4,5]),
 'cl': lambda d: mk(d, [2,3,4,5], [60,1,15,3]),
 'perm': lambda d: mk(d, [2,3,4,5], [1,2,6,24]),
 'slice': lambda d: mk(d, [2,3,4,5], [120,40,10,1], 7),
 'piece': lambda d: mk(d, [2,3,4,5], [60,5,15,1], 3),
 'exp': lambda d: mk(d, [2,3,4,5], [0,5,0,1]),
 'ones': lambda d: mk(d, [2,1,4,1], [4,9,1,3]),
}
small = {
 'row': lambda d: mk(d, [5]),
 'col': lambda d: mk(d, [4,1]),
 'bcast': lambda d: mk(d, [3,1,5], [1,3,3]),
 'scal': lambda d: mk(d, []),
}
f32 = torch.float32
for la, fa in layouts.items():
    for lb, fb in list(layouts.items()) + list(small.items()):
        case('aten.add.Tensor', {'a': fa(f32), 'b': fb(f32)}, [T('a'), T('b')])
        case('aten.mul.Tensor', {'a': fb(f32), 'b': fa(f32)}, [T('a'), T('b')])
    case('aten.relu.default', {'a': fa(f32)}, [T('a')])
    case('aten.mul.Scalar', {'a': fa(f32)}, [T('a'), F(2.0)])
    case('aten.eq.Scalar', {'a': fa(f32)}, [T('a'), F(2.0)])
    case('aten.clone.default', {'a': fa(f32)}, [T('a')])
    case('aten.clone.default', {'a': fa(f32)}, [T('a'), KW('memory_format', ('mf', 1))])
    case('aten._to_copy.default', {'a': fa(f32)}, [T('a'), KW('dtype', ('dt', 'f16'))])
    case('aten.full_like.default', {'a': fa(f32)}, [T('a'), I(0)])
    case('aten.contiguous.default', {'a': fa(f32)}, [T('a')])
    case('aten.where.self', {'c': fa(torch.bool), 'a': fa(f32), 'b': mk(f32, [])}, [T('c'), T('a'), T('b')])
    case('aten.where.self', {'c': mk(torch.bool, [5]), 'a': fa(f32), 'b': fa(f32)}, [T('c'), T('a'), T('b')])
    case('aten.sum.dim_IntList', {'a': fa(f32)}, [T('a'), Is([1]), B(True)])
    case('aten.amax.default', {'a': fa(f32)}, [T('a'), Is([-1])])
    case('aten._softmax.default', {'a': fa(f32)}, [T('a'), I(-1), B(False)])
    case('aten.native_layer_norm.default', {'a': fa(f32)}, [T('a'), Is([5]), ('', ('none', None)), ('', ('none', None)), F(1e-5)])
    for shape in ([6, 20], [2, 60], [-1], [2, 3, 20], [120], [2, 12, 5], [1, 2, 3, 4, 5]):
        case('aten.view.default', {'a': fa(f32)}, [T('a'), Is(shape)])
        case('aten.reshape.default', {'a': fa(f32)}, [T('a'), Is(shape)])
    case('aten.transpose.int', {'a': fa(f32)}, [T('a'), I(1), I(-1)])
    case('aten.unsqueeze.default', {'a': fa(f32)}, [T('a'), I(2)])
    case('aten.slice.Tensor', {'a': fa(f32)}, [T('a'), I(2), I(1), I(-1), I(2)])
    case('aten.select.int', {'a': fa(f32)}, [T('a'), I(3), I(-2)])
    case('aten.expand.default', {'a': fa(f32)}, [T('a'), Is([3, 2, 3, -1, 5])])
    case('aten.split.Tensor', {'a': fa(f32)}, [T('a'), I(2), I(2)])
    case('aten.flatten.using_ints', {'a': fa(f32)}, [T('a'), I(1), I(2)])
    case('aten.conv2d.default', {'a': fa(f32), 'w': mk(f32, [6, 3, 3, 3])}, [T('a'), T('w'), ('', ('none', None)), Is([1]), Is([1])])
    case('aten.max_pool2d_with_indices.default', {'a': fa(f32)}, [T('a'), Is([2, 2])])
    case('aten.adaptive_avg_pool2d.default', {'a': fa(f32)}, [T('a'), Is([1, 1])])
    case('aten.adaptive_avg_pool2d.default', {'a': fa(f32)}, [T('a'), Is([2, 2])])
    case('aten.constant_pad_nd.default', {'a': fa(f32)}, [T('a'), Is([1, 1])])
    case('aten.constant_pad_nd.default', {'a': fa(f32)}, [T('a'), Is([-1, 0])])
    case('aten.cat.default', {'a': fa(f32), 'b': fa(f32)}, [('', ('ts', ['a', 'b'])), I(1)])
    case('aten.index.Tensor', {'a': fa(f32), 'i': mk(torch.int64, [2, 2])}, [T('a'), ('', ('ts', [None, 'i']))])
    case('aten.index.Tensor', {'a': fa(f32), 'i': mk(torch.int64, [3])}, [T('a'), ('', ('ts', ['i', None, 'i']))])
    case('aten.index.Tensor', {'a': fa(f32), 'i': mk(torch.int64, [3])}, [T('a'), ('', ('ts', [None, None, 'i']))])
    case('aten.matmul.default', {'a': fa(f32), 'b': mk(f32, [5, 7])}, [T('a'), T('b')])
    case('aten.gelu.default', {'a': fa(f32)}, [T('a')])
# promotion
dts = [torch.bool, torch.uint8, torch.int8, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32, torch.float64]
for da in dts:
    for db in dts:
        case('aten.add.Tensor', {'a': mk(da, [3]), 'b': mk(db, [3])}, [T('a'), T('b')])
        case('aten.mul.Tensor', {'a': mk(da, [3]), 'b': mk(db, [])}, [T('a'), T('b')])
        case('aten.div.Tensor', {'a': mk(da, [3]), 'b': mk(db, [3])}, [T('a'), T('b')])
        case('aten.where.self', {'c': mk(torch.bool, [3]), 'a': mk(da, [3]), 'b': mk(db, [3])}, [T('c'), T('a'), T('b')])
    for s in (F(1.5), I(2), B(True)):
        case('aten.add.Scalar', {'a': mk(da, [3])}, [T('a'), s])
        case('aten.div.Scalar', {'a': mk(da, [3])}, [T('a'), s])
        case('aten.pow.Tensor_Scalar', {'a': mk(da, [3])}, [T('a'), s])
    case('aten.sum.default', {'a': mk(da, [3])}, [T('a')])
    case('aten.exp.default', {'a': mk(da, [3])}, [T('a')])
    case('aten.clamp.default', {'a': mk(da, [3])}, [T('a'), F(0.5)])
    case('aten.any.dim', {'a': mk(da, [3])}, [T('a'), I(0)])
case('aten.arange.default', {}, [I(5)]); case('aten.arange.start_step', {}, [I(0), F(1.0), F(0.3)])
case('aten.arange.start_step', {}, [I(10), I(1), I(-3)]); case('aten.full.default', {}, [Is([2]), I(3)])
case('aten.full.default', {}, [Is([2]), B(True)]); case('aten.scalar_tensor.default', {}, [I(3)])

for la, fa in layouts.items():
    x = fa(f32)
    C = 3
    w = mk(f32, [C]); 
    case('aten.native_batch_norm.default', {'a': x, 'w': w, 'b': mk(f32, [C]), 'm': mk(f32, [C]), 'v': mk(f32, [C])}, [T('a'), T('w'), T('b'), T('m'), T('v'), B(False), F(0.1), F(1e-5)])
    case('aten.batch_norm.default', {'a': x, 'w': w, 'b': mk(f32, [C]), 'm': mk(f32, [C]), 'v': mk(f32, [C])}, [T('a'), T('w'), T('b'), T('m'), T('v'), B(False), F(0.1), F(1e-5), B(False)])
    case('aten.max_pool2d.default', {'a': x}, [T('a'), Is([3]), Is([1]), Is([1])])
    case('aten.convolution.default', {'a': x, 'w': mk(f32, [6, 1, 2, 2])}, [T('a'), T('w'), ('', ('none', None)), Is([1, 1]), Is([0, 0]), Is([1, 1]), B(False), Is([0, 0]), I(3)])
    case('aten.convolution.default', {'a': x, 'w': mk(f32, [3, 2, 2, 2])}, [T('a'), T('w'), ('', ('none', None)), Is([2, 2]), Is([1, 1]), Is([1, 1]), B(True), Is([1, 1]), I(1)])
    case('aten.cat.default', {'a': x, 'b': mk(f32, [2, 3, 4, 5], [60, 1, 15, 3])}, [('', ('ts', ['a', 'b'])), I(0)])
    case('aten.masked_fill.Scalar', {'a': x, 'm': mk(torch.bool, [4, 5])}, [T('a'), T('m'), F(1.0)])
    case('aten.roll.default', {'a': x}, [T('a'), Is([1]), Is([2])])
    case('aten.squeeze.dims', {'a': x}, [T('a'), Is([1, 3])])
    case('aten.permute.default', {'a': x}, [T('a'), Is([3, 1, 0, 2])])
    case('aten.unflatten.int', {'a': x}, [T('a'), I(3), Is([5, 1])])
    case('aten.gather.default', {'a': x, 'i': mk(torch.int64, [2, 3, 4, 2])}, [T('a'), I(3), T('i')])
    case('aten.index_select.default', {'a': x, 'i': mk(torch.int64, [3])}, [T('a'), I(1), T('i')])
    case('aten.scatter_add.default', {'a': x, 'i': mk(torch.int64, [2, 3, 4, 2]), 's': mk(f32, [2, 3, 4, 5])}, [T('a'), I(3), T('i'), T('s')])
    case('aten.slice_scatter.default', {'a': x, 's': mk(f32, [2, 3, 4, 2])}, [T('a'), T('s'), I(3), I(1), I(5), I(2)])
    case('aten.copy.default', {'a': x, 's': mk(f32, [5])}, [T('a'), T('s')])
    case('aten.new_zeros.default', {'a': x}, [T('a'), Is([3, 2])])
    case('aten.logical_not.default', {'a': x}, [T('a')])
    case('aten.logical_and.default', {'a': x, 'b': mk(torch.bool, [5])}, [T('a'), T('b')])
    case('aten.neg.default', {'a': x}, [T('a')])
    case('aten.sigmoid.default', {'a': x}, [T('a')])
    case('aten.mean.dim', {'a': x}, [T('a'), Is([-1, -2]), B(True)])
    case('aten.argmax.default', {'a': x}, [T('a'), I(1), B(True)])
    case('aten.argmax.default', {'a': x}, [T('a')])
    case('aten.log_softmax.int', {'a': x}, [T('a'), I(1)])
    case('aten.lift_fresh_copy.default', {'a': x}, [T('a')])
    case('aten.alias.default', {'a': x}, [T('a')])
    case('aten.to.dtype', {'a': x}, [T('a'), ('', ('dt', 'f32'))])
    case('aten.to.dtype', {'a': x}, [T('a'), ('', ('dt', 'f64'))])
    case('aten.pad.default', {'a': x}, [T('a'), Is([1, 2]), ('', ('s', 'reflect'))])
    case('aten.pad.default', {'a': x}, [T('a'), Is([1, 2, 0, 1]), ('', ('s', 'replicate'))])
    case('aten.constant_pad_nd.default', {'a': x}, [T('a'), Is([0, 0, -1, 0])])
    case('aten.as_strided.default', {'a': x}, [T('a'), Is([3, 3]), Is([2, 1])])
    case('aten.split_with_sizes.default', {'a': x}, [T('a'), Is([1, 3]), I(2)])
    case('aten.index.Tensor', {'a': x, 'i': mk(torch.int64, [3], [2]), 'j': mk(torch.int32, [1])}, [T('a'), ('', ('ts', [None, 'j', 'i']))])
    case('aten.where.self', {'c': mk(torch.bool, [4, 1]), 'a': x, 'b': mk(f32, [5])}, [T('c'), T('a'), T('b')])
    case('aten.hardswish.default', {'a': x}, [T('a')])
    case('aten.gelu.default', {'a': x}, [T('a'), KW('approximate', ('s', 'tanh'))])
for sa, sb in [([5], [5]), ([3, 5], [5]), ([5], [5, 2]), ([2, 3, 5], [5, 4]), ([2, 3, 5], [5]), ([5], [2, 5, 4]), ([3, 5], [2, 5, 4]), ([2, 1, 3, 5], [4, 5, 2])]:
    case('aten.matmul.default', {'a': mk(f32, sa), 'b': mk(f32, sb)}, [T('a'), T('b')])
case('aten.linear.default', {'a': mk(f32, [2, 3, 5]), 'w': mk(f32, [4, 5]), 'b': mk(f32, [4])}, [T('a'), T('w'), T('b')])
case('aten.linear.default', {'a': mk(f32, [2, 3, 5], [1, 10, 2]), 'w': mk(f32, [4, 5]), 'b': mk(f32, [4])}, [T('a'), T('w'), T('b')])
case('aten.linear.default', {'a': mk(f32, [5]), 'w': mk(f32, [4, 5])}, [T('a'), T('w')])
case('aten.addmm.default', {'b': mk(f32, [4]), 'x': mk(f32, [3, 5], [1, 3]), 'w': mk(f32, [5, 4], [1, 5])}, [T('b'), T('x'), T('w')])
case('aten.bmm.default', {'x': mk(f32, [2, 3, 5], [1, 2, 6]), 'w': mk(f32, [2, 5, 4])}, [T('x'), T('w')])
case('aten.embedding.default', {'w': mk(f32, [10, 4]), 'i': mk(torch.int64, [2, 3], [1, 2])}, [T('w'), T('i')])
case('aten.mean.default', {'a': mk(torch.int64, [3])}, [T('a')])
case('aten.sum.dim_IntList', {'a': mk(f32, [2, 3])}, [T('a'), Is([])])
case('aten.amax.default', {'a': mk(f32, [2, 3])}, [T('a'), Is([]), B(True)])
case('aten.squeeze.dim', {'a': mk(f32, [])}, [T('a'), I(-1)])
case('aten.unsqueeze.default', {'a': mk(f32, [])}, [T('a'), I(0)])
case('aten.expand.default', {'a': mk(f32, [])}, [T('a'), Is([2, 3])])
case('aten.view.default', {'a': mk(f32, [])}, [T('a'), Is([1, 1])])
case('aten.view.default', {'a': mk(f32, [0, 3])}, [T('a'), Is([3, 0])])
case('aten.flatten.using_ints', {'a': mk(f32, [])}, [T('a')])
case('aten.select.int', {'a': mk(f32, [3, 4], [1, 3])}, [T('a'), I(0), I(-1)])
case('aten.max_pool2d.default', {'a': mk(f32, [1, 1, 5, 7])}, [T('a'), Is([3, 2]), Is([2, 3]), Is([1, 1]), Is([1]), B(True)])
case('aten.max_pool2d.default', {'a': mk(f32, [1, 1, 6, 6])}, [T('a'), Is([2]), Is([2]), Is([0]), Is([2]), B(True)])
case('aten.adaptive_avg_pool2d.default', {'a': mk(f32, [3, 7, 9])}, [T('a'), Is([2, 4])])
case('aten.conv2d.default', {'a': mk(f32, [3, 7, 9]), 'w': mk(f32, [2, 3, 3, 2])}, [T('a'), T('w'), ('', ('none', None)), Is([2, 1]), Is([0, 1]), Is([1, 2])])
case('aten.cat.default', {'a': mk(f32, [0]), 'b': mk(f32, [2, 3])}, [('', ('ts', ['a', 'b'])), I(1)])
case('aten.cat.default', {'a': mk(torch.int32, [2, 3]), 'b': mk(torch.float16, [2, 1])}, [('', ('ts', ['a', 'b'])), I(-1)])
case('aten.split.Tensor', {'a': mk(f32, [0, 3])}, [T('a'), I(0)])
case('aten.slice.Tensor', {'a': mk(f32, [5, 3])}, [T('a'), I(0), I(-100), I(-2)])
case('aten.slice.Tensor', {'a': mk(f32, [5, 3])}, [T('a'), I(0), I(9223372036854775807)])
case('aten.index.Tensor', {'a': mk(f32, [4, 5, 6], [1, 4, 20]), 'i': mk(torch.int64, [2])}, [T('a'), ('', ('ts', ['i', None, 'i']))])
case('aten.index.Tensor', {'a': mk(f32, [4, 5, 6], [1, 4, 20]), 'i': mk(torch.int64, [2])}, [T('a'), ('', ('ts', [None, 'i']))])
case('aten.arange.start', {}, [F(0.5), I(3)])
case('aten.full_like.default', {'a': mk(torch.int64, [2])}, [T('a'), F(1.5)])
case('aten.clamp.default', {'a': mk(torch.int64, [2])}, [T('a'), I(1), F(2.5)])
case('aten.fmod.Scalar', {'a': mk(torch.int32, [2])}, [T('a'), F(2.5)])
case('aten.minimum.default', {'a': mk(torch.int32, [2]), 'b': mk(torch.uint8, [2, 1])}, [T('a'), T('b')])

x = mk(f32, [2, 3, 4])
bad = [
 ('aten.add.Tensor', {'a': x, 'b': mk(f32, [3])}, [T('a'), T('b')]),
 ('aten.mm.default', {'a': mk(f32, [2, 3]), 'b': mk(f32, [2, 3])}, [T('a'), T('b')]),
 ('aten.mm.default', {'a': mk(f32, [2, 3]), 'b': mk(torch.float64, [3, 3])}, [T('a'), T('b')]),
 ('aten.view.default', {'a': mk(f32, [2, 3], [1, 2])}, [T('a'), Is([6])]),
 ('aten.view.default', {'a': x}, [T('a'), Is([5, -1])]),
 ('aten.cat.default', {'a': x, 'b': mk(f32, [2, 4, 4])}, [('', ('ts', ['a', 'b'])), I(0)]),
 ('aten.cat.default', {'a': x, 'b': mk(f32, [2, 3])}, [('', ('ts', ['a', 'b'])), I(0)]),
 ('aten.conv2d.default', {'a': mk(f32, [1, 4, 5, 5]), 'w': mk(f32, [2, 3, 3, 3])}, [T('a'), T('w')]),
 ('aten.conv2d.default', {'a': mk(f32, [1, 3, 2, 2]), 'w': mk(f32, [2, 3, 3, 3])}, [T('a'), T('w')]),
 ('aten.max_pool2d.default', {'a': mk(f32, [1, 3, 2, 2])}, [T('a'), Is([3])]),
 ('aten.expand.default', {'a': x}, [T('a'), Is([3, 3, 4])]),
 ('aten.select.int', {'a': x}, [T('a'), I(0), I(2)]),
 ('aten.transpose.int', {'a': x}, [T('a'), I(0), I(3)]),
 ('aten.sum.dim_IntList', {'a': x}, [T('a'), Is([0, 0])]),
 ('aten.split_with_sizes.default', {'a': x}, [T('a'), Is([1, 1]), I(1)]),
 ('aten.matmul.default', {'a': x, 'b': mk(f32, [3, 4])}, [T('a'), T('b')]),
 ('aten.bmm.default', {'a': x, 'b': mk(f32, [3, 4, 2])}, [T('a'), T('b')]),
 ('aten.gather.default', {'a': x, 'i': mk(torch.int64, [2, 3])}, [T('a'), I(0), T('i')]),
 ('aten.native_layer_norm.default', {'a': x}, [T('a'), Is([3]), ('', ('none', None)), ('', ('none', None)), F(1e-5)]),
 ('aten.permute.default', {'a': x}, [T('a'), Is([0, 0, 1])]),
 ('aten.embedding.default', {'w': mk(f32, [10, 4]), 'i': mk(f32, [3])}, [T('w'), T('i')]),
 ('aten.where.self', {'c': mk(f32, [3]), 'a': mk(f32, [3]), 'b': mk(f32, [3])}, [T('c'), T('a'), T('b')]),
 ('aten.addmm.default', {'s': mk(f32, [3]), 'a': mk(f32, [2, 3]), 'b': mk(f32, [3, 4])}, [T('s'), T('a'), T('b')]),
 ('aten.linear.default', {'a': x, 'w': mk(f32, [5, 3])}, [T('a'), T('w')]),
 ('aten.unflatten.int', {'a': x}, [T('a'), I(1), Is([2, 2])]),
 ('aten.constant_pad_nd.default', {'a': x}, [T('a'), Is([-3, -2])]),
 ('aten.index.Tensor', {'a': x, 'i': mk(torch.int64, [2]), 'j': mk(torch.int64, [3])}, [T('a'), ('', ('ts', ['i', 'j']))]),
 ('aten.arange.start_step', {}, [I(0), I(5), I(-1)]),
 ('aten.mean.dim', {'a': mk(torch.int64, [3])}, [T('a'), Is([0])]),
 ('aten.pow.Tensor_Scalar', {'a': mk(torch.int64, [3])}, [T('a'), I(-1)]),
 ('aten.sub.Tensor', {'a': mk(torch.bool, [3]), 'b': mk(torch.bool, [3])}, [T('a'), T('b')]),
 ('aten.neg.default', {'a': mk(torch.bool, [3])}, [T('a')]),
 ('aten.add.Tensor', {'a': mk(torch.int64, [3]), 'b': mk(torch.int64, [3])}, [T('a'), T('b'), KW('alpha', ('f', 1.5))]),
]
for b in bad: case(*b)

def run_torch(c):
    ns, op = c['target'].split('.')[1], c['target'].split('.')[2]
    fn = getattr(getattr(torch.ops.aten, ns), op)
    ins = c['inputs']
    args, kwargs = [], {}
    for k, (kind, v) in c['call']:
        if kind == 't': val = ins[v]
        elif kind == 'ts': val = [None if x is None else ins[x] for x in v]
        elif kind == 'dt': val = RDT[v]
        elif kind == 'mf': val = {1: torch.contiguous_format, 2: torch.channels_last, 4: torch.preserve_format}[v]
        elif kind == 'none': val = None
        else: val = v
        if k: kwargs[k] = val
        else: args.append(val)
    r = fn(*args, **kwargs)
    rs = list(r) if isinstance(r, (tuple, list)) else [r]
    return [dict(dtype=DT[t.dtype], sizes=list(t.shape), strides=list(t.stride()), offset=t.storage_offset()) for t in rs]

lines = []
expected = []
for i, c in enumerate(cases):
    try:
        exp = run_torch(c)
    except Exception as e:
        exp = 'error: ' + str(e).split('\n')[0][:100]
    expected.append(exp)
    inputs = [dict(name=n, dtype=DT[t.dtype], sizes=list(t.shape), strides=list(t.stride()), offset=t.storage_offset()) for n, t in c['inputs'].items()]
    lines.append(json.dumps(dict(id=i, target=c['target'], inputs=inputs, call=[[k, list(a)] for k, a in c['call']])))
res = subprocess.run([sys.argv[1]], input='\n'.join(lines) + '\n', capture_output=True, text=True)
got = [json.loads(l) for l in res.stdout.splitlines()]
bad = 0
for i, c in enumerate(cases):
    g = got[i]
    e = expected[i]
    ok = (isinstance(e, str) and 'error' in g) or (not isinstance(e, str) and g.get('outs') == e)
    if not ok:
        bad += 1
        if bad <= 60:
            print('MISMATCH', c['target'], json.loads(lines[i])['inputs'], [a for a in c['call']], '\n   torch:', e, '\n   fxc:  ', g.get('outs', g.get('error')))
print(len(cases), 'cases', bad, 'mismatches')
for i in range(len(cases)-33, len(cases)):
    print('ERRCASE', cases[i]['target'], '| torch:', expected[i] if isinstance(expected[i], str) else 'ok', '| fxc:', got[i].get('error', 'ok'))
