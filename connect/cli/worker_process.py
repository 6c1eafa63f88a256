"""What a standalone and a distributed worker process share: loading the worker config, the REST server,
secrets kept out of log lines, the process's run loop and an orderly shutdown."""

from __future__ import annotations

import abc
import logging
import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from connect.api.errors import ConfigException, ConnectException
from connect.cli import signals
from connect.cli.bootstrap import registry_settings
from connect.cli.exit import EXIT_RUNTIME, CliError, fail
from connect.log.api import LogError
from connect.runtime.worker_identity import advertised_host

if TYPE_CHECKING:
    from connect.runtime.herder import Herder
    from rest import RestServer
    from rest.front_process import FrontLaunch, RestFrontProcess

__all__ = ["WorkerProcess", "keep_secrets_out_of_text", "load_worker_config", "rest_worker_id", "run_worker"]

log = logging.getLogger("connect.cli")

# Beyond the tasks' graceful timeout, what a stop may take, with room to spare: the REST server's drain of requests
# under way (5 s), the REST front process's stop (up to 10 s), the log's close. Past the two together, the
# process exits without waiting further.
_SHUTDOWN_MARGIN_S = 30.0
# how soon a started worker notices a stop signal (its handler only notes it: see connect.cli.signals)
_STOP_POLL_S = 0.2


def run_worker(make: Callable[[], WorkerProcess]) -> int:
    """Make the worker process (config, front process, plugins: each step may refuse to go on) and run it; the
    exit status. A stop signal before it runs ends it quietly."""
    from connect.runtime.gc_policy import hold_collection, resume_collection

    hold_collection()  # until run() settles the heap (connect.runtime.gc_policy)
    try:
        signals.raise_if_requested()
        runtime = make()
    except CliError as exc:
        resume_collection()
        return fail(str(exc))
    except signals.StopRequested as stop:  # nothing runs yet; what had started is stopped
        resume_collection()
        log.info("Stopped during start-up (%s)", stop)
        return stop.exit_status
    except BaseException:
        resume_collection()
        raise
    return runtime.run()


def load_worker_config(path: str, config_cls: type) -> Any:  # a WorkerConfig subclass instance
    from connect.runtime.properties import load_config_file

    try:
        props = load_config_file(path)
    except ConfigException as exc:
        raise CliError(str(exc)) from exc
    try:
        return config_cls(props)
    except ConfigException as exc:
        raise CliError(f"{path}: {exc}") from exc


def rest_worker_id(config: Any) -> str:
    """``host:port`` of the worker's REST API as other workers and users reach it (Kafka Connect's worker id).

    As Kafka Connect builds its advertised URL: ``rest.advertised.host.name`` and ``rest.advertised.port``
    when set, else the host (``advertised_host``) and port of the first listener of the advertised protocol;
    ``RestServer.advertised_url`` applies the same rule to the bound listener.
    """
    listeners = [urlsplit(str(item).strip()) for item in config.get_list("listeners") if str(item).strip()]
    protocol = config.get("rest.advertised.listener")
    chosen = next((lst for lst in listeners if lst.scheme == protocol), listeners[0] if listeners else None)
    host = advertised_host(config.get("rest.advertised.host.name"), chosen.hostname if chosen is not None else None)
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 address
    port = config.get("rest.advertised.port")
    if port is None and chosen is not None:
        try:
            port = chosen.port
        except ValueError:
            port = None  # out of range: the REST server refuses the listener with a line naming the key
    return f"{host}:{port}" if port else f"{host}:{uuid.uuid4().hex[:8]}"


