// CUDA simulator: the smallest coroutine its scheduler needs — run a function on a stack of its
// own, and switch between it and the scheduler. On x86-64 a switch saves the callee-saved
// registers and the stack pointer (a few instructions, coroutine.cpp). Elsewhere, and under
// AddressSanitizer (which must see every stack switch), it falls back to ucontext, whose
// swapcontext also saves the signal mask with a system call and the FPU environment: profiled
// here, that made up ~85% of the simulator's time.
#pragma once
#include <cstddef>

#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
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
  void* stack_pointer_ = nullptr;   // the coroutine's, while it is suspended
  void* resumer_pointer_ = nullptr;  // the scheduler's, while the coroutine runs
#else
  ucontext_t context_{};
  ucontext_t resumer_{};
#endif
};

}  // namespace urpe_sim
