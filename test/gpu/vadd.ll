; A vector add c[i] = a[i] + b[i] for i < n: the PTX kernel of test/unit/cuda_test.cpp (llc-19 -march=nvptx64 -mcpu=sm_90 -O2).
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()

define void @vadd(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %c, i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ctaid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %ctaid, %ntid
  %i = add i32 %base, %tid
  %inb = icmp slt i32 %i, %n
  br i1 %inb, label %body, label %exit
body:
  %idx = sext i32 %i to i64
  %pa = getelementptr float, ptr addrspace(1) %a, i64 %idx
  %pb = getelementptr float, ptr addrspace(1) %b, i64 %idx
  %pc = getelementptr float, ptr addrspace(1) %c, i64 %idx
  %va = load float, ptr addrspace(1) %pa, align 4
  %vb = load float, ptr addrspace(1) %pb, align 4
  %s = fadd float %va, %vb
  store float %s, ptr addrspace(1) %pc, align 4
  br label %exit
exit:
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{ptr @vadd, !"kernel", i32 1}