class WorkerProcess(abc.ABC):
    """Everything a worker process runs, started in order and stopped in reverse."""

    MODE = "worker"

    def __init__(self, worker_config_path: str, config_cls: type) -> None:
        """Load and check the config, start the REST front process, load the plugins and check what needs
        them (``_check_config``, ``_check_with_plugins``); ``signals.StopRequested`` between the steps. On any
        failure the front process is stopped before the error goes up, so none of its lines follow it."""
        from connect.runtime.plugins import PluginRegistry

        self._stop = threading.Event()
        self._fatal: str | None = None
        self._front_launch: FrontLaunch | None = None
        self.herder: Any = None
        self.rest: RestServer | RestFrontProcess | None = None
        self.backend: Any = None
        self.schema_registry: Any = None
        self.config = load_worker_config(worker_config_path, config_cls)
        for line in self.config.unknown_key_warnings():  # accepted, as Kafka Connect accepts them, but said
            log.warning(line)
        self._check_config(worker_config_path)
        signals.raise_if_requested()
        try:
            # before the REST front's fork and Flask: the hosts need neither (the front is not a fork server's)
            self._start_host_fork_server()
            if self.config.rest_separate_process and self.config.get_list("listeners"):
                from rest.front_process import FrontLaunch

                # it starts and binds the listeners while this worker loads its plugins and state; it says
                # nothing until this worker has accepted its config and logs where it listens
                self._front_launch = FrontLaunch(self.config.originals)
                signals.raise_if_requested()
            self.plugins = PluginRegistry(self.config.get_list("plugin.path"))
            signals.raise_if_requested()
            self._check_worker_plugins(worker_config_path)
            self._check_with_plugins(worker_config_path)
            signals.raise_if_requested()
        except BaseException:
            self._close_front_launch()
            from connect.runtime.host_forkserver import stop_fork_server

            stop_fork_server()
            raise

    def _check_config(self, path: str) -> None:  # noqa: B027 - optional hook
        """What the mode requires of its worker config, beyond its ConfigDef: CliError naming the key."""

    def _check_with_plugins(self, path: str) -> None:  # noqa: B027 - optional hook
        """Further checks that need the plugins (connector files): CliError naming the file and key."""

    def _close_front_launch(self) -> None:
        if self._front_launch is not None:  # the worker failed or stopped before its REST server started
            self._front_launch.close()
            self._front_launch.remove_directory()
            self._front_launch = None

    def _check_worker_plugins(self, path: str) -> None:
        for key, kind in (("key.converter", "converter"), ("value.converter", "converter"),
                          ("header.converter", "header_converter")):
            name = self.config.get(key)
            if name:
                try:
                    self.plugins.resolve(str(name), kind, key)
                except ConfigException as exc:
                    raise CliError(f"{path}: {exc}") from exc

    @abc.abstractmethod
    def start(self) -> None: ...

    def fail_fatal(self, message: str) -> None:
        """Stop the process with ``message`` as its one error line (from any thread)."""
        self._fatal = message
        self._stop.set()

    def _start_rest(self, herder: Herder) -> None:
        listeners = self.config.get_list("listeners")
        if not listeners:
            return
        from connect.runtime.control_priority import CONTROL_PRIORITY
        from rest import RestConfigError, RestServer, create_app

        # only requests of this server make the tasks step aside, so its bound is set with it
        CONTROL_PRIORITY.max_yield_s = self.config.rest_request_priority_max_ms / 1000
        self.schema_registry = self._schema_registry()
        try:
            app = create_app(herder, self.config.originals, schema_registry=self.schema_registry)
            if self._front_launch is not None:
                from rest.front_process import RestFrontProcess

                launch, self._front_launch = self._front_launch, None
                self.rest = RestFrontProcess(herder, app, launch, on_exit=self.fail_fatal,
                                             request_observer=CONTROL_PRIORITY)
            else:
                self.rest = RestServer(app, self.config.originals, request_observer=CONTROL_PRIORITY)
        except RestConfigError as exc:
            raise ConfigException(message=str(exc)) from exc
        self.rest.start()

    def _schema_registry(self) -> Any:
        """The registry served under /schema-registry/, opened on its first request (connect.schema_registry)."""
        # start-up time: only a worker that serves REST loads the registry's modules
        from connect.schema_registry.lazy import LazySchemaRegistry
        from connect.schema_registry.store import SchemaStore

        try:
            topic, level, replication = registry_settings(dict(self.config.originals))
        except CliError as exc:
            raise ConfigException(message=str(exc)) from exc
        backend = self.backend
        return LazySchemaRegistry(lambda: SchemaStore(backend, topic, replication_factor=replication,
                                                      default_compatibility=level))

    def run(self) -> int:
        signals.install()  # done by the console script already; here for any other caller
        from connect.runtime.gc_policy import settle_heap
        from connect.runtime.herder import HerderError

        settle_heap()  # plugins are loaded: what is alive now lives as long as the process
        sys.setswitchinterval(self.config.python_switch_interval_us / 1_000_000)
        try:
            signals.raise_if_requested()
            self.start()
        except signals.StopRequested as stop:
            log.info("Shutting down during start-up (%s)", stop)
            self._arm_shutdown_watchdog()
            self.shutdown()
            log.info("Headrace %s worker stopped", self.MODE)
            return stop.exit_status
        except HerderError as exc:  # a ConnectException, but a refused connector file reports a failed start
            log.error("Worker failed to start", exc_info=exc)
            self.shutdown()
            return fail(f"worker failed to start: {exc}", EXIT_RUNTIME)
        except (ConfigException, ConnectException, LogError, OSError) as exc:
            log.debug("start-up failed", exc_info=exc)
            self.shutdown()
            return fail(str(exc), EXIT_RUNTIME)
        except Exception as exc:  # the user gets one line; the trace goes to the log
            log.error("Worker failed to start", exc_info=exc)
            self.shutdown()
            return fail(f"worker failed to start: {exc}", EXIT_RUNTIME)
        log.info("Headrace %s worker started", self.MODE)
        # polled: the signal handler only notes the signal (it may not take the event's lock), and the wait
        # for a fatal error from another thread is not woken by a signal either
        while not self._stop.wait(_STOP_POLL_S) and signals.requested() is None:
            pass
        fatal = self._fatal  # what ended the wait: a signal that comes during the stop does not hide it
        signum = signals.requested() if fatal is None else None
        log.info("Shutting down%s", f" ({signal.Signals(signum).name})" if signum is not None else "")
        self._arm_shutdown_watchdog()
        self.shutdown()
        log.info("Headrace %s worker stopped", self.MODE)
        if fatal is not None:
            return fail(fatal, EXIT_RUNTIME)
        return signals.exit_status(signum) if signum is not None else 0

    def _start_host_fork_server(self) -> None:
        """When tasks will run in task hosts: the fork server that forks them (connect.runtime.host_forkserver),
        made now, while this process is one thread and has opened no log, socket or thread a host must not
        inherit. The modules every host runs are imported first, once for the worker and all its hosts (the
        worker imports them in start() anyway); what only the REST API uses (Flask) comes after the fork."""
        from connect.runtime.task_host import default_task_processes

        processes = self.config.task_processes
        if (processes if processes >= 0 else default_task_processes()) == 0:
            return
        from connect.runtime import host_forkserver, task_host_process, worker  # noqa: F401

        if self.config.uses_kafka:
            import connect.log.kafka.backend  # noqa: F401
        else:
            import connect.log.embedded.backend  # noqa: F401

        if host_forkserver.start_fork_server(_forked_host_main) is None:
            log.debug("Task hosts start as new processes: this process runs threads already")

    def _arm_shutdown_watchdog(self) -> None:
        """A stop that hangs (a request handler or a thread that never returns: the REST server waits for its
        request threads without a bound, and they are not daemons) ends the process past its bound anyway."""
        bound = self.config.task_shutdown_graceful_timeout_ms / 1000 + _SHUTDOWN_MARGIN_S
        threading.Thread(target=_exit_if_still_running, args=(bound, self.MODE), name="shutdown-watchdog",
                         daemon=True).start()

    def shutdown(self) -> None:
        self._close_front_launch()
        if self.schema_registry is not None:
            # before the REST server's stop, which waits for requests under way: a compatibility check is
            # CPU-bound and may take seconds, and this ends it now (its request answers 503)
            self.schema_registry.interrupt()
        if self.rest is not None:
            self.rest.stop()
        if self.schema_registry is not None:
            self.schema_registry.close()
        if self.herder is not None:
            self.herder.stop()
        if self.backend is not None:
            self.backend.close()
        from connect.runtime.host_forkserver import stop_fork_server

        stop_fork_server()  # after the herder's stop, which stopped the hosts it forked


