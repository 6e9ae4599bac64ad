// kernel-ports: forwards `#include "rust/cxx.h"` to a cxx crate's own header,
// which crates ship as include/cxx.h (a cargo registry, Debian's
// librust-cxx-dev). The front end defines KERNEL_PORTS_CXX_H to its path.
#pragma once
#include KERNEL_PORTS_CXX_H
