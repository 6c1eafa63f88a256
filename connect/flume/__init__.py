"""Running a Flume agent's config on Headrace: ``headrace flume-agent`` (``command``), the translation of the
agent's sources, channels, sinks and interceptors into connectors (``translate``, with ``hdfs`` for the hdfs
sink), and the agent's exec commands (``exec_sources``).

The Flume plugins themselves (Avro RPC, HTTP, netcat and spooldir sources, file_roll, logger and kafka
sinks) are in ``plugins/flume``, which imports only the SDK. This package sits above the CLI: it reads
properties files and starts a standalone worker, so it needs the runtime; it reaches ``headrace`` through
the ``headrace.commands`` entry point, as a command of another distribution would.
"""
