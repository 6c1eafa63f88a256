"""The Redis connectors: a sink for each Redis data type and a Streams source (consumer group, at least once).

Their class names match Redis Inc.'s connector, so ``com.redis.kafka.connect.RedisSinkConnector`` and
``com.redis.kafka.connect.RedisStreamSourceConnector`` resolve here (by the trailing class name), as do
``RedisSink`` and ``RedisStreamSource``.
"""

from plugins.redis.sink import RedisSinkConnector, RedisSinkTask
from plugins.redis.stream_source import RedisStreamSourceConnector, RedisStreamSourceTask

__all__ = [
    "RedisSinkConnector",
    "RedisSinkTask",
    "RedisStreamSourceConnector",
    "RedisStreamSourceTask",
]
