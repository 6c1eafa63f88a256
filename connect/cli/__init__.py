"""Command-line entry points: ``connect-standalone``, ``connect-distributed`` and ``headrace``.

Bad input never produces a stack trace: every expected failure (unreadable
file, invalid config, unknown plugin, unreachable log) becomes one ``ERROR``
line naming the file, the key and the reason, and a non-zero exit status
(``connect.cli.exit``). Each command lives in its own module and imports the
runtime only when it runs; what several commands need is in ``connect.cli.bootstrap``,
which imports no command. ``headrace`` also runs the commands of the
``headrace.commands`` entry points (``flume-agent``, from ``connect.flume``).
"""

import os
import sys

from connect.cli import signals

# The console scripts import this package before calling their main(): a Ctrl-C or SIGTERM during the imports
# below (a good part of a start) must already be a quiet stop, not a KeyboardInterrupt traceback or a kill.
# Only for the worker commands: `headrace` tools and code that imports this package keep Python's handlers.
if os.path.basename(sys.argv[0]) in ("connect-standalone", "connect-distributed"):
    signals.install()
    # no automatic garbage collection while the worker starts (connect.runtime.gc_policy); run() settles the heap
    import gc

    gc.disable()

from connect.cli.distributed import distributed_main  # noqa: E402
from connect.cli.headrace import headrace_main  # noqa: E402
from connect.cli.standalone import standalone_main  # noqa: E402

# httpx (the Avro converters' registry client, plugins/converters/avro_registry.py) imports its own command line
# (rich, click, pygments) whenever they are installed: a tenth of a CPU-second of every worker start, for a
# command no worker runs. A None entry makes that import fail, which httpx allows for (rest/front.py does the same)
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

__all__ = ["distributed_main", "headrace_main", "standalone_main"]
