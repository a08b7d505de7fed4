# CUDA simulator: turns one of the project's .cu files into C++ the host compiler accepts, by
# rewriting each kernel launch (see include/urpe_sim_launch.h):
#   name<<<grid, block, shared, stream>>>(args)  →  name | ::urpe_sim::Config("name", grid, block, shared, stream)(args)
# A #line directive keeps compiler messages and debugger locations on the original file.
# Usage: cmake -DSOURCE=ops/x_cuda.cu -DOUTPUT=build/.../x_cuda.cpp -P rewrite_launches.cmake
# Each kernel's body also starts by naming the kernel (urpe_sim::name_kernel), so that a launch
# through a function pointer (`kernel<<<...>>>`) is recorded and reported under its real name:
#   __global__ void name(params) {  →  __global__ void name(params) { ::urpe_sim::name_kernel("name");
file(READ "${SOURCE}" text)
# (a `__launch_bounds__(...)` between `void` and the name is skipped, so the name is the kernel's)
string(REGEX REPLACE "(__global__[ \t\n]+void[ \t\n]+(__launch_bounds__\\([^()]*\\)[ \t\n]+)?)([A-Za-z_][A-Za-z0-9_]*)([ \t\n]*\\([^;{]*\\)[ \t\n]*{)"
       "\\1\\3\\4 ::urpe_sim::name_kernel(\"\\3\");" text "${text}")
string(REGEX REPLACE "([A-Za-z_][A-Za-z0-9_]*(<[^<>;{}()]*>)?)[ \t]*<<<"
       "\\1 | ::urpe_sim::Config(\"\\1\", " text "${text}")
string(FIND "${text}" "<<<" left)
if(NOT left EQUAL -1)
  message(FATAL_ERROR "${SOURCE}: a kernel launch the simulator's rewrite does not understand")
endif()
string(REPLACE ">>>" ")" text "${text}")
file(WRITE "${OUTPUT}.tmp" "#line 1 \"${SOURCE}\"\n${text}")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
