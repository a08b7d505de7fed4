// CUDA simulator: coroutine switching (see coroutine.h).
#include "coroutine.h"

#include <cstdint>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define URPE_SIM_ASAN 1
#else
#define URPE_SIM_ASAN 0
#endif

#if URPE_SIM_FAST_SWITCH
// urpe_sim_switch(save, load): pushes the System V callee-saved registers, stores the stack
// pointer in *save, loads the one in `load`, pops that stack's registers and returns into it.
// A stack being started holds six zero "registers" and enter_coroutine as return address.
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

namespace {
Coroutine* g_entering = nullptr;  // the coroutine whose first resume() is under way
}

// The first code a coroutine runs: tells ASan the switch has landed, then runs the entry.
void enter_coroutine() {
  Coroutine* self = g_entering;
#if URPE_SIM_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &self->resumer_stack_, &self->resumer_stack_bytes_);
#endif
  self->entry_();
}

void Coroutine::start(char* stack, size_t bytes, void (*entry)()) {
  entry_ = entry;
  stack_ = stack;
  stack_bytes_ = bytes;
#if URPE_SIM_ASAN
  // A stack used before may still hold the poisoned red zones of frames that never returned.
  ASAN_UNPOISON_MEMORY_REGION(stack, bytes);
#endif
  // The entry's return-address slot sits at a 16-byte boundary, so that after `ret` the stack
  // pointer is 8 mod 16, as at any function's entry.
  uintptr_t top = (reinterpret_cast<uintptr_t>(stack) + bytes) & ~uintptr_t(15);
  void** slot = reinterpret_cast<void**>(top - 16);
  *slot = reinterpret_cast<void*>(&enter_coroutine);
  for (int r = 1; r <= 6; ++r) slot[-r] = nullptr;  // rbp, rbx, r12..r15
  stack_pointer_ = slot - 6;
}

void Coroutine::resume() {
  g_entering = this;
#if URPE_SIM_ASAN
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&fake_stack, stack_, stack_bytes_);
  urpe_sim_switch(&resumer_pointer_, stack_pointer_);
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#else
  urpe_sim_switch(&resumer_pointer_, stack_pointer_);
#endif
}

void Coroutine::yield() {
#if URPE_SIM_ASAN
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&fake_stack, resumer_stack_, resumer_stack_bytes_);
  urpe_sim_switch(&stack_pointer_, resumer_pointer_);
  __sanitizer_finish_switch_fiber(fake_stack, &resumer_stack_, &resumer_stack_bytes_);
#else
  urpe_sim_switch(&stack_pointer_, resumer_pointer_);
#endif
}

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
