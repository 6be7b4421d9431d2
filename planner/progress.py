"""How a long stage of a run reports how far it has got, so that a front end can show it.

A :data:`Progress` is called with the stage's name, the steps done and the steps in all; the
library calls it and never prints.
"""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[str, int, int], None]
