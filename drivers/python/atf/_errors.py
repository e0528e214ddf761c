"""atf's errors as Python exceptions: every library failure (an atf_error other than ATF_OK)
raises a subclass of atf.Error carrying the library's one-line message."""
import warnings

from . import _lib

# atf_error (penalties/atf_error.h)
OK, E_USAGE, E_INPUT, E_NUMERICAL, E_NOMEM, E_IO = range(6)


class Error(Exception):
    """A failure reported by libatf: `.message` is the library's one-line message
    ("FILE: ITEM: reason"), `.code` the atf_error name ("bad input", "i/o error", ...)."""

    def __init__(self, message, code="error", result=None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.result = result


class InputError(Error, ValueError):
    """Bad input or a refused setting (ATF_E_INPUT, ATF_E_USAGE)."""


class NumericalError(Error, ArithmeticError):
    """A factorisation or iteration broke down (ATF_E_NUMERICAL, status numerical_error)."""


class FileError(Error, OSError):
    """A file could not be read or written (ATF_E_IO)."""


class Infeasible(Error):
    """The constraints have no solution (status infeasible); `.result` holds the
    least-squares point the solver returned."""


class IterationLimitWarning(RuntimeWarning):
    """A solve stopped at its iteration limit; the returned result is the last iterate."""


_CLASSES = {E_USAGE: InputError, E_INPUT: InputError, E_NUMERICAL: NumericalError,
            E_NOMEM: MemoryError, E_IO: FileError}


def fail(message):
    """Raise InputError for bad input found on the Python side (shapes, values, modules)."""
    raise InputError(message, "bad input")


def check(code, err):
    """Raise the exception of an atf_error code with the message in err (a string buffer)."""
    if code == OK:
        return
    message = _lib.text(err.value) or _lib.text(_lib.lib.atf_error_name(code))
    cls = _CLASSES.get(code, Error)
    if cls is MemoryError:
        raise MemoryError(message)
    raise cls(message, _lib.text(_lib.lib.atf_error_name(code)))


def _caller_level() -> int:
    """The stacklevel of the first frame outside the package: a warning names the user's line
    (atf.solve → _solve → here, or an estimator's fit → atf.solve → ...), not the package's."""
    import os
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == here:
        frame, level = frame.f_back, level + 1
    return level


def warn_iteration_limit(message):
    warnings.warn(message, IterationLimitWarning, stacklevel=_caller_level())
