"""One local[2] SparkSession for the whole test session."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from mirrorsim.verify.session import verification_session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    session = verification_session("local[2]", app_name="mirrorsim-verify-tests")
    session.conf.set("spark.sql.shuffle.partitions", "2")
    yield session
    session.stop()
