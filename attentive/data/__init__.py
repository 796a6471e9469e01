"""Datasets: the paper's data (downloaded once, verified), offline defaults and user files.

>>> from attentive.data import load_dataset
>>> ds = load_dataset("digits-2v5")
>>> ds.class_names, ds.positive_meaning
(('2', '5'), 'digit 5')

Labels are ``0`` / ``1`` with ``1`` the positive class; features are float64, dense or CSR. See
``docs/data.md`` for the sources, checksums, splits and the decisions behind them.
"""

from attentive.data.dataset import Dataset, data_home
from attentive.data.registry import DatasetInfo, clear_cache, list_datasets, load_dataset
from attentive.data.userfile import load_user_file, max_upload_bytes

__all__ = [
    "Dataset",
    "DatasetInfo",
    "clear_cache",
    "data_home",
    "list_datasets",
    "load_dataset",
    "load_user_file",
    "max_upload_bytes",
]
