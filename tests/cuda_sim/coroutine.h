// CUDA simulator: the smallest coroutine its scheduler needs — run a function on a stack of its
// own, and switch between it and the scheduler. On x86-64 a switch saves the callee-saved
// registers and the stack pointer (a few instructions, coroutine.cpp); under AddressSanitizer the
// switch is announced to ASan (__sanitizer_start/finish_switch_fiber), which must know which
// stack runs. Elsewhere it falls back to ucontext, whose swapcontext also saves the signal mask
// with a system call and the FPU environment (and, under ASan, clears the target stack's shadow
// on every switch): profiled here, that made up ~85% of the simulator's time.
#pragma once
#include <cstddef>

#if defined(__x86_64__)
#define URPE_SIM_FAST_SWITCH 1
#else
#define URPE_SIM_FAST_SWITCH 0
#include <ucontext.h>
#endif

namespace urpe_sim {

class Coroutine {
 public:
  // Sets the coroutine up to run entry() on [stack, stack + bytes) at the next resume(). entry
  // must never return: it ends by calling yield() for the last time.
  void start(char* stack, size_t bytes, void (*entry)());
  // Runs the coroutine until it calls yield().
  void resume();
  // Called from inside the coroutine: back to the resume() that ran it.
  void yield();

 private:
#if URPE_SIM_FAST_SWITCH
  friend void enter_coroutine();
  void* stack_pointer_ = nullptr;    // the coroutine's, while it is suspended
  void* resumer_pointer_ = nullptr;  // the scheduler's, while the coroutine runs
  void (*entry_)() = nullptr;
  // The stacks on either side of the switch, for AddressSanitizer.
  char* stack_ = nullptr;
  size_t stack_bytes_ = 0;
  const void* resumer_stack_ = nullptr;
  size_t resumer_stack_bytes_ = 0;
#else
  ucontext_t context_{};
  ucontext_t resumer_{};
#endif
};

}  // namespace urpe_sim
