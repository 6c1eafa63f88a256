"""The Redis connectors: a sink for each Redis data type, a Streams source (consumer group, at least once) and a
keys source (keyspace notifications, at most once, one task).

Their class names match Redis Inc.'s connector, so ``com.redis.kafka.connect.RedisSinkConnector``,
``com.redis.kafka.connect.RedisStreamSourceConnector`` and ``com.redis.kafka.connect.RedisKeysSourceConnector``
resolve here (by the trailing class name), as do ``RedisSink``, ``RedisStreamSource`` and ``RedisKeysSource``.
"""

from plugins.redis.keys_source import RedisKeysSourceConnector, RedisKeysSourceTask
from plugins.redis.sink import RedisSinkConnector, RedisSinkTask
from plugins.redis.stream_source import RedisStreamSourceConnector, RedisStreamSourceTask

__all__ = [
    "RedisKeysSourceConnector",
    "RedisKeysSourceTask",
    "RedisSinkConnector",
    "RedisSinkTask",
    "RedisStreamSourceConnector",
    "RedisStreamSourceTask",
]
