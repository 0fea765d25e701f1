// x86-64 System V context switch for weft's fibers (see context.hpp).
//
// void* weft_rt_switch(void** save_sp, void* load_sp, void* transfer)
//   Pushes the callee-saved registers and the FP control state on the current stack, stores
//   the stack pointer to *save_sp, loads load_sp, pops the same layout and returns
//   `transfer` in rax to whoever is resumed.
//
// Frame layout, from the saved stack pointer upwards:
//   +0 MXCSR (4 bytes), +4 x87 control word (2 bytes, padded), +8 r15, +16 r14, +24 r13,
//   +32 r12, +40 rbx, +48 rbp, +56 return address.

    .text
    .globl  weft_rt_switch
    .hidden weft_rt_switch
    .type   weft_rt_switch, @function
    .p2align 4
weft_rt_switch:
    .cfi_startproc
    pushq   %rbp
    pushq   %rbx
    pushq   %r12
    pushq   %r13
    pushq   %r14
    pushq   %r15
    subq    $8, %rsp
    stmxcsr (%rsp)
    fnstcw  4(%rsp)
    movq    %rsp, (%rdi)
    movq    %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw   4(%rsp)
    addq    $8, %rsp
    popq    %r15
    popq    %r14
    popq    %r13
    popq    %r12
    popq    %rbx
    popq    %rbp
    movq    %rdx, %rax
    ret
    .cfi_endproc
    .size   weft_rt_switch, .-weft_rt_switch

// First code a fresh context runs: r12 holds the entry function, r13 its argument, and rax
// the transfer value of the switch that started it. The stack is 16-byte aligned here, so
// the call below enters the function with the alignment the ABI expects.
    .globl  weft_rt_trampoline
    .hidden weft_rt_trampoline
    .type   weft_rt_trampoline, @function
    .p2align 4
weft_rt_trampoline:
    .cfi_startproc
    .cfi_undefined rip
    movq    %rax, %rdi
    movq    %r13, %rsi
    callq   *%r12
    ud2
    .cfi_endproc
    .size   weft_rt_trampoline, .-weft_rt_trampoline

    .section .note.GNU-stack, "", @progbits
