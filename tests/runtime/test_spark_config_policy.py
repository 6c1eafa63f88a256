"""``spark.conf.override.policy``: which ``spark.*`` keys a connector config may hand the worker's Spark session.

Connector configs come over REST; a ``spark.*`` key that loads code, sets JVM or environment options or names
files ran code as the worker's user (issue #35). The worker's own ``spark.*`` settings stay unrestricted.
"""

from __future__ import annotations

import pytest

from connect.api.errors import ConfigException
from connect.runtime.connector_validation import ConnectorConfigValidator
from connect.runtime.herder import ConnectorTaskId, State, TargetState
from connect.runtime.offset_committer import SourceTaskOffsetCommitter
from connect.runtime.plugins import PluginRegistry
from connect.runtime.spark_config_policy import TUNING_KEYS, spark_override_policy
from connect.runtime.worker import Worker
from connect.runtime.worker_config import StandaloneConfig
from tests.runtime.fakes import FakeClock, MemoryBackend, MemoryOffsetStore, RecordingStatus, registry

CONVERTERS = {"key.converter": "StringConverter", "value.converter": "StringConverter",
              "offset.storage.file.filename": "unused"}
HDFS = {"name": "h", "connector.class": "HdfsSparkSink", "topics": "t", "hdfs.url": "hdfs://127.0.0.1:8020"}

# every kind of key the policy exists for: code loading, JVM/environment options, files, the driver's own
HOSTILE = {
    "spark.jars": "http://127.0.0.1:9/x.jar",
    "spark.jars.packages": "evil:evil:1.0",
    "spark.jars.repositories": "http://127.0.0.1:9/",
    "spark.jars.ivySettings": "/tmp/ivy.xml",
    "spark.extraListeners": "com.example.Listener",
    "spark.sql.queryExecutionListeners": "com.example.Listener",
    "spark.sql.streaming.streamingQueryListeners": "com.example.Listener",
    "spark.plugins": "com.example.Plugin",
    "spark.driver.extraJavaOptions": "-XX:OnOutOfMemoryError=touch /tmp/pwned",
    "spark.executor.extraJavaOptions": "-javaagent:/tmp/a.jar",
    "spark.driver.extraClassPath": "/tmp/evil",
    "spark.executor.extraClassPath": "/tmp/evil",
    "spark.driver.extraLibraryPath": "/tmp/evil",
    "spark.executor.extraLibraryPath": "/tmp/evil",
    "spark.executorEnv.PERL5OPT": "-Mevil",
    "spark.executorEnv.PYTHONPATH": "/tmp/evil",
    "spark.pyspark.python": "/tmp/evil",
    "spark.pyspark.driver.python": "/tmp/evil",
    "spark.python.worker.reuse": "false",
    "spark.python.daemon.module": "evil",
    "spark.files": "/etc/passwd",
    "spark.archives": "/tmp/a.zip",
    "spark.submit.pyFiles": "/tmp/evil.py",
    "spark.submit.deployMode": "cluster",
    "spark.driver.host": "0.0.0.0",
    "spark.driver.bindAddress": "0.0.0.0",
    "spark.driver.userClassPathFirst": "true",
    "spark.driver.resource.gpu.discoveryScript": "/tmp/evil.sh",
    "spark.sql.warehouse.dir": "/etc/cron.d",
    "spark.eventLog.enabled": "true",
    "spark.eventLog.dir": "file:///etc/cron.d",
    "spark.local.dir": "/etc/cron.d",
    "spark.hadoop.fs.file.impl": "com.example.FileSystem",
    "spark.hadoop.hadoop.security.authentication": "kerberos",
    "spark.io.compression.codec": "com.example.Codec",
    "spark.serializer": "com.example.Serializer",
    "spark.kryo.registrator": "com.example.Registrator",
    "spark.sql.extensions": "com.example.Extensions",
    "spark.sql.catalog.evil": "com.example.Catalog",
    "spark.ui.enabled": "true",
    "spark.redaction.regex": "x",
    "spark.sql.files.maxRecordsPerFile": "1",
    "spark.sql.session.timeZone": "Europe/Paris",
    "Spark.jars": "http://127.0.0.1:9/x.jar",  # spelt otherwise: not a tuning key either
    " spark.jars": "http://127.0.0.1:9/x.jar",
}


@pytest.mark.parametrize("key", sorted(HOSTILE))
def test_tuning_refuses_every_key_that_loads_code_sets_options_or_names_files(key):
    refused = spark_override_policy("Tuning").refusals({**HDFS, key: HOSTILE[key]})
    assert [k for k, _ in refused] == [key]
    assert "'Tuning'" in refused[0][1] and "spark.conf.override.policy" in refused[0][1]


def test_tuning_allows_its_documented_keys_with_plain_values():
    tuning = {"spark.driver.memory": "2g", "spark.executor.memory": "768m", "spark.executor.cores": "2",
              "spark.cores.max": "4", "spark.sql.shuffle.partitions": "16", "spark.sql.adaptive.enabled": "true",
              "spark.sql.execution.arrow.maxRecordsPerBatch": "5000", "spark.memory.fraction": "0.5",
              "spark.network.timeout": "300s", "spark.sql.parquet.compression.codec": "zstd",
              "spark.hadoop.dfs.client.block.write.locateFollowingBlock.retries": "12",
              "spark.master": "local[2]"}
    assert set(tuning) - {"spark.master"} <= set(TUNING_KEYS)
    assert spark_override_policy("Tuning").refusals({**HDFS, **tuning}) == []
    # no key of the list can name a class, a file or an option string
    assert not [k for k in TUNING_KEYS if k.startswith(("spark.jars", "spark.executorEnv", "spark.pyspark"))
                or k.endswith(("Listeners", "extraJavaOptions", "extraClassPath", "dir", "file", ".path"))]


