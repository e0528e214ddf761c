"""atf.Block and atf.Problem: problem (16) instances in libatf's own struct (atf_problem.h).

A Problem owns a C atf_problem; arrays given to the constructor are copied once into memory the
C problem owns (atf_problem_free releases it), read-back properties are copies.

Pickling goes through the problem file: a pickled Problem is the exact bytes of the file its own
writer produces, rebuilt by the reader (the helpers _file_bytes and _from_file_bytes serve
Result and MLP too)."""
import ctypes
import os
import re
import tempfile
from typing import (TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple,
                    TypeVar, Union)

import numpy as np

from . import _check, _errors, _lib

_c = _lib.lib
DENSE, SPARSE, FACTORED = range(3)           # atf_operator_kind (the C struct's values)
_KIND_CODES = {"dense": DENSE, "factored": FACTORED, "sparse": SPARSE}
_STRUCTURES = {"matrix": 0, "diagonal": 1}   # atf_structure
_T = TypeVar("_T")
if TYPE_CHECKING:  # load's annotation only: both modules import this one
    from .mlp import MLP
    from .result import Result


def _file_bytes(write: Callable[[str], None]) -> bytes:
    """The bytes of the file that write(path) produces, written in a private temporary
    directory that is removed afterwards: the pickled state of an object wrapping C memory
    (its pointers cannot be pickled, its file holds all of it)."""
    with tempfile.TemporaryDirectory(prefix="atf-pickle-") as d:
        path = os.path.join(d, "object.h5")
        write(path)
        with open(path, "rb") as f:
            return f.read()


def _from_file_bytes(data: bytes, read: Callable[[str], _T]) -> _T:
    """The object that read(path) makes of a file with these bytes (read in a private
    temporary directory; the readers load everything, so the file goes at once)."""
    with tempfile.TemporaryDirectory(prefix="atf-pickle-") as d:
        path = os.path.join(d, "object.h5")
        with open(path, "wb") as f:
            f.write(data)
        return read(path)


def _fail(message):
    raise _errors.InputError(message, "bad input")


class Block:
    """One matrix variable B (rows × cols) with its penalty and constraint operator.

    Build one with Block.dense, Block.factored or Block.sparse; Problem.blocks returns them too
    (with copies of the operator arrays). `kind` is the operator's kind as a string: "dense",
    "factored" or "sparse"; `structure` is "matrix" or "diagonal"."""

    def __init__(self, name: str, kind: str, rows: int, cols: int, penalty: str = "sq",
                 structure: str = "matrix", **arrays: Any):
        _check.text(name, "atf.Block: name")
        self.name = str(name)
        if not self.name or len(self.name.encode()) >= _lib.NAMELEN:
            _fail(f"atf.Block: name {self.name!r}: 1 to {_lib.NAMELEN - 1} bytes")
        if not isinstance(kind, str) or kind not in _KIND_CODES:
            _fail(f"atf.Block: {self.name}: kind {kind!r} is not one of dense, factored, sparse "
                  "(Block.dense, Block.factored and Block.sparse build blocks)")
        self.kind = kind
        self.rows = _check.integer(rows, f"atf.Block: {self.name}: rows", 1)
        self.cols = _check.integer(cols, f"atf.Block: {self.name}: cols", 1)
        _check.integer(self.rows * self.cols, f"atf.Block: {self.name}: rows·cols", 1)
        _check.text(penalty, f"atf.Block: {self.name}: penalty")
        self.penalty = str(penalty)
        if structure not in _STRUCTURES:
            _fail(f"atf.Block: {self.name}: structure '{structure}' is not matrix or diagonal")
        self.structure = structure
        self.J = arrays.get("J")
        self.H = arrays.get("H")
        self.D = arrays.get("D")
        self.csr = arrays.get("csr")

    def __repr__(self):
        return (f"atf.Block({self.name!r}, {self.kind}, {self.rows}x{self.cols}, "
                f"penalty={self.penalty!r})")

    @staticmethod
    def dense(name: str, J: Any, rows: int, cols: int, penalty: str = "sq",
              structure: str = "matrix") -> "Block":
        """Dense operator: J [M, rows·cols], row m = G_m flattened row-major (a numpy array or
        torch tensor; float32 and integers converted to float64; complex, bool, object and
        string arrays refused)."""
        return Block(name, "dense", rows, cols, penalty, structure,
                     J=_check.floats(J, f"atf.Block.dense: {name}: J"))

    @staticmethod
    def factored(name: str, H: Any, D: Any, penalty: str = "sq",
                 structure: str = "matrix") -> "Block":
        """Factored operator G_m = h_i δ_mᵀ: H [N, rows] (layer inputs), D [M, cols] (arrays
        as for Block.dense)."""
        H = _check.floats(H, f"atf.Block.factored: {name}: H")
        D = _check.floats(D, f"atf.Block.factored: {name}: D")
        if H.ndim != 2 or D.ndim != 2:
            _fail(f"atf.Block.factored: {name}: H and D must be matrices, got {H.ndim}-d and "
                  f"{D.ndim}-d")
        return Block(name, "factored", H.shape[1], D.shape[1], penalty, structure, H=H, D=D)

    @staticmethod
    def sparse(name: str, csr: Any, rows: int, cols: int, penalty: str = "sq",
               structure: str = "matrix") -> "Block":
        """Sparse operator: a scipy CSR matrix [M, rows·cols] (the dense layout of Block.dense;
        complex, bool or object values refused)."""
        if not hasattr(csr, "indptr") or getattr(csr, "format", None) != "csr":
            _fail(f"atf.Block.sparse: {name}: expected a scipy.sparse CSR matrix, got "
                  f"{type(csr).__name__}")
        _check.floats(csr.data, f"atf.Block.sparse: {name}: data")
        return Block(name, "sparse", rows, cols, penalty, structure, csr=csr)


