"""An example Headrace plugin: each class exported here is registered by the ``headrace.plugins`` entry point.

A worker imports this module (named by the entry point in ``pyproject.toml``) and registers each concrete
connector, transform, converter, predicate or config provider listed in ``__all__``. Task classes are found
through their connector's ``task_class()`` and need not be listed, but listing them does no harm.
"""

from headrace_example.sink import TextFileSinkConnector, TextFileSinkTask
from headrace_example.source import WordSourceConnector, WordSourceTask
from headrace_example.transform import PrefixValue

__all__ = [
    "PrefixValue",
    "TextFileSinkConnector",
    "TextFileSinkTask",
    "WordSourceConnector",
    "WordSourceTask",
]