@pytest.mark.parametrize(("key", "value"), [
    ("spark.driver.memory", "1g -XX:OnOutOfMemoryError=touch /tmp/pwned"),
    ("spark.executor.memory", "lots"),
    ("spark.sql.shuffle.partitions", "8; rm -rf /"),
    ("spark.sql.adaptive.enabled", "maybe"),
    ("spark.memory.fraction", "2"),
    ("spark.sql.parquet.compression.codec", "com.example.Codec"),
    ("spark.master", "spark://attacker:7077"),
    ("spark.master", "k8s://https://127.0.0.1:6443"),
    ("spark.master", "local-cluster[2,1,1024]"),
])
def test_tuning_refuses_a_tuning_key_whose_value_is_not_plain(key, value):
    refused = spark_override_policy("Tuning").refusals({**HDFS, key: value})
    assert [k for k, _ in refused] == [key], refused
    assert value in refused[0][1]


def test_none_refuses_every_spark_key_and_all_refuses_none():
    config = {**HDFS, "spark.master": "local[2]", "spark.driver.memory": "1g", **HOSTILE}
    refused = spark_override_policy("None").refusals(config)
    assert sorted(k for k, _ in refused) == sorted(["spark.master", "spark.driver.memory", *HOSTILE])
    assert all("'None'" in message for _, message in refused)
    assert spark_override_policy("All").refusals(config) == []
    assert spark_override_policy("None").refusals(HDFS) == []  # other keys are not its business


def test_the_worker_setting_defaults_to_tuning_and_names_the_three_policies():
    assert StandaloneConfig(CONVERTERS).spark_config_override_policy.name == "Tuning"
    for name in ("None", "Tuning", "All"):
        config = StandaloneConfig({**CONVERTERS, "spark.conf.override.policy": name})
        assert config.spark_config_override_policy.name == name
    with pytest.raises(ConfigException, match="spark.conf.override.policy.*None, Tuning, All"):
        StandaloneConfig({**CONVERTERS, "spark.conf.override.policy": "Some"})


def test_the_operators_spark_settings_are_handed_on_without_the_policy_itself():
    config = StandaloneConfig({**CONVERTERS, "spark.conf.override.policy": "None", "spark.jars": "/opt/x.jar",
                               "spark.master": "spark://10.0.0.5:7077", "spark.local.dir": ""})
    assert config.passthrough_settings("spark.") == {"spark.jars": "/opt/x.jar",
                                                     "spark.master": "spark://10.0.0.5:7077"}


def test_validation_refuses_the_keys_the_workers_policy_refuses_naming_key_and_policy():
    plugins = PluginRegistry()
    config = {**HDFS, "spark.extraListeners": "com.example.Listener", "spark.driver.memory": "1g"}
    tuning = ConnectorConfigValidator.for_worker(plugins, StandaloneConfig(CONVERTERS))
    errors = {name: cv.errors for name, cv in tuning.validate(config).values.items() if cv.errors}
    assert list(errors) == ["spark.extraListeners"]
    assert "The 'Tuning' Spark config override policy (spark.conf.override.policy)" in errors[
        "spark.extraListeners"][0]
    trusting = ConnectorConfigValidator.for_worker(
        plugins, StandaloneConfig({**CONVERTERS, "spark.conf.override.policy": "All"}))
    assert trusting.validate(config).error_count == 0
    # without a worker config, the worker's default
    assert ConnectorConfigValidator.for_worker(plugins, None).validate(config).error_count == 1


def _worker(**settings: str) -> Worker:
    clock = FakeClock()
    config = StandaloneConfig({**CONVERTERS, "offset.flush.interval.ms": "1000",
                               "task.shutdown.graceful.timeout.ms": "2000", **settings})
    return Worker("test-worker:0", config, registry(), MemoryBackend(clock), MemoryOffsetStore(),
                  RecordingStatus(), clock=clock, source_committer=SourceTaskOffsetCommitter(clock))


def test_a_stored_config_with_a_key_the_policy_now_refuses_does_not_start():
    """A config stored under All comes back after the worker moved to Tuning: neither connector nor task runs."""
    worker = _worker()
    config = {"name": "src", "connector.class": "CountingSourceConnector", "tasks.max": "1", "lines": "3",
              "spark.jars": "http://127.0.0.1:9/x.jar"}
    task = ConnectorTaskId("src", 0)
    try:
        assert not worker.start_connector("src", config, TargetState.STARTED, lambda _name: None)
        assert "'Tuning' Spark config override policy" in worker.status.connector("src").trace
        task_config = {"lines": "3", "task.class": "tests.runtime.fake_plugins.CountingSourceTask"}
        assert not worker.start_task(task, config, task_config, TargetState.STARTED)
        status = worker.status.task(task)
        assert status.state is State.FAILED and "spark.jars" in status.trace and "'Tuning'" in status.trace
        assert worker.task_ids() == []
    finally:
        worker.stop()


def test_the_worker_says_which_policy_is_in_force_when_it_starts(caplog):
    caplog.set_level("INFO", logger="connect.runtime.worker")
    _worker(**{"spark.conf.override.policy": "None"}).stop()
    lines = [r.getMessage() for r in caplog.records if "spark.conf.override.policy" in r.getMessage()]
    assert len(lines) == 1 and "None" in lines[0]