def _put(arr, ctype, count, what):
    """Copy an array into malloc'd memory that the C problem will own (arr already checked:
    _check.floats or _check.ints)."""
    a = np.ascontiguousarray(arr, dtype=ctype)
    if a.size != count:
        _fail(f"atf.Problem: {what}: {a.size} values, expected {count}")
    addr = _lib.libc.malloc(max(a.nbytes, 1))
    if not addr:
        raise MemoryError(f"atf.Problem: {what}: out of memory")
    ctypes.memmove(addr, a.ctypes.data, a.nbytes)
    return addr


def _per_example(arr, N, C, what):
    """arr ([samples, outputs], or flat [samples·outputs]) as checked floats of exactly that
    shape: a transposed [outputs, samples] array or an extra axis is refused, not reshaped."""
    a = _check.floats(arr, f"atf.Problem: {what}")
    if a.shape not in ((N, C), (N * C,)):
        _fail(f"atf.Problem: {what}: shape {tuple(a.shape)}, expected (samples, outputs) = "
              f"({N}, {C}) or ({N * C},)")
    return a


def _get(ptr, ctype, shape):
    """A numpy copy of a C array (None for NULL)."""
    if not ptr:
        return None
    n = int(np.prod(shape))
    if n == 0:
        return np.empty(shape, dtype=ctype)
    return np.ctypeslib.as_array(ptr, shape=(n,)).astype(ctype, copy=True).reshape(shape)


