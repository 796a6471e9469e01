"""Models: train with the paper's presets, cache on disk, save and load safely with skops.

>>> from attentive.data import load_dataset
>>> from attentive.models import train_model, default_model_params
>>> ds = load_dataset("digits-2v5")
>>> model = train_model(ds, **default_model_params(ds.name), cache=False)
>>> model.kernel
'rbf'
"""

from attentive.models.persistence import (
    PROJECT_TYPES,
    SUPPORTED_KERNELS,
    SUPPORTED_MODELS,
    TRUSTED_TYPES,
    check_n_features,
    check_supported_model,
    final_estimator,
    load_model,
    model_fingerprint,
    save_model,
)
from attentive.models.training import (
    KINDS,
    PAPER_PRESETS,
    default_model_params,
    make_model,
    model_cache_path,
    paper_preset,
    train_model,
)

__all__ = [
    "KINDS",
    "PAPER_PRESETS",
    "PROJECT_TYPES",
    "SUPPORTED_KERNELS",
    "SUPPORTED_MODELS",
    "TRUSTED_TYPES",
    "check_n_features",
    "check_supported_model",
    "default_model_params",
    "final_estimator",
    "load_model",
    "make_model",
    "model_cache_path",
    "model_fingerprint",
    "paper_preset",
    "save_model",
    "train_model",
]