def _forked_host_main(channel_fd: int, index: int) -> int:
    """What a task host forked by the fork server runs: what ``python -P -m connect.runtime.task_host_process``
    runs."""
    from connect.runtime import task_host_process

    # its lines name the logger as under ``python -m``
    task_host_process.log = logging.getLogger("__main__")
    return task_host_process.serve(channel_fd, index)


def _exit_if_still_running(bound_s: float, mode: str) -> None:
    """Runs in a daemon thread from the start of a stop: returns only if the process exits first."""
    time.sleep(bound_s)
    frames = sys._current_frames()
    stuck = []
    for thread in threading.enumerate():
        if thread.daemon or thread.ident is None:
            continue
        frame = frames.get(thread.ident)
        where = f" at {os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}" if frame is not None else ""
        stuck.append(f"{thread.name}{where}")
    log.error("Headrace %s worker did not stop within %.0f s of being asked to (still running: %s); exiting "
              "without waiting for them", mode, bound_s, ", ".join(stuck) or "nothing")
    for handler in logging.getLogger().handlers:
        handler.flush()
    # what was acknowledged is durable already (as after a kill -9); what is left would only keep the process up
    os._exit(fail(f"the worker did not stop within {bound_s:.0f} s; exited without waiting for "
                  f"{', '.join(stuck) or 'the shutdown'}", EXIT_RUNTIME))


def keep_secrets_out_of_text(transformer: Any, status: Any) -> None:
    """Values resolved from config providers are blanked from every log line and status trace."""
    from connect.runtime.config_transformer import SecretRedactingFilter

    status.redact = transformer.redact
    redacting = SecretRedactingFilter(transformer)
    for handler in logging.getLogger().handlers:
        handler.addFilter(redacting)