def _fill_block(b, blk, N, C, M):
    name = _check.text(blk.name, "atf.Problem: block name")
    if len(name) >= _lib.NAMELEN or not name:
        _fail(f"atf.Problem: block name '{blk.name}': 1 to {_lib.NAMELEN - 1} bytes")
    b.name = name
    b.rows, b.cols, b.kind = blk.rows, blk.cols, _KIND_CODES[blk.kind]
    b.structure = _STRUCTURES[blk.structure]
    spec = _check.text(blk.penalty, f"atf.Problem: {blk.name}: penalty")
    if len(spec) >= _lib.SPECLEN:
        _fail(f"atf.Problem: {blk.name}: penalty longer than {_lib.SPECLEN - 1} characters")
    err = _lib.errbuf()
    _errors.check(_c.atf_penalty_parse(spec, ctypes.byref(b.penalty), err), err)
    b.penalty_spec = spec
    where = f"/blocks/{blk.name}"
    nvar = blk.rows * blk.cols
    if blk.kind == "dense":
        if blk.J.ndim != 2 or blk.J.shape != (M, nvar):
            _fail(f"atf.Problem: {where}: J has shape {blk.J.shape}, expected ({M}, {nvar})")
        b.J = ctypes.cast(_put(blk.J, np.float64, M * nvar, where + "/J"), _lib.P_D)
    elif blk.kind == "factored":
        if blk.H.shape != (N, blk.rows) or blk.D.shape != (M, blk.cols):
            _fail(f"atf.Problem: {where}: H {blk.H.shape} and D {blk.D.shape}, expected "
                  f"({N}, rows) and ({M}, cols)")
        b.H = ctypes.cast(_put(blk.H, np.float64, N * blk.rows, where + "/H"), _lib.P_D)
        b.D = ctypes.cast(_put(blk.D, np.float64, M * blk.cols, where + "/D"), _lib.P_D)
    else:
        csr = blk.csr
        if csr.shape != (M, nvar):
            _fail(f"atf.Problem: {where}: the CSR matrix has shape {csr.shape}, expected "
                  f"({M}, {nvar})")
        b.nnz = int(csr.nnz)
        for arr, nm in ((csr.indptr, "indptr"), (csr.indices, "indices")):
            if arr.dtype.kind not in "iu":
                _fail(f"atf.Problem: {where}/{nm}: {arr.dtype} values: integers expected")
        P64 = ctypes.POINTER(ctypes.c_int64)
        b.indptr = ctypes.cast(_put(csr.indptr, np.int64, M + 1, where + "/indptr"), P64)
        b.indices = ctypes.cast(_put(csr.indices, np.int64, b.nnz, where + "/indices"), P64)
        b.data = ctypes.cast(_put(csr.data, np.float64, b.nnz, where + "/data"), _lib.P_D)


