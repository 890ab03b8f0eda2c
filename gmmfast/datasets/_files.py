"""Reading a user's points from a file."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, List, Optional, Tuple, Union

import numpy as np

from .._validation import check_input_file


def _numbers(fields: List[str]) -> List[Optional[float]]:
    """Each field as a float, or None where it is not a number."""
    out: List[Optional[float]] = []
    for f in fields:
        try:
            out.append(float(f))
        except ValueError:
            out.append(None)
    return out


def _split(line: str, delimiter: Optional[str]) -> List[str]:
    return [f.strip() for f in line.split(delimiter)]


def _content(lines: List[str]) -> List[Tuple[int, str]]:
    """(line number, text) of the lines that hold data, without '#' comments and blanks."""
    out = []
    for i, line in enumerate(lines):
        text = line.split("#", 1)[0].strip()
        if text:
            out.append((i + 1, text))
    return out


def _first_bad(path: Path, rows: List[Tuple[int, str]], delimiter: Optional[str],
               width: int) -> str:
    """Where the table cannot be read: the first row with a non-number or another width."""
    for number, text in rows:
        fields = _split(text, delimiter)
        values = _numbers(fields)
        if None in values:
            return (f"{path}, line {number}: cannot read {fields[values.index(None)]!r} as a "
                    "number")
        if len(fields) != width:
            return (f"{path}, line {number}: {len(fields)} values where the first data line "
                    f"has {width}")
    return f"{path}: not a table of numbers"


def _read_text_fast(path: Path) -> Optional[np.ndarray]:
    """The table of :func:`_read_text` parsed by numpy's C reader in one call, or None when
    the file is anything but a plain table (the line-by-line reader then reads it and says
    which line is wrong).

    Only the first two data lines are looked at in Python, to find the delimiter and the
    header by the same rules; ``np.loadtxt`` drops '#' comments and blank lines itself, and
    rejects a non-number or a row of another width. The lines are ``str.splitlines``'s, as
    the line-by-line reader's.
    """
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except (UnicodeDecodeError, OSError):
        return None
    head: List[Tuple[int, str]] = []
    for i, line in enumerate(lines):
        data = line.split("#", 1)[0].strip()
        if data:
            head.append((i, data))
            if len(head) == 2:
                break
    if not head:
        return None
    delimiter = "," if "," in head[0][1] else None
    first = _numbers(_split(head[0][1], delimiter))
    skip = 0
    if all(v is None for v in first):              # a header, if numbers follow
        if len(head) < 2 or None in _numbers(_split(head[1][1], delimiter)):
            return None
        skip = head[0][0] + 1                      # the lines up to the header's, with it
    elif None in first:
        return None
    try:
        return np.loadtxt(lines[skip:] if skip else lines, delimiter=delimiter, comments="#",
                          ndmin=2, dtype=np.float64)
    except ValueError:
        return None


def _read_text(path: Path) -> np.ndarray:
    """A text table: comma- or whitespace-separated, '#' comments, an optional header line.

    The first line is a header when none of its fields is a number and the
    next line is all numbers; a first line with some numbers and some
    non-numbers is a typo, reported with its line number (a UTF-8 byte-order
    mark is not part of the first field).

    A plain table is parsed by one ``np.loadtxt`` call (:func:`_read_text_fast`; measured
    10-20 % faster at 100k x 16: loadtxt's own parsing is most of the time); anything it
    rejects is read here line by line, which finds the first bad line for the error message.
    """
    fast = _read_text_fast(path)
    if fast is not None:
        return fast
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not a UTF-8 text table: {exc}") from None
    rows = _content(lines)
    if not rows:
        raise ValueError(f"{path} holds no points.")
    delimiter = "," if "," in rows[0][1] else None
    first = _numbers(_split(rows[0][1], delimiter))
    if all(v is None for v in first):             # a header, if data follows
        if len(rows) < 2:
            raise ValueError(f"{path} has a header line but no points.")
        second = _numbers(_split(rows[1][1], delimiter))
        if None in second:
            raise ValueError(_first_bad(path, rows[1:], delimiter, len(second)))
        rows = rows[1:]
    elif None in first:
        raise ValueError(_first_bad(path, rows[:1], delimiter, len(first)))
    width = len(_split(rows[0][1], delimiter))
    try:
        return np.loadtxt([text for _, text in rows], delimiter=delimiter, ndmin=2,
                          comments=None, dtype=np.float64)
    except ValueError:
        raise ValueError(_first_bad(path, rows, delimiter, width)) from None


def _npy_header(path: Path) -> Tuple[Tuple[int, ...], bool, np.dtype]:
    """(shape, Fortran order, dtype) from the header of the .npy file ``path``, without
    reading its data."""
    fmt = np.lib.format
    try:
        with open(path, "rb") as fh:
            version = fmt.read_magic(fh)
            read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
            return read(fh)
    except (ValueError, OSError, EOFError) as exc:
        raise ValueError(f"{path} is not a readable .npy array: {exc}") from None


def _read_npy(path: Path) -> np.ndarray:
    """A .npy file's array, its header checked first (a real dtype, a non-empty 1-D or 2-D
    shape): native float64 is a read-only memory map of the file (no copy), any other real
    dtype is converted to float64."""
    shape, fortran, dtype = _npy_header(path)
    if dtype.kind == "c":
        raise ValueError(f"{path} holds complex numbers ({dtype}); points must be real "
                         "(save the real and imaginary parts as separate columns).")
    if dtype.kind not in "fiub" or dtype.hasobject or dtype.fields is not None:
        raise ValueError(f"{path} must hold real numbers, got dtype {dtype}.")
    if len(shape) not in (1, 2) or 0 in shape:
        raise ValueError(f"{path} must hold a non-empty table of points, got shape {shape}.")
    try:
        X = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise ValueError(f"{path} is not a readable .npy array: {exc}") from None
    if X.dtype != np.float64 or not X.dtype.isnative:
        X = np.array(X, dtype=np.float64)
    return X


def _first_not_finite(X: np.ndarray) -> Optional[int]:
    """The first row of ``X`` holding NaN or infinity (None: none), checked in blocks of
    about a million values (a memory map is read once, without an n x d mask)."""
    step = max(1, (1 << 20) // max(1, X.shape[1]))
    for lo in range(0, X.shape[0], step):
        bad = np.flatnonzero(~np.isfinite(X[lo:lo + step]).all(axis=1))
        if bad.size:
            return lo + int(bad[0])
    return None


def read_points(path: Union[str, Path]) -> np.ndarray:
    """A 2-D float64 array of points, one per row, from ``.npy`` or a text table.

    Text: comma- or whitespace-separated numbers, lines starting with '#'
    skipped, an optional header line (see :func:`_read_text`). ``.npy``: a 1-D
    or 2-D array of real numbers (integers and booleans become float64; complex
    numbers are an error, not silently made real), its header checked before its data are
    read; native float64 in C order is returned as a read-only memory map of the file, not
    copied.

    Raises
    ------
    ValueError
        The file is not such a table, is empty, or holds NaN or infinity, or is a folder,
        a pipe or a device; the message names the file and, for text, the line.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {path!r}.")
    if not os.fspath(path):
        raise ValueError("path must name a file, got ''.")   # Path('') would be the folder '.'
    path = Path(path)
    check_input_file(path)
    if path.suffix == ".npy":
        X = _read_npy(path)
    else:
        X = _read_text(path)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{path} must hold a non-empty table of points, got shape {X.shape}.")
    bad = _first_not_finite(X)
    if bad is not None:
        raise ValueError(f"{path}: point {bad} (0-based, after any header) holds NaN or "
                         "infinity; all values must be finite.")
    return np.ascontiguousarray(X)


