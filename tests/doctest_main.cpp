// The doctest runner shared by every suite (each tests/test_*.cpp is its own executable).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "doctest/doctest.h"
