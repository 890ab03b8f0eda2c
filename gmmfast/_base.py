"""The small part of scikit-learn's estimator protocol we implement ourselves.

scikit-learn is not a runtime dependency, so parameters, cloning and tags are
provided here; `__sklearn_tags__` imports scikit-learn only when scikit-learn
asks for the tags.
"""
from __future__ import annotations

import inspect
from typing import Any, Dict

from . import _validation


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


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # arrays and other objects without a plain truth value
        return False