def _npy_rows(path: str, lo: int, hi: int) -> np.ndarray:
    X = np.load(path, mmap_mode="r", allow_pickle=False)
    return np.array(X[lo:hi] if X.ndim == 2 else X[lo:hi, None])


def read_npy_dask(path: Union[str, os.PathLike], chunk_bytes: int = 64 << 20) -> Any:
    """A ``.npy`` file as a dask array of row blocks of about ``chunk_bytes`` each.

    Only the header is read here; each block task memory-maps the file and copies its rows,
    so the file may be far larger than memory (workers must see the same path). Needs dask
    (``pip install "gmmfast[dask]"``). A 1-D array is read as one column.
    """
    import dask
    import dask.array as da
    check_input_file(path)
    X = np.load(path, mmap_mode="r", allow_pickle=False)
    if X.ndim not in (1, 2) or X.shape[0] == 0 or X.dtype.kind not in "fiub":
        raise ValueError(f"{path} must hold a non-empty 1-D or 2-D array of numbers, got "
                         f"{X.dtype} of shape {X.shape}.")
    n = X.shape[0]
    d = X.shape[1] if X.ndim == 2 else 1
    rows = max(1, int(chunk_bytes) // max(1, d * X.dtype.itemsize))
    parts = [da.from_delayed(dask.delayed(_npy_rows)(str(path), lo, min(lo + rows, n)),
                             shape=(min(lo + rows, n) - lo, d), dtype=X.dtype)
             for lo in range(0, n, rows)]
    return da.concatenate(parts, axis=0)
