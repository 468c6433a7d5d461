"""Keep the cycle collector's full collections off the request path.

At 16k jobs the daemon's heap (the switch mirror, the encoded-entry cache, the job rows) is a few
hundred thousand objects that the cyclic garbage collector tracks. A full (generation 2)
collection walks all of them; on the 2-core bench machine one took 28-45 ms of the event loop,
about once per telemetry sweep (whose allocations trigger it), and an allocation caught behind it
missed its 30 ms. Those objects live until their job is released and are freed by reference
counting: walking them again and again finds nothing.

So before and after each sweep ``gc.freeze()`` moves every live object to the permanent
generation, which collections skip; a full collection then walks only what was made since
(measured about 2-3 ms during a sweep). A garbage cycle among frozen objects is never
collected, so every ``full_every_s`` the settler unfreezes and collects everything, at a moment
when no API request is in progress.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

from symphony.foreground import Foreground

# A full collection of everything (unfrozen) at most this often: the bound on how long cyclic
# garbage can outlive its last use.
FULL_EVERY_S = 60.0


class Settler:
    def __init__(
        self,
        foreground: Foreground,
        full_every_s: float = FULL_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.foreground = foreground
        self.full_every_s = full_every_s
        self.clock = clock
        self._last_full = clock()
        self.full_collections = 0

    def __call__(self) -> None:
        """Settle the heap (before and after a sweep): a full collection when one is due and
        nothing is in progress, then freeze what is alive."""
        now = self.clock()
        if now - self._last_full >= self.full_every_s and self.foreground.active == 0:
            gc.unfreeze()
            gc.collect()
            self._last_full = now
            self.full_collections += 1
        gc.freeze()