class Problem:
    """Problem (16): M = samples·outputs constraint rows (row m = i·outputs + k), right-hand side
    r and blocks; optional f0, y ([samples, outputs]) and integer labels ([samples]).

    Arrays may be numpy arrays, torch tensors or lists; float32 and integer values are
    converted to float64. Refused with atf.InputError naming the item: sizes that are not
    positive integers fitting a C int (samples, outputs, samples·outputs, rows, cols); complex,
    bool, object or string arrays (r, f0, y, J, H, D); labels that are not integers in
    0 … outputs−1 (0/1 for one output) — 2**40 + 1 is refused, not wrapped; block names and
    penalty specs with a NUL character; then everything the library's validator refuses (NaN,
    shapes, indices)."""

    def __init__(self, r: Any, blocks: Sequence[Block], samples: int, outputs: int = 1,
                 f0: Any = None, y: Any = None, labels: Any = None):
        N = _check.integer(samples, "atf.Problem: samples", 1)
        C = _check.integer(outputs, "atf.Problem: outputs", 1)
        M = _check.integer(N * C, "atf.Problem: samples·outputs", 1)
        blocks = list(blocks)
        if not blocks:
            _fail("atf.Problem: no blocks: at least one block is needed")
        self._model, self._center, self._parent = None, False, None
        r = _per_example(r, N, C, "/r")
        f0 = None if f0 is None else _per_example(f0, N, C, "/f0")
        y = None if y is None else _per_example(y, N, C, "/y")
        lab = None if labels is None else _check.labels(labels, "atf.Problem: /labels", N, C)
        p = _c.atf_problem_new(N, C, len(blocks))
        if not p:
            raise MemoryError("atf.Problem: out of memory")
        self._p = p
        try:
            r = np.ascontiguousarray(r, dtype=np.float64)
            if r.size != M:
                _fail(f"atf.Problem: r: {r.size} values, expected samples·outputs = {M}")
            ctypes.memmove(p.contents.r, r.ctypes.data, r.nbytes)
            P = p.contents
            if f0 is not None:
                P.f0 = ctypes.cast(_put(f0, np.float64, M, "/f0"), _lib.P_D)
            if y is not None:
                P.y = ctypes.cast(_put(y, np.float64, M, "/y"), _lib.P_D)
            if lab is not None:
                P.labels = ctypes.cast(_put(lab, np.intc, N, "/labels"),
                                       ctypes.POINTER(ctypes.c_int))
            names = set()
            for l, blk in enumerate(blocks):
                if not isinstance(blk, Block):
                    _fail(f"atf.Problem: blocks[{l}]: expected an atf.Block")
                if blk.name in names:
                    _fail(f"atf.Problem: block name '{blk.name}' appears twice")
                names.add(blk.name)
                _fill_block(P.blocks[l], blk, N, C, M)
            err = _lib.errbuf()
            _errors.check(_c.atf_problem_validate(p, b"atf.Problem", err), err)
        except BaseException:
            self._free()
            raise

    @classmethod
    def _wrap(cls, p):
        self = cls.__new__(cls)
        self._p = p
        self._model, self._center, self._parent = None, False, None
        return self

    @property
    def test(self) -> Optional["Problem"]:
        """The held-out split (`/test` of the problem file, X_test/Y_test of atf.features) as an
        atf.Problem of its own rows — r = y − f0, /y, /f0, /labels and the same blocks evaluated
        on the test examples — or None when there is none. It is a view of this problem (it
        keeps it alive); score it with atf.score(problem.test, result). A test split has no
        test split of its own."""
        t = self._p.contents.test
        if not t:
            return None
        sub = Problem._wrap(t)
        sub._parent = self
        sub._model, sub._center = self._model, self._center
        return sub

    @property
    def parent(self) -> Optional["Problem"]:
        """For a test split, the problem it belongs to (None otherwise)."""
        return self._parent

    @property
    def model(self):
        """The model the problem was built from by atf.features (an atf.MLP, or a float64
        snapshot of a torch module), or None (problems built from arrays or read from files)."""
        return self._model

    @property
    def centered(self):
        """Whether atf.features built it with center=True (f0 = 0, r = y)."""
        return self._center

    @classmethod
    def read(cls, path: Any) -> "Problem":
        """Read and validate a problem file (docs/formats.md)."""
        p = _lib.P_PROB()
        err = _lib.errbuf()
        _errors.check(_c.atf_problem_read(_check.path(path, "atf.Problem.read"), ctypes.byref(p),
                                          err), err)
        return cls._wrap(p)

    def write(self, path: Any) -> None:
        """Write the problem file atomically (a test split is written as a problem of its
        own)."""
        err = _lib.errbuf()
        _errors.check(_c.atf_problem_write(_check.path(path, "atf.Problem.write"), self._p, err),
                      err)

    def __reduce__(self) -> Tuple[Any, ...]:
        """Pickling (and copy.copy / copy.deepcopy, which then give an independent problem): the
        exact bytes of the problem file `write` produces — every array bit for bit, blocks,
        penalties, the test split, provenance — read back by `read`, plus what the wrapper
        carries beyond the file: `model` (an atf.MLP always pickles; a torch snapshot when
        torch can pickle its module) and `centered`. A test split pickles as its parent's
        split, so it comes back with its `parent`."""
        if self._parent is not None:
            return (_test_split_of, (self._parent,))
        return (_problem_from_bytes, (_file_bytes(self.write),),
                {"model": self._model, "centered": self._center})

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self._model, self._center = state["model"], state["centered"]

    def _free(self):
        p, self._p = getattr(self, "_p", None), None
        if p and getattr(self, "_parent", None) is None:  # a test split belongs to its parent
            _c.atf_problem_free(p)

    def __del__(self):
        self._free()

    @property
    def fingerprint(self) -> str:
        """The content fingerprint (32 hex digits; penalties are not part of it)."""
        out = ctypes.create_string_buffer(_lib.FINGERPRINT_LEN)
        err = _lib.errbuf()
        _errors.check(_c.atf_problem_fingerprint(self._p, out), err)
        return _lib.text(out.value)

    samples = property(lambda self: self._p.contents.N)
    outputs = property(lambda self: self._p.contents.C)
    M = property(lambda self: self._p.contents.M)

    @property
    def r(self):
        return _get(self._p.contents.r, np.float64, (self.M,))

    @property
    def f0(self):
        return _get(self._p.contents.f0, np.float64, (self.samples, self.outputs))

    @property
    def y(self):
        return _get(self._p.contents.y, np.float64, (self.samples, self.outputs))

    @property
    def labels(self):
        return _get(self._p.contents.labels, np.int64, (self.samples,))

    @property
    def blocks(self) -> List[Block]:
        """The blocks in order, as atf.Block with copies of their operator arrays."""
        P = self._p.contents
        out = []
        for l in range(P.nblocks):
            b = P.blocks[l]
            name, rows, cols, M, N = _lib.text(b.name), b.rows, b.cols, P.M, P.N
            spec = _lib.text(b.penalty_spec) or "sq"
            structure = "diagonal" if b.structure == 1 else "matrix"
            if b.kind == DENSE:
                out.append(Block.dense(name, _get(b.J, np.float64, (M, rows * cols)), rows, cols,
                                       spec, structure))
            elif b.kind == FACTORED:
                out.append(Block.factored(name, _get(b.H, np.float64, (N, rows)),
                                          _get(b.D, np.float64, (M, cols)), spec, structure))
            else:
                import scipy.sparse
                csr = scipy.sparse.csr_matrix(
                    (_get(b.data, np.float64, (b.nnz,)), _get(b.indices, np.int64, (b.nnz,)),
                     _get(b.indptr, np.int64, (M + 1,))), shape=(M, rows * cols))
                out.append(Block.sparse(name, csr, rows, cols, spec, structure))
        return out

    def __repr__(self):
        names = ", ".join(_lib.text(self._p.contents.blocks[l].name)
                          for l in range(self._p.contents.nblocks))
        return f"atf.Problem(samples={self.samples}, outputs={self.outputs}, blocks=[{names}])"


