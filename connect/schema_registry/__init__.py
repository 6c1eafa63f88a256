"""A Confluent-compatible schema registry kept in a compacted ``_schemas`` topic of the worker's log.

``api`` holds what the REST layer may see (the interface, its value types and errors); ``state`` applies the
topic's records; ``compatibility`` parses Avro schemas and checks them with the Apache Avro library;
``store`` ties them to the log; ``lazy`` opens the store on a worker's first registry request.
"""
