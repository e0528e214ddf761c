// test_link.cpp — the public headers and libatf.so from C++: the same program as test_link.c,
// compiled as C++ (the headers declare everything extern "C").
#include "test_link.c"
