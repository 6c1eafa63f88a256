"""Flume compatibility: Flume's Avro RPC source, and the file_roll and logger sinks a Flume agent config names."""

from plugins.flume.avro_source import FlumeAvroSourceConnector, FlumeAvroSourceTask

__all__ = ["FlumeAvroSourceConnector", "FlumeAvroSourceTask"]
