// kernel-ports stub: the umbrella header, forwarding to every stub.
#pragma once

#include "mlx/array.h"
#include "mlx/backend/cuda/cuda.h"
#include "mlx/backend/metal/metal.h"
#include "mlx/fast.h"
#include "mlx/ops.h"
#include "mlx/random.h"
