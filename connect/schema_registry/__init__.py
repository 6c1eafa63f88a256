"""A Confluent-compatible schema registry kept in a compacted ``_schemas`` topic of the worker's log.

``api`` holds what the REST layer may see (the interface, its value types and errors); ``state`` applies the
topic's records; ``avro_types`` parses Avro schemas and ``compatibility`` checks them by Java Avro's
reader/writer rules, both in time linear in a schema's size and bounded against hostile ones; ``store`` ties
them to the log; ``lazy`` opens the store on a worker's first registry request.
"""
