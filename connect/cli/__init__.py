"""Command-line entry points: ``connect-standalone``, ``connect-distributed`` and ``headrace``.

Bad input never produces a stack trace: every expected failure (unreadable
file, invalid config, unknown plugin, unreachable log) becomes one ``ERROR``
line naming the file, the key and the reason, and a non-zero exit status
(``connect.cli.exit``). Each command lives in its own module and imports the
runtime only when it runs.
"""

import sys

from connect.cli.distributed import distributed_main
from connect.cli.headrace import headrace_main
from connect.cli.standalone import standalone_main

# httpx (the Avro converters' registry client, plugins/converters/avro_registry.py) imports its own command line
# (rich, click, pygments) whenever they are installed: a tenth of a CPU-second of every worker start, for a
# command no worker runs. A None entry makes that import fail, which httpx allows for (rest/front.py does the same)
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

__all__ = ["distributed_main", "headrace_main", "standalone_main"]
