package main

/*
#include "colioi.h"
*/
import "C"

import "github.com/colio-dev/colio/internal/pool"

// colio.h documents the OS-thread bound as COLIO_MAX_BLOCKED_THREADS; the
// pool enforces pool.MaxWorkers. The build fails if the two differ (a
// negative constant does not convert to uint).
const _ = uint(C.COLIO_MAX_BLOCKED_THREADS-pool.MaxWorkers) + uint(pool.MaxWorkers-C.COLIO_MAX_BLOCKED_THREADS)
