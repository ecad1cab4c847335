import torch, json, os
out = []
for name in dir(torch.ops.aten):
    try: pk = getattr(torch.ops.aten, name)
    except Exception: continue
    if not hasattr(pk, 'overloads'): continue
    for ov in pk.overloads():
        op = getattr(pk, ov)
        if torch.Tag.core in op.tags:
            out.append(str(op._schema))
out.sort()
open(os.environ['OUT'] + '/core_ops.txt', 'w').write('\n'.join(out) + '\n')
print(len(out))
