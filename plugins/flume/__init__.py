"""Flume compatibility: Flume's Avro RPC, HTTP (JSONHandler), netcat and spooling-directory sources, and the
file_roll, logger and kafka sinks a Flume agent config names."""

from plugins.flume.avro_source import FlumeAvroSourceConnector, FlumeAvroSourceTask
from plugins.flume.http_source import FlumeHttpSourceConnector, FlumeHttpSourceTask
from plugins.flume.kafka_sink import FlumeKafkaSinkConnector, FlumeKafkaSinkTask
from plugins.flume.netcat_source import NetcatSourceConnector, NetcatSourceTask
from plugins.flume.sinks import FileRollSinkConnector, FileRollSinkTask, LoggerSinkConnector, LoggerSinkTask
from plugins.flume.spooldir_source import SpoolDirSourceConnector, SpoolDirSourceTask

__all__ = [
    "FileRollSinkConnector",
    "FileRollSinkTask",
    "FlumeAvroSourceConnector",
    "FlumeAvroSourceTask",
    "FlumeHttpSourceConnector",
    "FlumeHttpSourceTask",
    "FlumeKafkaSinkConnector",
    "FlumeKafkaSinkTask",
    "LoggerSinkConnector",
    "LoggerSinkTask",
    "NetcatSourceConnector",
    "NetcatSourceTask",
    "SpoolDirSourceConnector",
    "SpoolDirSourceTask",
]
