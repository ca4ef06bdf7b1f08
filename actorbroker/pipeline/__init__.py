"""Pipeline layer: the broker's history in Spark (batch and streaming) through PySpark. Imports pyspark, pyarrow, numpy, pandas, matplotlib and actorbroker.persistence only; nothing outside this package imports pyspark.

* :mod:`.source`: the Python Data Source ``actorbroker`` (``spark.read`` and
  ``spark.readStream``), over :mod:`.logscan` (segments, offsets, frames)
  and :mod:`.columnar` / :mod:`.schema` (records to Arrow batches);
* :mod:`.aggregates`: the operators' tables as folds over the records;
* :mod:`.report` and :mod:`.stream`: the two jobs; :mod:`.charts` draws
  the report; :mod:`.spark` starts Spark with clear errors;
  :mod:`.progress` prints progress lines;
* :mod:`.commands`: ``actorbroker pipeline report|stream``.

This package's ``__init__`` imports nothing, so that the CLI can define the
``pipeline`` arguments without loading pyspark. docs/pipeline.md is the
user's guide: schema, options, jobs, tables.
"""
