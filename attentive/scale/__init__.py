"""Score data larger than one machine with Dask (``pip install attentive[scale]``).

- :func:`score_dask`: a Dask array (dense or sparse blocks) or DataFrame in, a lazy Dask DataFrame
  of each row's decision, label, positive, terms evaluated, stopped flag and stop side out.
- :func:`score_file` (``python -m attentive score``): a LIBSVM, CSV or Parquet file in, a Parquet
  directory and a :class:`ScoreSummary` out, on a local or existing Dask cluster; its halves
  :func:`read_input` (lazy row chunks, read by :mod:`attentive.data.reader`, the reader the
  dashboard's uploads use too) and :func:`write_scores` (a Parquet directory that appears only
  once complete).
- :func:`parallel_post_fit`: the classifier inside dask-ml's ``ParallelPostFit``
  (``pip install attentive[dask-ml]``).

See docs/scale.md.
"""

from attentive.data.reader import FORMATS
from attentive.scale.evaluate import (
    COLUMNS,
    evaluation_frame,
    parallel_post_fit,
    score_dask,
    scores_meta,
)
from attentive.scale.files import load_classifier, local_cluster, score_file
from attentive.scale.reading import read_input
from attentive.scale.writing import ScoreSummary, write_scores

__all__ = [
    "COLUMNS",
    "FORMATS",
    "ScoreSummary",
    "evaluation_frame",
    "load_classifier",
    "local_cluster",
    "parallel_post_fit",
    "read_input",
    "score_dask",
    "score_file",
    "scores_meta",
    "write_scores",
]
