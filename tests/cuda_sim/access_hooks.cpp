// CUDA simulator: the access hooks. The kernels' translation units (the rewritten .cu files) are
// compiled with -fsanitize=thread, and the compiler then calls __tsan_readN / __tsan_writeN(address)
// before every load and store it emits. Only that instrumentation is borrowed: ThreadSanitizer's
// runtime is never linked, and these functions are the whole of what the calls reach. Outside a
// kernel they return at once; inside one, an access to the shared-memory arena goes to the
// shared checks (shared_memory.cpp) and an access to device memory is checked here against its
// shadow byte:
//   memcheck   the word belongs to a live allocation (not the slack before or after one, nor
//              freed memory);
//   initcheck  a read finds the word written (by a kernel, a copy, a memset or a library);
// and a write is logged for the schedules' comparison and marks the word written. With +switch
// schedules every such access then lets another thread run. Accesses to anything else (the
// thread's own stack, host globals) are not checked.
// Without URPE_SIM_ACCESS_HOOKS (the AddressSanitizer build, where -fsanitize=thread cannot be
// added) nothing here is compiled and access_hooks_available() is false. Atomic operations would
// be instrumented as __tsan_atomic* calls, which are not here: no kernel file uses atomics (urpe's
// reductions are deterministic), and one that did would fail to link, naming them.
#include <sstream>

#include "sim_state.h"

namespace urpe_sim {

#if URPE_SIM_ACCESS_HOOKS

bool access_hooks_available() { return true; }

namespace {

// Names the access, the allocation and the kernel argument that points into it.
void report_global(const char* check, const char* what, const void* p, size_t bytes,
                                bool write) {
  std::ostringstream out;
  out << check << ": " << describe_thread(*g_access.thread) << (write ? " writes " : " reads ")
      << bytes << " bytes at " << describe_device_address(p) << what;
  const char* allocation = allocation_of(p);
  for (const auto& [argument, pointer] : g_launch_pointers)
    if (allocation && allocation_of(pointer) == allocation) {
      out << " (kernel argument " << argument << " points into it)";
      break;
    }
  record_failure(out.str());
}

// Owns nothing when it stops the thread (its stack is abandoned, never unwound).
[[noreturn]] void stop_at_global(const char* check, const char* what, const void* p, size_t bytes,
                                 bool write) {
  report_global(check, what, p, bytes, write);
  stop_thread();
}

void global_access(const char* p, size_t bytes, bool write) {
  ++g_access.record->global_accesses;
  const size_t first = size_t(p - g_device.base) / 4;
  const size_t last = size_t(p + bytes - 1 - g_device.base) / 4;
  for (size_t w = first; w <= last; ++w) {
    const uint8_t shadow = g_device.shadow[w];
    if (!(shadow & kAddressable)) {
      if (g_access.checks.memcheck) stop_at_global("memcheck", "", p, bytes, write);
      continue;
    }
    if (write) {
      if (recording() && !(shadow & kLogged)) log_word(w);
      g_device.shadow[w] |= kWritten;
    } else if (g_access.checks.initcheck && !(shadow & kWritten)) {
      stop_at_global("initcheck", ", which nothing has written", p, bytes, write);
    }
  }
  if (g_access.switch_at_access) switch_thread();
}

// pc: the instrumented access's return address, which names its site for the bank model.
inline void on_access(void* address, size_t bytes, bool write, const void* pc) {
  if (!g_access.thread) return;
  char* p = static_cast<char*>(address);
  if (in_device_region(p)) {
    global_access(p, bytes, write);
  } else if (in_shared_arena(p)) {
    if (g_access.banks) bank_access(p, bytes, write, pc, /*async=*/false);
    shared_access(p, bytes, write);
  }
}

}  // namespace

#else

bool access_hooks_available() { return false; }

#endif

}  // namespace urpe_sim

#if URPE_SIM_ACCESS_HOOKS

using urpe_sim::on_access;

// The entry points GCC and Clang emit under -fsanitize=thread (with function entry and exit
// instrumentation turned off). Aligned and unaligned accesses, and ranges (aggregate copies).
// URPE_SIM_SITE: the return address into the kernel's code, read here, in the entry point's own frame.
#define URPE_SIM_SITE __builtin_return_address(0)
extern "C" {
void __tsan_init() {}
void __tsan_read1(void* p) { on_access(p, 1, false, URPE_SIM_SITE); }
void __tsan_read2(void* p) { on_access(p, 2, false, URPE_SIM_SITE); }
void __tsan_read4(void* p) { on_access(p, 4, false, URPE_SIM_SITE); }
void __tsan_read8(void* p) { on_access(p, 8, false, URPE_SIM_SITE); }
void __tsan_read16(void* p) { on_access(p, 16, false, URPE_SIM_SITE); }
void __tsan_write1(void* p) { on_access(p, 1, true, URPE_SIM_SITE); }
void __tsan_write2(void* p) { on_access(p, 2, true, URPE_SIM_SITE); }
void __tsan_write4(void* p) { on_access(p, 4, true, URPE_SIM_SITE); }
void __tsan_write8(void* p) { on_access(p, 8, true, URPE_SIM_SITE); }
void __tsan_write16(void* p) { on_access(p, 16, true, URPE_SIM_SITE); }
void __tsan_unaligned_read2(const void* p) { on_access(const_cast<void*>(p), 2, false, URPE_SIM_SITE); }
void __tsan_unaligned_read4(const void* p) { on_access(const_cast<void*>(p), 4, false, URPE_SIM_SITE); }
void __tsan_unaligned_read8(const void* p) { on_access(const_cast<void*>(p), 8, false, URPE_SIM_SITE); }
void __tsan_unaligned_read16(const void* p) { on_access(const_cast<void*>(p), 16, false, URPE_SIM_SITE); }
void __tsan_unaligned_write2(void* p) { on_access(p, 2, true, URPE_SIM_SITE); }
void __tsan_unaligned_write4(void* p) { on_access(p, 4, true, URPE_SIM_SITE); }
void __tsan_unaligned_write8(void* p) { on_access(p, 8, true, URPE_SIM_SITE); }
void __tsan_unaligned_write16(void* p) { on_access(p, 16, true, URPE_SIM_SITE); }
void __tsan_read_range(void* p, unsigned long bytes) {
  if (bytes > 0) on_access(p, bytes, false, URPE_SIM_SITE);
}
void __tsan_write_range(void* p, unsigned long bytes) {
  if (bytes > 0) on_access(p, bytes, true, URPE_SIM_SITE);
}
// Virtual calls and function entry/exit: nothing to check.
void __tsan_vptr_update(void**, void*) {}
void __tsan_vptr_read(void**) {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
}
#undef URPE_SIM_SITE

#endif