def _problem_from_bytes(data: bytes) -> Problem:
    """An unpickled Problem: its file's bytes read back by Problem.read."""
    return _from_file_bytes(data, Problem.read)


def _test_split_of(parent: Problem) -> Problem:
    """An unpickled test split: the split of its (unpickled) parent."""
    split = parent.test
    if split is None:
        raise _errors.InputError("atf.Problem: unpickling a test split: its parent has none",
                                 "bad input")
    return split


# the problem reader's refusal of another format names the file's own (docs/formats.md, "What
# the reader checks"): "FILE: / attribute 'format': 'atf-result', expected 'atf-problem'"
_OTHER_FORMAT = re.compile(r": / attribute 'format': '([^']*)', expected 'atf-problem'$")


def load(path: Any) -> Union[Problem, "Result", "MLP"]:
    """Read a problem, result or MLP file by its kind (the root attribute `format`,
    docs/formats.md): an atf.Problem, atf.Result or atf.MLP, as their own `read` gives it. The
    problem reader runs first (its checks, the HDF5 guard's first); its refusal of another
    format names the file's, whose reader then reads it. Refused with atf.InputError: other
    atf files (training, checkpoint, preconditioner) naming their format, and whatever the
    reader refuses (a file without `format`: the problem reader's message)."""
    from .mlp import MLP        # here, not at the top: both modules import this one
    from .result import Result
    try:
        return Problem.read(path)
    except _errors.InputError as e:
        found = _OTHER_FORMAT.search(e.message)
        if found is None:
            raise
        kind = found.group(1)
    readers = {"atf-result": Result.read, "atf-mlp": MLP.read}
    if kind not in readers:
        _fail(f"atf.load: {os.fsdecode(path)}: a file of format {kind!r}: atf.load reads "
              "atf-problem, atf-result and atf-mlp files")
    return readers[kind](path)
