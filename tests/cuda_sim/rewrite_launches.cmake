# CUDA simulator: turns one of the project's .cu files into C++ the host compiler accepts, by
# rewriting each kernel launch (see include/urpe_sim_launch.h):
#   name<<<grid, block, shared, stream>>>(args)  →  name | ::urpe_sim::Config("name", grid, block, shared, stream)(args)
# A #line directive keeps compiler messages and debugger locations on the original file.
# Usage: cmake -DSOURCE=ops/x_cuda.cu -DOUTPUT=build/.../x_cuda.cpp -P rewrite_launches.cmake
file(READ "${SOURCE}" text)
string(REGEX REPLACE "([A-Za-z_][A-Za-z0-9_]*(<[^<>;{}()]*>)?)[ \t]*<<<"
       "\\1 | ::urpe_sim::Config(\"\\1\", " text "${text}")
string(FIND "${text}" "<<<" left)
if(NOT left EQUAL -1)
  message(FATAL_ERROR "${SOURCE}: a kernel launch the simulator's rewrite does not understand")
endif()
string(REPLACE ">>>" ")" text "${text}")
file(WRITE "${OUTPUT}.tmp" "#line 1 \"${SOURCE}\"\n${text}")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
