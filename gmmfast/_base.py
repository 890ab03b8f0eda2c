"""The small part of scikit-learn's estimator protocol we implement ourselves.

scikit-learn is not a runtime dependency, so parameters, cloning and tags are
provided here, and the clusterers' feature names and ``set_output``
(:class:`TransformerOutputMixin`); `__sklearn_tags__` imports scikit-learn only
when scikit-learn asks for the tags.
"""
from __future__ import annotations

import inspect
import sys
import warnings
from typing import Any, Dict, Optional

import numpy as np

from . import _validation

#: The containers ``set_output(transform=...)`` accepts (scikit-learn's).
OUTPUTS = ("default", "pandas", "polars")


class BaseEstimator:
    """get_params / set_params from the ``__init__`` signature, a repr, fitted checks."""

    @classmethod
    def _param_names(cls) -> list:
        sig = inspect.signature(cls.__init__)
        return sorted(p.name for p in sig.parameters.values()
                      if p.name != "self" and p.kind != p.VAR_KEYWORD)

    def get_params(self, deep: bool = True) -> Dict[str, Any]:
        """Parameters of this estimator, as given to ``__init__``."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> "BaseEstimator":
        """Set parameters; unknown names raise a ValueError that lists the valid ones."""
        valid = self._param_names()
        for name, value in params.items():
            if name not in valid:
                raise ValueError(f"Invalid parameter {name!r} for {type(self).__name__}; "
                                 f"valid parameters are {valid}.")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        sig = inspect.signature(type(self).__init__)
        changed = []
        for name in self._param_names():
            default = sig.parameters[name].default
            value = getattr(self, name)
            if value is not default and not _same(value, default):
                changed.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(changed)})"

    def __sklearn_is_fitted__(self) -> bool:
        return getattr(self, "_fitted", False)

    def _check_is_fitted(self) -> None:
        if not self.__sklearn_is_fitted__():
            raise _validation.NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet. "
                "Call 'fit' with appropriate arguments first.")

    def _more_sklearn_tags(self, tags: Any) -> Any:
        return tags

    def __sklearn_tags__(self) -> Any:
        from sklearn.utils import InputTags, Tags, TargetTags
        tags = Tags(estimator_type=None, target_tags=TargetTags(required=False),
                    transformer_tags=None, regressor_tags=None, classifier_tags=None,
                    input_tags=InputTags(two_d_array=True, sparse=False, allow_nan=False))
        return self._more_sklearn_tags(tags)


def feature_names(X: Any) -> Optional[np.ndarray]:
    """Column names of a data frame if they are all strings (as scikit-learn), else None."""
    columns = getattr(X, "columns", None)
    if columns is None or hasattr(X, "tocsr"):
        return None
    names = np.asarray(list(columns), dtype=object)
    is_str = np.array([isinstance(c, str) for c in names], dtype=bool)
    if names.shape[0] and is_str.all():
        return names
    if is_str.any():
        raise TypeError("Feature names are only supported if all input features have string "
                        f"names, but your input has {sorted({type(c).__name__ for c in names})}"
                        " as feature name / column name types.")
    return None


def _names_mismatch(fitted: np.ndarray, names: np.ndarray) -> str:
    """scikit-learn's message (``_check_feature_names``) for column names that differ from
    the fit's: the unseen and the missing ones (five of each at most), or the order."""
    unexpected = sorted(set(names) - set(fitted))
    missing = sorted(set(fitted) - set(names))

    def listed(items: list) -> str:
        return "".join(f"- {n}\n" for n in items[:5]) + ("- ...\n" if len(items) > 5 else "")
    message = "The feature names should match those that were passed during fit.\n"
    if unexpected:
        message += "Feature names unseen at fit time:\n" + listed(unexpected)
    if missing:
        message += "Feature names seen at fit time, yet now missing:\n" + listed(missing)
    if not unexpected and not missing:
        message += "Feature names must be in the same order as they were in fit.\n"
    return message


class TransformerOutputMixin:
    """scikit-learn's feature-name and output-container protocol without importing it:
    ``feature_names_in_`` (scikit-learn's ``_check_feature_names``: set by fit from a data
    frame's string columns, checked by the other methods), ``set_output`` and the wrapping
    of ``transform``'s result (``_SetOutputMixin``). The class defines
    ``get_feature_names_out``."""

    def _set_feature_names(self, names: Optional[np.ndarray]) -> None:
        """At fit: record ``names`` (from :func:`feature_names`), or forget an earlier fit's."""
        if names is not None:
            self.feature_names_in_ = names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_

    def _check_feature_names(self, X: Any, stacklevel: int = 3) -> None:
        """After fit: X's column names against the fit's, as scikit-learn checks them (a
        warning when only one of the two has names, an error when they differ)."""
        names = feature_names(X)
        fitted = getattr(self, "feature_names_in_", None)
        if fitted is not None and names is None:
            warnings.warn(f"X does not have valid feature names, but {type(self).__name__} was "
                          "fitted with feature names", UserWarning, stacklevel=stacklevel + 1)
        elif fitted is None and names is not None:
            warnings.warn(f"X has feature names, but {type(self).__name__} was fitted without "
                          "feature names", UserWarning, stacklevel=stacklevel + 1)
        elif fitted is not None and (names.shape != fitted.shape or (names != fitted).any()):
            raise ValueError(_names_mismatch(fitted, names))

    def set_output(self, *, transform: Optional[str] = None) -> Any:
        """Output container of ``transform`` and ``fit_transform``: "default" (ndarray),
        "pandas" or "polars" (data frames with the columns of get_feature_names_out);
        None leaves it unchanged (scikit-learn's global ``transform_output`` applies)."""
        if transform is None:
            return self
        if not isinstance(transform, str) or transform not in OUTPUTS:
            raise ValueError(f"transform must be one of {OUTPUTS} or None, got {transform!r}.")
        if transform != "default":
            _container(transform)       # not installed: an ImportError now, not at transform
        self._sklearn_output_config = {"transform": transform}
        return self

    def _wrap(self, out: Any, X: Any) -> Any:
        """``out`` (an ndarray) in the container chosen by set_output, else by scikit-learn's
        ``transform_output`` setting; anything else (a lazy dask array) is returned as is."""
        if not isinstance(out, np.ndarray):
            return out
        how = getattr(self, "_sklearn_output_config", {}).get("transform")
        if how is None:
            # only a scikit-learn that was imported can have been configured: do not import it
            sklearn = sys.modules.get("sklearn")
            how = (sklearn.get_config().get("transform_output", "default")
                   if sklearn is not None and hasattr(sklearn, "get_config") else "default")
        if how == "pandas":
            pd = _container(how)
            index = X.index if isinstance(X, pd.DataFrame) else None
            return pd.DataFrame(out, index=index, columns=self.get_feature_names_out())
        if how == "polars":
            return _container(how).DataFrame(out, schema=list(self.get_feature_names_out()), orient="row")
        return out


def _container(how: str) -> Any:
    """The module of output container ``how`` ("pandas" or "polars"); an ImportError that
    names it when it is not installed."""
    import importlib
    try:
        return importlib.import_module(how)
    except ModuleNotFoundError as e:
        raise ImportError(f"set_output(transform={how!r}) needs {how}, which is not "
                          f"installed: pip install {how}.") from e


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # arrays and other objects without a plain truth value
        return False
