// fxc's entry point (the full command line is built in driver/options.cpp).
#include <cstdio>
int main() { std::puts("fxc " FXC_VERSION); }
