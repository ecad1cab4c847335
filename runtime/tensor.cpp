// Host tensors (implementation in progress).
#include "runtime/tensor.h"
