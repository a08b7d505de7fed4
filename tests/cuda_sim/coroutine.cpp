// CUDA simulator: coroutine switching (see coroutine.h).
#include "coroutine.h"

#include <cstdint>

#if URPE_SIM_FAST_SWITCH
// urpe_sim_switch(save, load): pushes the System V callee-saved registers, stores the stack
// pointer in *save, loads the one in `load`, pops that stack's registers and returns into it.
// A stack being started holds six zero "registers" and the entry function as return address.
asm(R"(
    .pushsection .text
    .globl urpe_sim_switch
    .type urpe_sim_switch, @function
urpe_sim_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size urpe_sim_switch, .-urpe_sim_switch
    .popsection
)");
extern "C" void urpe_sim_switch(void** save, void* load);
#endif

namespace urpe_sim {

#if URPE_SIM_FAST_SWITCH

void Coroutine::start(char* stack, size_t bytes, void (*entry)()) {
  // The entry's return-address slot sits at a 16-byte boundary, so that after `ret` the stack
  // pointer is 8 mod 16, as at any function's entry.
  uintptr_t top = (reinterpret_cast<uintptr_t>(stack) + bytes) & ~uintptr_t(15);
  void** slot = reinterpret_cast<void**>(top - 16);
  *slot = reinterpret_cast<void*>(entry);
  for (int r = 1; r <= 6; ++r) slot[-r] = nullptr;  // rbp, rbx, r12..r15
  stack_pointer_ = slot - 6;
}

void Coroutine::resume() { urpe_sim_switch(&resumer_pointer_, stack_pointer_); }

void Coroutine::yield() { urpe_sim_switch(&stack_pointer_, resumer_pointer_); }

#else

void Coroutine::start(char* stack, size_t bytes, void (*entry)()) {
  getcontext(&context_);
  context_.uc_stack.ss_sp = stack;
  context_.uc_stack.ss_size = bytes;
  context_.uc_link = nullptr;  // entry never returns
  makecontext(&context_, entry, 0);
}

void Coroutine::resume() { swapcontext(&resumer_, &context_); }

void Coroutine::yield() { swapcontext(&context_, &resumer_); }

#endif

}  // namespace urpe_sim
