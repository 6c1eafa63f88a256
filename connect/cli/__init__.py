"""Command-line entry points: ``connect-standalone``, ``connect-distributed`` and ``headrace``.

Bad input never produces a stack trace: every expected failure (unreadable
file, invalid config, unknown plugin, unreachable log) becomes one ``ERROR``
line naming the file, the key and the reason, and a non-zero exit status
(``connect.cli.exit``). Each command lives in its own module and imports the
runtime only when it runs.
"""

from connect.cli.distributed import distributed_main
from connect.cli.headrace import headrace_main
from connect.cli.standalone import standalone_main

__all__ = ["distributed_main", "headrace_main", "standalone_main"]
