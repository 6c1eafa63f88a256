"""The topic layer's Kafka backend: confluent-kafka clients against a real cluster."""
