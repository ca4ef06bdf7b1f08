"""Pipeline layer: starting Spark for the jobs (local mode or ``--master``), with clear errors. Imports pyspark and the stdlib only.

:func:`start_session` checks what Spark needs before starting its JVM, so
that an operator gets one line instead of a Java stack trace:

* Java: ``JAVA_HOME/bin/java`` or ``java`` on PATH (Spark 4 needs 17 or 21);
* the master URL: ``local``, ``local[N]``, ``local[*]``, ``local[N,F]``,
  ``spark://HOST:PORT[,HOST:PORT...]`` (reachable: checked with a TCP
  connect), ``yarn``, ``k8s://...``;
* the environment: ``PYSPARK_PYTHON`` (this interpreter, unless set), and
  ``SPARK_LOCAL_IP=127.0.0.1`` for local and loopback masters.

It registers the ``actorbroker`` data source and, for a cluster master, ships
the pure-Python parts the executors need (``actorbroker.persistence``,
``actorbroker.pipeline``) as a zip with ``addPyFile``; the executors still
need pyspark, pyarrow and numpy installed (``pip install actorbroker[pipeline]``).
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import socket
import sys
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

from .errors import PipelineError
from .source import LogDataSource

__all__ = ["DEFAULT_MASTER", "check_java", "check_master", "ship_code", "start_session"]

DEFAULT_MASTER = "local[*]"
_LOCAL = re.compile(r"local(\[(\*|\d+)(,\d+)?\])?")
_STANDALONE = re.compile(r"spark://([^,/:]+:\d+)(,[^,/:]+:\d+)*")
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def check_java() -> str:
    """The java executable Spark will use; PipelineError when there is none."""
    home = os.environ.get("JAVA_HOME")
    if home:
        java = Path(home) / "bin" / "java"
        if java.is_file() and os.access(java, os.X_OK):
            return str(java)
        raise PipelineError(f"JAVA_HOME is {home!r} but {java} is not an executable: fix "
                            "JAVA_HOME or unset it (Spark 4 needs Java 17 or 21)")
    found = shutil.which("java")
    if found is None:
        raise PipelineError("Spark needs Java 17 or 21 and there is no `java` on PATH: install a "
                            "JRE (Debian: apt-get install default-jre-headless) or set JAVA_HOME")
    return found


def check_master(master: str, *, timeout: float = 3.0) -> str:
    """``master`` if it is a master URL Spark accepts (a standalone one must answer)."""
    if _LOCAL.fullmatch(master) or master == "yarn" or master.startswith("k8s://"):
        return master
    if not _STANDALONE.fullmatch(master):
        raise PipelineError(f"bad master URL {master!r}: use local, local[N], local[*], "
                            "spark://HOST:PORT, yarn or k8s://URL")
    errors = []
    for address in master[len("spark://"):].split(","):
        host, _, port = address.rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=timeout):
                return master
        except OSError as exc:
            errors.append(f"{address}: {exc.strerror or exc}")
    raise PipelineError(f"cannot reach the Spark master {master} ({'; '.join(errors)}): "
                        "is it running? (start it with spark-class "
                        "org.apache.spark.deploy.master.Master)")


def _is_local(master: str) -> bool:
    if _LOCAL.fullmatch(master):
        return True
    hosts = [a.rpartition(":")[0] for a in master.removeprefix("spark://").split(",")]
    return master.startswith("spark://") and all(h in _LOOPBACK for h in hosts)


def start_session(
    master: str | None = None, *, app_name: str = "actorbroker-pipeline",
    shuffle_partitions: int | None = None, driver_memory: str = "1g",
    conf: Mapping[str, str] | None = None, log_level: str = "ERROR",
) -> SparkSession:
    """A SparkSession for the jobs, with the ``actorbroker`` format registered.

    Reuses the running session of this process if there is one (Spark runs
    one per JVM): its master then wins over ``master``. Spark's own log goes
    to stderr at ``log_level`` (the jobs' errors reach Python as exceptions).
    """
    master = check_master(master or DEFAULT_MASTER)
    check_java()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if _is_local(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    cores = os.cpu_count() or 2
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": driver_memory,
        "spark.sql.shuffle.partitions": str(shuffle_partitions or max(4, 2 * cores)),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.pyspark.python": os.environ["PYSPARK_PYTHON"],
        "spark.pyspark.driver.python": os.environ["PYSPARK_DRIVER_PYTHON"],
        **(conf or {}),
    }
    if "-Dlog4j" not in settings.get("spark.driver.extraJavaOptions", ""):
        options = settings.get("spark.driver.extraJavaOptions", "")
        settings["spark.driver.extraJavaOptions"] = (
            f"{options} -Dlog4j.configurationFile=file:{_log4j_file(log_level)}").strip()
    if _is_local(master):
        settings.setdefault("spark.driver.host", "127.0.0.1")
        settings.setdefault("spark.driver.bindAddress", "127.0.0.1")
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:  # the JVM did not start: say why in one line
        raise PipelineError(f"Spark did not start (master {master}): {exc}") from exc
    spark.sparkContext.setLogLevel(log_level)
    spark.dataSource.register(LogDataSource)
    if not master.startswith("local"):
        ship_code(spark)
    return spark


_LOG4J = """\
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = stderr
appender.console.type = Console
appender.console.name = stderr
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{HH:mm:ss}} %p %c{{1}}: %m%n%ex
"""


def _log4j_file(level: str) -> Path:
    """A log4j2 configuration for the driver: Spark's log on stderr at ``level``."""
    path = Path(tempfile.gettempdir()) / f"actorbroker-pipeline-log4j2-{level.lower()}.properties"
    if not path.exists():
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(_LOG4J.format(level=level.lower()))
        os.replace(temporary, path)
    return path


def ship_code(spark: SparkSession) -> Path:
    """Zip actorbroker's errors, persistence and pipeline and add it to the executors' path."""
    root = Path(__file__).resolve().parents[1]  # the actorbroker package
    folder = tempfile.mkdtemp(prefix="actorbroker-pipeline-")
    atexit.register(shutil.rmtree, folder, True)
    target = Path(folder) / "actorbroker.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(root / "__init__.py", "actorbroker/__init__.py")
        archive.write(root / "errors.py", "actorbroker/errors.py")
        for package in ("persistence", "pipeline"):
            for path in sorted((root / package).glob("*.py")):
                archive.write(path, f"actorbroker/{package}/{path.name}")
    spark.sparkContext.addPyFile(str(target))
    return target
