"""A SparkSession ready for the verification job, wherever it is started from.

Spark's Python workers must run the interpreter that has mirrorsim installed, and the
JVM must be found even when the operator's shell sets neither variable, so both are
derived here instead of being left to the environment.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from mirrorsim.verify.kafka_source import KafkaDataSource
from mirrorsim.verify.segment_source import SegmentDataSource

LOCAL_MASTER = "local[*]"
QUIET_LOG_CONFIG = Path(__file__).with_name("log4j2.properties")
"""Spark's JVM logs errors only: no banner, no NativeCodeLoader warning in the output."""


def prepare_environment() -> None:
    """Point Spark at this interpreter, a JVM and loopback, keeping what the operator set."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # Bind the driver and block manager to loopback: verification never needs another host
    # unless the operator says so, and Spark otherwise picks the first non-loopback address.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if "JAVA_HOME" not in os.environ:
        java = shutil.which("java")
        if java is not None:
            os.environ["JAVA_HOME"] = str(Path(java).resolve().parent.parent)


def verification_session(
    master: str = LOCAL_MASTER, *, app_name: str = "mirrorsim-verify", spark_logs: bool = False
) -> SparkSession:
    """Get or create the session and register the mirrorsim data sources on it. Unless
    ``spark_logs`` asks for Spark's own logging, a new driver JVM logs errors only."""
    prepare_environment()
    builder = SparkSession.builder
    if not spark_logs:
        builder = builder.config(
            "spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={QUIET_LOG_CONFIG}"
        )
    spark = (
        builder.master(master)
        .appName(app_name)
        .config("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(SegmentDataSource)
    spark.dataSource.register(KafkaDataSource)
    return spark
