"""Expensive results computed once, saved, and reused -- always labelled as such.

:func:`cached_history` runs a training function the first time a configuration is seen and saves
its :class:`~attn_core.training.History`. The key is a hash of

- the experiment's name and configuration (a JSON-able dict),
- the run mode (fast/full) and torch device type,
- the source code of the whole ``attn_core`` package (every ``.py`` file, subpackages
  included), so any change to the package recomputes, and
- for a config class defined outside the package (a reader's notebook subclass of a
  chapter's config), its module and qualified name and a digest of its code: every method
  and attribute it or its bases outside the package define, and the functions, classes and
  values those use (:func:`code_identity`). A variant that keeps its base's fields and
  changes ``model_fn`` is another result. Where that code cannot be read (typed at a
  prompt, ``python -c``), the result is not cached, and the first run says so in one line.

**One entry is one file**, ``<folder>/<name>-<key>.npz``: every array of the History plus a
0-d unicode array ``__meta__`` holding JSON metadata (execution, seconds, config, when it was
saved, the name, shape and dtype of every array, and ``digest``: the sha256 of the arrays'
names, dtypes, shapes and bytes). It is written to a temporary file in the same folder and
renamed over the entry (atomic on POSIX), so a reader sees either a whole old entry or a whole
new one, never a mix of two writers. Nothing is pickled: object arrays are
refused on save and files are read with ``allow_pickle=False``.

Every load checks the entry against its recorded schema, against the History schema
(shapes consistent with the seeds, ``config["steps"]`` and the evaluation schedule) and
against its digest (a file rewritten with other numbers, valid as a zip, is caught; so is an
entry with no digest, written before digests were: it is recomputed once). An entry that
fails is reported with a one-line warning, moved aside as ``<file>.corrupt-<time>`` and
recomputed. A result that was computed is always returned: if it cannot be saved, a warning
says so. The cache's own temporary files left by killed writers (``<entry>.npz.<token>.tmp``,
and a part's in a ``.parts`` folder) are removed once they are an hour old; it deletes
nothing else in the folder.

**Interrupted runs resume.** While a cached computation runs, the engine saves every group of
members (one member each when looped) the moment it finishes, in ``<name>-<key>.parts/`` next
to the entry (one atomic ``.npz`` per group: its arrays, its model's parameters and their
digest). If the run is interrupted -- a kernel interrupt, a crash, a Colab disconnect -- the
same call later loads the finished groups (and says so) and trains only the rest; the result
is bitwise the uninterrupted one (``tests/test_cache.py``). A part that is damaged, rewritten
(its digest) or does not record what its group must (arrays of its members, steps and
evaluations; the metrics and probes of the groups trained now), is warned about, removed and
trained again. The folder is removed once
the entry is saved. A group trains as one piece: on CUDA, where all members form one batched
group, an interrupted group starts over.

The folder is ``$ATTN_CACHE`` (default ``~/.cache/attn_core``; see
:func:`attn_core.config.env_cache`); ``ATTN_CACHE=off`` disables the cache. A loaded history has
``model=None`` (models are not cached) and ``cached=True``; :func:`cached_history` prints where
its result came from.
"""

from __future__ import annotations

import dataclasses
import dis
import enum
import functools
import hashlib
import inspect
import json
import math
import os
import re
import shutil
import stat
import sys
import tempfile
import time
import types
import warnings
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from .checks import check_bool
from .config import (env_cache, env_max_steps, env_smoke_batch, get_device, get_mode,
                     report_line, wrap_line)
from .training import GROUP_STORE, History, eval_schedule

__all__ = ["cache_dir", "cache_key", "check_cache_name", "code_identity", "save_history",
           "load_history", "read_entry", "cached_history"]

_PACKAGE = Path(__file__).resolve().parent
#: Bumped whenever the file layout changes; entries of another format are recomputed.
FORMAT = 2
META_KEY = "__meta__"
#: Temporary files older than this (seconds) were left by a killed writer and are removed.
STALE_TMP_SECONDS = 3600
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_KEY_CHARS = 20  # hex digits of a key in an entry's file name
# The only files the cache ever deletes by name: the temporaries its own writes leave when
# killed (atomic_write's ``<file>.<token>.tmp``, tempfile's 8-character token), of an entry
# (``<name>-<key>.npz``) in the cache folder and of a part (training's ``_job_key``) in an
# ``<name>-<key>.parts`` folder there. Anything else in the folder is never touched.
_ENTRY_STEM = r"[A-Za-z0-9][A-Za-z0-9._-]*-[0-9a-f]{%d}" % _KEY_CHARS
_TMP_TOKEN = r"\.[a-z0-9_]{8}\.tmp"
_ENTRY_TMP = re.compile(_ENTRY_STEM + r"\.npz" + _TMP_TOKEN)
_PARTS_DIR = re.compile(_ENTRY_STEM + r"\.parts")
_PART_TMP = re.compile(r"fit[0-9]+-group[0-9]+-[0-9a-f]{16}\.npz" + _TMP_TOKEN)
_NAME_MAX = 200  # the entry's file name adds ~40 characters; most filesystems allow 255
_NUMERIC = "biuf"  # numpy dtype kinds a History array may have (no objects, strings, ...)


def cache_dir() -> Path | None:
    """The cache folder, or None when ``ATTN_CACHE=off`` (see :func:`config.env_cache`)."""
    return env_cache()


def _source_digest() -> str:
    """Hash of every ``.py`` file of the package (relative path and bytes, sorted by path)."""
    h = hashlib.sha256()
    files = sorted((f.relative_to(_PACKAGE).as_posix(), f) for f in _PACKAGE.rglob("*.py")
                   if f.is_file())
    for rel, f in files:
        data = f.read_bytes()
        h.update(f"{rel}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def check_cache_name(name, label: str = "name") -> str:
    """``name`` if it can name a cache entry (a file inside the cache folder); the messages
    call it ``label``."""
    if not isinstance(name, str):
        raise TypeError(f"{label} must be a string; got {type(name).__name__} {name!r}")
    if not _NAME.fullmatch(name) or len(name) > _NAME_MAX:
        raise ValueError(f"{label} must be 1-{_NAME_MAX} characters from [A-Za-z0-9._-] starting "
                         f"with a letter or digit (it names a file inside the cache folder: no "
                         f"'/', no '..' path, not absolute); got {name!r}")
    return name


def cache_key(name: str, config: dict, code: dict | None = None) -> str:
    """A stable hash of the experiment name, its config, the mode, device type and package source.

    ``config`` must be plain JSON -- nested dicts (string keys), lists and tuples of str, int,
    finite float, bool and None -- so that it is hashed the same way in every run. ``code``
    (plain JSON too, or None) identifies code outside the package that the result depends on
    (:func:`code_identity`); None leaves the key what it was before ``code`` existed.
    """
    check_cache_name(name)
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict; got {type(config).__name__}")
    _check_plain_json("config", config)
    fields = {"name": name, "config": config, "mode": get_mode(),
              "device": get_device().type, "source": _source_digest()}
    if code is not None:
        if not isinstance(code, dict):
            raise TypeError(f"code must be a dict or None; got {type(code).__name__}")
        _check_plain_json("code", code)
        fields["code"] = code
    payload = json.dumps(fields, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:_KEY_CHARS]


# ----------------------------------------------------------- code outside the package
# A reader's variant of a chapter's config -- a notebook subclass that overrides ``model_fn``
# and keeps the fields -- computes other numbers than its base under the same name and
# fields: the key must tell them apart. The package's own code is in the key already (its
# source digest); what :func:`code_identity` adds is every class, function and value outside
# the package (and outside the standard library and installed packages) that the class's
# code is made of: the source and bytecode of each method it or its bases define, the values
# they capture or read as globals, followed to the functions and classes those name.


class _Unidentified(Exception):
    """The code (or a value it uses) cannot be identified; the message says which and why."""


_PKG = __name__.partition(".")[0]
#: Attributes of a class body that say nothing about what its code computes.
_CLASS_METADATA = frozenset({
    "__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__annotations__",
    "__dataclass_params__", "__dataclass_fields__", "__match_args__", "__firstlineno__",
    "__static_attributes__", "__orig_bases__", "__parameters__", "__type_params__",
    "__slots__", "__abstractmethods__", "_abc_impl", "__annotate__", "__annotate_func__",
    "__annotations_cache__", "__classdictcell__", "__classcell__"})
#: Methods @dataclass writes from the fields (its generated code has no source to read).
_DATACLASS_MADE = frozenset({
    "__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__lt__",
    "__le__", "__gt__", "__ge__", "__getstate__", "__setstate__", "__replace__"})
_GLOBAL_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "LOAD_FROM_DICT_OR_GLOBALS"})
#: The classes that were said to be not cached (one line per class and reason).
_NOTED: set[str] = set()


def _module_kind(module) -> str:
    """'package' (attn_core), 'library' (standard library, installed packages) or 'user'."""
    if not isinstance(module, str) or not module or module in ("__main__", "__mp_main__"):
        return "user"   # a notebook, a script, ``python -c`` (whatever launched them)
    top = module.partition(".")[0]
    if top == _PKG:
        return "package"
    if top in sys.stdlib_module_names or top in sys.builtin_module_names:
        return "library"
    file = getattr(sys.modules.get(top), "__file__", None)
    if isinstance(file, str) and {"site-packages", "dist-packages"} & set(Path(file).parts):
        return "library"
    return "user"


def _fail(path: tuple, own: str, used: str):
    """Raise _Unidentified for the thing at ``path`` (names, outermost first): ``<name><own>``
    for a member of the class, ``<user> uses <name>, <used>`` for what a member uses."""
    if len(path) > 1:
        raise _Unidentified(f"{' -> '.join(path[:-1])} uses {path[-1]}, {used}")
    raise _Unidentified(f"{path[-1] if path else 'the code'}{own}")


def _fail_value(path: tuple, what: str):
    _fail(path, f" is {what}, which the cache cannot identify",
          f"{what} the cache cannot identify")


def _const_token(value) -> str:
    """A constant of compiled code as text, the same in every run (sets sorted)."""
    if isinstance(value, (tuple, frozenset)):
        items = [_const_token(v) for v in value]
        if isinstance(value, frozenset):
            items.sort()
        return f"{type(value).__name__}({', '.join(items)})"
    return repr(value)


def _code_digest(code: types.CodeType) -> str:
    """sha256 of what a code object runs (bytecode, constants, names, nested code), not where
    it was typed (file name, line numbers): the same source gives the same digest."""
    h = hashlib.sha256()

    def walk(c):
        h.update(repr((c.co_name, c.co_argcount, c.co_posonlyargcount, c.co_kwonlyargcount,
                       c.co_flags, c.co_names, c.co_varnames, c.co_freevars,
                       c.co_cellvars)).encode())
        h.update(c.co_code)
        h.update(getattr(c, "co_exceptiontable", b""))
        for k in c.co_consts:
            if isinstance(k, types.CodeType):
                h.update(b"\0code\0")
                walk(k)
            else:
                h.update(b"\0" + _const_token(k).encode())
    walk(code)
    return h.hexdigest()


def _global_names(code: types.CodeType) -> set[str]:
    """The global names ``code`` (and code nested in it) loads."""
    names = {i.argval for i in dis.get_instructions(code) if i.opname in _GLOBAL_LOADS}
    for k in code.co_consts:
        if isinstance(k, types.CodeType):
            names |= _global_names(k)
    return names


def _readable(fn) -> bool:
    try:
        inspect.getsource(fn)
        return True
    except (OSError, TypeError):
        return False


def _array_identity(arr: np.ndarray, path: tuple) -> dict:
    if arr.dtype.hasobject:
        _fail_value(path, "an array of Python objects")
    return {"array": _content_digest({"": arr})}     # its dtype, shape and bytes


def _identify(value, path: tuple, seen: dict):
    """A JSON value that identifies ``value`` as far as a computation can depend on it: user
    functions and classes by their code, package and library ones by name, data by content.
    ``seen`` maps id -> name of the functions and classes met (cycles, repeats).
    _Unidentified where that is not possible."""
    if isinstance(value, enum.Enum):
        return {"enum": [_identify(type(value), path, seen), value.name]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, bytes):
        return {"bytes": hashlib.sha256(value).hexdigest()}
    kind = type(value)
    if kind in (tuple, list):
        return {kind.__name__: [_identify(v, path, seen) for v in value]}
    if kind in (set, frozenset):
        items = [_identify(v, path, seen) for v in value]
        return {"set": sorted(items, key=lambda v: json.dumps(v, sort_keys=True))}
    if kind is dict:
        items = [[_identify(k, path, seen), _identify(v, path, seen)] for k, v in value.items()]
        return {"dict": sorted(items, key=lambda kv: json.dumps(kv[0], sort_keys=True))}
    if isinstance(value, types.ModuleType):
        return _module_identity(value, path)
    if isinstance(value, type):
        return _class_identity(value, path, seen)
    if isinstance(value, types.FunctionType):
        return _function_identity(value, path, seen)
    if isinstance(value, (staticmethod, classmethod)):
        return {kind.__name__: _identify(value.__func__, path, seen)}
    if isinstance(value, property):
        return {"property": [_identify(f, path, seen)
                             for f in (value.fget, value.fset, value.fdel)]}
    if isinstance(value, functools.cached_property):
        return {"cached_property": _identify(value.func, path, seen)}
    if isinstance(value, functools.partial):
        return {"partial": [_identify(value.func, path, seen), _identify(value.args, path, seen),
                            _identify(value.keywords, path, seen)]}
    if isinstance(value, types.MethodType):
        return {"method": [_identify(value.__func__, path, seen),
                           _identify(value.__self__, path, seen)]}
    if isinstance(value, (types.BuiltinFunctionType, types.WrapperDescriptorType,
                          types.MethodDescriptorType, types.ClassMethodDescriptorType)):
        owner = getattr(value, "__self__", None)
        if owner is None or isinstance(owner, (types.ModuleType, type)):
            where = getattr(value, "__objclass__", owner)
            module = getattr(where, "__name__" if isinstance(where, types.ModuleType)
                             else "__module__", None) or getattr(value, "__module__", None)
            return {"builtin": f"{module}.{value.__qualname__}"}
    if isinstance(value, (types.MemberDescriptorType, types.GetSetDescriptorType)):
        return {"slot": value.__name__}
    if dataclasses.is_dataclass(value):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return {"instance": [_identify(kind, path, seen), _identify(fields, path, seen)]}
    if isinstance(value, np.ndarray):
        return _array_identity(value, path)
    if isinstance(value, np.generic):
        return _array_identity(np.asarray(value), path)
    if isinstance(value, torch.Tensor):
        try:
            arr = value.detach().cpu().numpy()
        except (RuntimeError, TypeError):
            _fail_value(path, f"a {value.dtype} tensor")
        return {"tensor": _array_identity(arr, path)}
    if isinstance(value, (torch.dtype, torch.device)):
        return {"torch": repr(value)}
    _fail_value(path, f"a {kind.__qualname__}")


def _module_identity(module: types.ModuleType, path: tuple) -> dict:
    """A package or library module by name; a user module also by its file's bytes."""
    name = module.__name__
    if _module_kind(name) != "user":
        return {"module": name}
    try:
        data = Path(module.__file__).read_bytes()
    except (AttributeError, TypeError, OSError):
        _fail(path, f" (module {name})'s source cannot be read",
              "a module whose source cannot be read")
    return {"module": name, "source": hashlib.sha256(data).hexdigest()}


def _function_identity(fn: types.FunctionType, path: tuple, seen: dict) -> dict:
    """A user function by its source, bytecode, defaults, captured values and the globals it
    reads; a package or library function by name (and what its closure captured)."""
    label = f"{fn.__module__}.{fn.__qualname__}"
    code = fn.__code__
    kind = _module_kind(fn.__module__)
    if id(fn) in seen:
        return {"ref": seen[id(fn)]}
    seen[id(fn)] = label
    if kind != "user" and hasattr(fn, "__wrapped__"):
        # a decorator's wrapper (functools.wraps): the function it wraps is what differs
        return {kind: label, "wrapped": _identify(fn.__wrapped__, path, seen)}
    closure = {}
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            content = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        closure[name] = _identify(content, path + (name,), seen)
    if kind != "user":   # its code is in the package's digest, or a library's version
        return {kind: label, **({"closure": closure} if closure else {})}
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        _fail(path, "'s source cannot be read", "whose source cannot be read")
    out = {"source": source, "code": _code_digest(code), "closure": closure,
           "defaults": _identify(fn.__defaults__, path, seen),
           "kwdefaults": _identify(fn.__kwdefaults__, path, seen)}
    glob = fn.__globals__
    out["globals"] = {name: _identify(glob[name], path + (name,), seen)
                      for name in sorted(_global_names(code)) if name in glob}
    return {"function": out}


def _class_identity(cls: type, path: tuple, seen: dict) -> dict:
    """A user class by its bases and every attribute its body defines; a package or library
    class by name."""
    label = f"{cls.__module__}.{cls.__qualname__}"
    kind = _module_kind(cls.__module__)
    if kind != "user":
        return {kind: label}
    if id(cls) in seen:
        return {"ref": seen[id(cls)]}
    seen[id(cls)] = label
    made = "__dataclass_fields__" in cls.__dict__
    members = {}
    for name in sorted(cls.__dict__):
        if name in _CLASS_METADATA:
            continue
        value = cls.__dict__[name]
        if made and name in _DATACLASS_MADE and callable(value) and not _readable(value):
            members[name] = "dataclass"   # written by @dataclass from the fields
            continue
        members[name] = _identify(value, path + (f"{cls.__qualname__}.{name}",), seen)
    bases = [_identify(b, path, seen) for b in cls.__bases__]
    return {"class": label, "bases": bases, "members": members}


def code_identity(cls) -> tuple[dict | None, str | None]:
    """What the cache key adds for results computed by ``cls`` (a config class):

    - ``(None, None)`` when ``cls`` and all its bases are the package's (or the standard
      library's, or an installed package's): the package's source is in every key already;
    - ``({"class": "<module>.<qualname>", "code": sha256}, None)`` when some of them are
      defined elsewhere (a notebook, a script), the digest covering their code as described
      above;
    - ``(None, reason)`` when some of that code cannot be identified -- its source cannot be
      read (a lambda typed at a prompt, a class defined in ``python -c``) or it uses a value
      the cache cannot identify: then the result must not be cached.
    """
    if not isinstance(cls, type):
        raise TypeError(f"cls must be a class; got {type(cls).__name__} {cls!r:.60}")
    if all(_module_kind(c.__module__) != "user" for c in cls.__mro__):
        return None, None
    try:
        identity = _identify(cls, (), {})
    except _Unidentified as e:
        return None, str(e)
    except RecursionError:
        return None, f"{cls.__qualname__}'s code is nested too deeply to be identified"
    except Exception as e:  # noqa: BLE001 -- unknown: never cache rather than guess
        return None, (f"{cls.__qualname__}'s code could not be identified "
                      f"({type(e).__name__}: {e})")
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()
    return {"class": f"{cls.__module__}.{cls.__qualname__}", "code": digest}, None


def _check_plain_json(path: str, value) -> None:
    """Raise TypeError naming ``path`` (e.g. ``config['copy']['seeds'][0]``) at the first value
    that is not plain JSON, and ValueError at a NaN or infinite float."""
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"{path} must have string keys; got {type(k).__name__} {k!r}")
            _check_plain_json(f"{path}[{k!r}]", v)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_plain_json(f"{path}[{i}]", v)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{path} must be a finite number; got {value}")
    elif not (value is None or isinstance(value, (str, int))):  # bool is an int
        raise TypeError(f"{path} must be plain JSON (a dict, list, tuple, str, int, float, bool "
                        f"or None) to be hashed the same in every run; got "
                        f"{type(value).__name__} {value!r:.60}")


def _entry_path(path: str | os.PathLike) -> Path:
    """``path`` itself if it ends in ``.npz``, else ``path`` + ``.npz`` (names may hold dots)."""
    path = Path(path)
    return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")


# ------------------------------------------------------------------------------ schema
def _history_arrays(history: History) -> dict[str, np.ndarray]:
    arrays = {"seeds": history.seeds, "data_seeds": history.data_seeds,
              "train_loss": history.train_loss, "eval_steps": history.eval_steps}
    for group in ("metrics", "probes"):
        table = getattr(history, group)
        if not isinstance(table, dict):
            raise TypeError(f"History.{group} must be a dict of arrays; got "
                            f"{type(table).__name__}")
        for k, v in table.items():
            if not isinstance(k, str) or not k:
                raise TypeError(f"History.{group} keys must be non-empty strings; got {k!r}")
            arrays[f"{group}/{k}"] = v
    for k, v in arrays.items():
        if not isinstance(v, np.ndarray):
            raise TypeError(f"History array {k!r} must be a numpy array; got {type(v).__name__}")
        if v.dtype.hasobject:
            raise TypeError(f"History array {k!r} has dtype object, which np.savez would pickle; "
                            f"the cache stores numeric arrays only")
        if v.dtype.kind not in _NUMERIC:
            raise TypeError(f"History array {k!r} must be numeric (bool, int or float); got "
                            f"dtype {v.dtype}")
    return arrays


def _check_history_schema(arrays: dict[str, np.ndarray], config) -> None:
    """Raise ValueError unless the arrays form a History of the schema in :mod:`training`."""
    def fail(msg):
        raise ValueError(msg)

    for k in ("seeds", "data_seeds", "train_loss", "eval_steps"):
        if k not in arrays:
            fail(f"array {k!r} is missing")
    if not isinstance(config, dict):
        fail(f"config must be a dict; got {type(config).__name__}")
    steps, every = config.get("steps"), config.get("eval_every")
    for k, v in (("steps", steps), ("eval_every", every)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            fail(f"config[{k!r}] must be an int >= 1; got {v!r}")
    seeds = arrays["seeds"]
    if seeds.ndim != 1 or seeds.shape[0] < 1 or seeds.dtype.kind not in "iu":
        fail(f"seeds must be a non-empty (S,) int array; got shape {seeds.shape} {seeds.dtype}")
    S = seeds.shape[0]
    schedule = np.asarray(eval_schedule(steps, every))
    E = len(schedule)
    ds = arrays["data_seeds"]
    if ds.shape != (S,) or ds.dtype.kind not in "iu":
        fail(f"data_seeds must be an ({S},) int array; got shape {ds.shape} {ds.dtype}")
    tl = arrays["train_loss"]
    if tl.shape != (S, steps) or tl.dtype.kind != "f":
        fail(f"train_loss must be an (S, steps) = ({S}, {steps}) float array; got shape "
             f"{tl.shape} {tl.dtype}")
    es = arrays["eval_steps"]
    if es.dtype.kind not in "iu" or es.shape != (E,) or not np.array_equal(es, schedule):
        fail(f"eval_steps must be the int schedule {schedule.tolist()} (steps={steps}, "
             f"eval_every={every}); got {es.tolist()} ({es.dtype})")
    for k, v in arrays.items():
        if k.startswith("metrics/") and v.shape != (S, E):
            fail(f"metric {k[8:]!r} must have shape (S, E) = ({S}, {E}); got {v.shape}")
        if k.startswith("probes/") and v.shape[:2] != (S, E):
            fail(f"probe {k[7:]!r} must have shape (S, E, ...) = ({S}, {E}, ...); got {v.shape}")


def _check_json(name: str, value) -> str:
    try:
        return json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name} must be JSON-able (str, finite numbers, lists, dicts) to be "
                        f"cached exactly; {e}") from e


def _content_digest(arrays: dict[str, np.ndarray]) -> str:
    """sha256 of the arrays' names, dtypes, shapes and bytes (C order), in name order: what
    an entry or a part records as ``digest`` and is checked against when it is loaded."""
    h = hashlib.sha256()
    for k in sorted(arrays):
        v = arrays[k]
        h.update(json.dumps([k, v.dtype.str, list(v.shape)]).encode() + b"\n")
        h.update(np.ascontiguousarray(v).tobytes())
    return h.hexdigest()


def _check_digest(info: dict, arrays: dict[str, np.ndarray], required: bool) -> None:
    """ValueError unless the arrays are what was saved: their digest is the recorded one
    (or, when not ``required``, none is recorded: a file written before digests were)."""
    recorded = info.get("digest")
    if recorded is None and not required:
        return
    if recorded is None:
        raise ValueError("it records no content digest (written by an older version or by "
                         "something else than this cache)")
    if recorded != _content_digest(arrays):
        raise ValueError("its arrays are not the ones saved (their sha256 is not the recorded "
                         "digest): the file was rewritten after it was saved")


# ------------------------------------------------------------------------- save / load
def save_history(history: History, path: str | os.PathLike, meta: dict | None = None) -> None:
    """Save a History as one ``.npz`` file (``path``, ``.npz`` appended if missing), atomically.

    The file holds every array and a ``__meta__`` JSON string (execution, seconds, config, the
    time of saving, each array's shape and dtype, the arrays' sha256 ``digest``, and ``meta``).
    Raises TypeError for arrays
    np.savez would pickle (object dtype) and ValueError for a History that breaks its schema.
    """
    if not isinstance(history, History):
        raise TypeError(f"history must be a History; got {type(history).__name__}")
    if meta is not None and not isinstance(meta, dict):
        raise TypeError(f"meta must be a dict or None; got {type(meta).__name__}")
    path = _entry_path(path)
    arrays = _history_arrays(history)
    _check_history_schema(arrays, history.config)
    if not isinstance(history.execution, str):
        raise TypeError(f"History.execution must be a string; got {history.execution!r}")
    seconds = float(history.seconds)
    _check_json("History.config", history.config)
    info = {"format": FORMAT, "execution": history.execution, "seconds": seconds,
            "config": history.config, "saved_at": time.strftime("%Y-%m-%d %H:%M:%S"),
            "arrays": {k: {"shape": list(v.shape), "dtype": v.dtype.str}
                       for k, v in arrays.items()},
            "digest": _content_digest(arrays),
            "meta": json.loads(json.dumps(meta or {}, default=str))}
    payload = {META_KEY: np.array(json.dumps(info, allow_nan=False)), **arrays}
    _write_atomic(path, payload)


def _write_atomic(path: Path, payload: dict) -> None:
    """``np.savez`` to a temporary file next to ``path``, then rename it over ``path``.
    TypeError for an object array, which np.savez would pickle."""
    obj = sorted(k for k, v in payload.items() if v.dtype.hasobject)
    if obj:
        raise TypeError(f"arrays {obj} hold Python objects, which would be pickled")
    atomic_write(path, lambda f: np.savez(f, **payload))


def atomic_write(path: Path, write: Callable, binary: bool = True) -> None:
    """``write(f)`` into a temporary file next to ``path`` (``<name>.<token>.tmp``), synced,
    then renamed over ``path``: a reader sees the old file or the new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb" if binary else "w") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _read_payload(f) -> tuple[dict, dict[str, np.ndarray]]:
    """The ``__meta__`` JSON and the other arrays of an open ``.npz`` file written by
    :func:`_write_atomic` (never unpickled); ValueError if it has no valid ``__meta__``."""
    with np.load(f, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    if META_KEY not in arrays:
        raise ValueError(f"no {META_KEY!r} entry (not a file of this cache format)")
    meta_arr = arrays.pop(META_KEY)
    if meta_arr.shape != () or meta_arr.dtype.kind != "U":
        raise ValueError(f"{META_KEY!r} must be a 0-d unicode array; got shape "
                         f"{meta_arr.shape} {meta_arr.dtype}")
    return json.loads(str(meta_arr)), arrays


def read_entry(path: Path, require_digest: bool = False) -> tuple[History, dict]:
    """Load and check one entry; ValueError naming ``path`` if it is not a valid entry.

    A recorded content digest must match the arrays; with ``require_digest`` one must be
    recorded (the cache's own entries; a file saved before digests were has none).
    OSErrors of opening the file (missing, unreadable) propagate unchanged.
    """
    with open(path, "rb") as f:
        try:
            info, arrays = _read_payload(f)
            _check_info(info)
            schema = info["arrays"]
            if set(schema) != set(arrays):
                missing = sorted(set(schema) - set(arrays))
                extra = sorted(set(arrays) - set(schema))
                raise ValueError(f"arrays do not match the recorded list: missing {missing}, "
                                 f"unexpected {extra}")
            for k, v in arrays.items():
                want = schema[k]
                if list(v.shape) != want.get("shape") or v.dtype.str != want.get("dtype"):
                    raise ValueError(f"array {k!r} has shape {list(v.shape)} dtype {v.dtype.str}; "
                                     f"recorded {want.get('shape')} {want.get('dtype')}")
                if v.dtype.hasobject or v.dtype.kind not in _NUMERIC:
                    raise ValueError(f"array {k!r} has non-numeric dtype {v.dtype}")
            _check_history_schema(arrays, info["config"])
            _check_digest(info, arrays, require_digest)
        except Exception as e:  # noqa: BLE001 -- anything unreadable is a broken entry
            raise ValueError(f"{path} is not a valid attn_core cache entry: "
                             f"{type(e).__name__}: {e}") from e
    h = History(
        seeds=arrays["seeds"], data_seeds=arrays["data_seeds"], train_loss=arrays["train_loss"],
        eval_steps=arrays["eval_steps"],
        metrics={k[8:]: v for k, v in arrays.items() if k.startswith("metrics/")},
        probes={k[7:]: v for k, v in arrays.items() if k.startswith("probes/")},
        model=None, execution=info["execution"], seconds=info["seconds"], config=info["config"])
    h.cached = True
    h.saved_at = info["saved_at"]
    return h, info


def _check_info(info) -> None:
    if not isinstance(info, dict):
        raise ValueError(f"metadata must be a JSON object; got {type(info).__name__}")
    if info.get("format") != FORMAT:
        raise ValueError(f"format {info.get('format')!r}; this version reads format {FORMAT}")
    kinds = {"execution": str, "seconds": (int, float), "config": dict, "saved_at": str,
             "arrays": dict, "meta": dict}
    for k, kind in kinds.items():
        if k not in info:
            raise ValueError(f"metadata has no {k!r}")
        if not isinstance(info[k], kind) or isinstance(info[k], bool):
            raise ValueError(f"metadata {k!r} has type {type(info[k]).__name__}")
    if not math.isfinite(info["seconds"]):
        raise ValueError(f"metadata 'seconds' is {info['seconds']}")
    for k, v in info["arrays"].items():
        if not (isinstance(v, dict) and isinstance(v.get("shape"), list)
                and isinstance(v.get("dtype"), str)):
            raise ValueError(f"metadata for array {k!r} must be {{'shape': [...], 'dtype': str}}")


def load_history(path: str | os.PathLike) -> History:
    """Load a History saved by :func:`save_history` (no pickle; ``model`` is None).

    Raises ValueError naming the file if it is truncated, not an entry of this cache, breaks
    its recorded schema or the History schema, or its arrays do not match its recorded content
    digest (a file saved before digests were recorded has none and is read all the same).
    """
    return read_entry(_entry_path(path))[0]


# ---------------------------------------------------------------------------- the cache
def _remove_stale_tmp(root: Path) -> None:
    """Delete the temporary files of the cache's own writes that are an hour old or older
    (left by killed writers): ``<name>-<key>.npz.<token>.tmp`` in ``root`` and
    ``<part>.npz.<token>.tmp`` in its ``<name>-<key>.parts`` folders. Nothing else, whatever
    its name, is deleted: the folder may be shared with the reader's own files."""
    cutoff = time.time() - STALE_TMP_SECONDS

    def remove_if_stale(f: Path) -> None:
        try:
            st = f.lstat()
            if stat.S_ISREG(st.st_mode) and st.st_mtime < cutoff:
                f.unlink()
        except OSError:
            pass

    for f in _listing(root):
        if _ENTRY_TMP.fullmatch(f.name):
            remove_if_stale(f)
        elif _PARTS_DIR.fullmatch(f.name) and f.is_dir() and not f.is_symlink():
            for g in _listing(f):
                if _PART_TMP.fullmatch(g.name):
                    remove_if_stale(g)


def _listing(folder: Path) -> list[Path]:
    """The entries of ``folder``; none when it cannot be listed."""
    try:
        return list(folder.iterdir())
    except OSError:
        return []


def _move_aside(path: Path, reason: str) -> None:
    """Rename a broken entry to ``<file>.corrupt-<time>`` (or delete it) and warn."""
    aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
    try:
        os.replace(path, aside)
        what = f"moved aside to {aside}"
    except OSError:
        try:
            path.unlink()
            what = "deleted (it could not be renamed)"
        except OSError as e:
            what = f"left in place (it could neither be renamed nor deleted: {e})"
    warnings.warn(f"[cache] {reason}; the entry was {what}; recomputing", RuntimeWarning,
                  stacklevel=3)


class _GroupStore:
    """The finished groups of one cached computation under way, one ``.npz`` each in
    ``<entry>.parts/`` (arrays, the model's parameters and a ``__meta__`` JSON; atomic, no
    pickle). :func:`cached_history` installs it as :data:`attn_core.training.GROUP_STORE`, so
    the engine saves every group the moment it finishes and, when the same computation runs
    again after an interruption, loads those instead of training them again. The folder is
    removed once the whole result is saved."""

    def __init__(self, folder: Path, name: str):
        self.folder, self.name = folder, name
        self.calls = 0
        self.loaded: set[str] = set()
        self._warned = False

    def begin(self) -> int:
        """The index of the next training call within this computation."""
        self.calls += 1
        return self.calls - 1

    def load(self, key: str, rebuild, shape: tuple[int, int, int]):
        """A saved group ``(model, train_loss, metrics, probes)``, or None. ``rebuild(state)``
        makes the group's model from its parameters. ``shape`` is the group's (members S,
        steps T, evaluations E): its train_loss must be (S, T), every metric (S, E) and every
        probe (S, E, ...). A damaged part, or one of other shapes, is warned about, removed,
        and its group trained again."""
        path = self.folder / f"{key}.npz"
        if not path.exists():
            return None
        try:
            with open(path, "rb") as f:
                info, arrays = _read_payload(f)
            if not isinstance(info, dict):
                raise ValueError(f"metadata must be a JSON object; got {type(info).__name__}")
            if info.get("format") != FORMAT or info.get("key") != key:
                raise ValueError(f"saved for {info.get('key')!r}, format {info.get('format')}")
            parts = {"metrics": {}, "probes": {}, "state": {}}
            for k, v in arrays.items():
                kind, _, sub = k.partition("/")
                if kind in parts and sub:
                    parts[kind][sub] = v
                elif k != "train_loss":
                    raise ValueError(f"unexpected array {k!r}")
            n, steps, evals = shape
            want = {"train_loss": (n, steps)}
            want.update({f"metrics/{k}": (n, evals) for k in parts["metrics"]})
            want.update({f"probes/{k}": (n, evals) + v.shape[2:]
                         for k, v in parts["probes"].items()})
            for k, w in want.items():
                if arrays[k].shape != w:
                    raise ValueError(f"{k} has shape {arrays[k].shape}, not {w} (this group: "
                                     f"{n} members, {steps} steps, {evals} evaluations)")
            _check_digest(info, arrays, required=True)
            model = rebuild({k: torch.from_numpy(v) for k, v in parts["state"].items()})
            result = (model.cpu(), arrays["train_loss"], parts["metrics"], parts["probes"])
        except Exception as e:  # noqa: BLE001 -- any damage: train the group again
            self.discard(key, f"{type(e).__name__}: {e}")
            return None
        self.loaded.add(key)
        return result

    def discard(self, key: str, reason: str) -> None:
        """Warn that the saved part ``key`` cannot be used (``reason``) and remove it; its group
        is trained again (and no longer counts as loaded)."""
        path = self.folder / f"{key}.npz"
        warnings.warn(f"[cache] {self.name}: the saved part {path} of an interrupted run "
                      f"cannot be used ({reason}); training that group again", RuntimeWarning,
                      stacklevel=3)
        try:
            path.unlink()
        except OSError:
            pass
        self.loaded.discard(key)

    def save(self, key: str, result) -> None:
        """Save one finished group; a failure to save is warned about once and never stops
        the run (its result is still returned)."""
        model, loss, metrics, probes = result
        payload = {"train_loss": np.asarray(loss)}
        payload.update({f"metrics/{k}": np.asarray(v) for k, v in metrics.items()})
        payload.update({f"probes/{k}": np.asarray(v) for k, v in probes.items()})
        payload.update({f"state/{k}": v.detach().cpu().numpy()
                        for k, v in model.state_dict().items()})
        info = {"format": FORMAT, "key": key, "digest": _content_digest(payload)}
        payload[META_KEY] = np.array(json.dumps(info))
        try:
            _write_atomic(self.folder / f"{key}.npz", payload)
        except (OSError, TypeError, ValueError) as e:
            if not self._warned:
                warnings.warn(f"[cache] {self.name}: could not keep finished groups in "
                              f"{self.folder} ({type(e).__name__}: {e}); an interrupted run "
                              f"will start over", RuntimeWarning, stacklevel=2)
                self._warned = True


def cached_history(name: str, config: dict, compute: Callable[[], History],
                   verbose: bool = True, label: str | None = None,
                   config_class: type | None = None) -> History:
    """Return ``compute()``'s History, computing it only if this config has no saved result.

    Prints whether the result was computed now or loaded (with the time it was computed). A
    broken entry is warned about, moved aside and recomputed; a result that cannot be saved
    is warned about and returned all the same. ``config_class``: the class of the config
    that ``compute`` runs; code of it defined outside the package is part of the key
    (:func:`code_identity`), and where that code cannot be identified the result is computed
    and not cached (said once per class).
    """
    check_bool("verbose", verbose)
    if label is not None and not isinstance(label, str):
        raise TypeError(f"label (the name printed) must be a str or None; got "
                        f"{type(label).__name__}")
    if config_class is not None and not isinstance(config_class, type):
        raise TypeError(f"config_class must be a class or None; got "
                        f"{type(config_class).__name__} {config_class!r:.60}")
    shown = name if label is None else label
    code, why = (None, None) if config_class is None else code_identity(config_class)
    key = cache_key(name, config, code)
    if not callable(compute):
        raise TypeError(f"compute must be callable: compute() -> History; got "
                        f"{type(compute).__name__}")
    cap = env_max_steps()
    # a smoke run (ATTN_MAX_STEPS) is never cached as, or loaded for, a real result
    root = cache_dir() if cap is None else None
    if root is not None and why is not None:
        # code that cannot be identified: never cached, so never given another's result
        noted = f"{config_class.__module__}.{config_class.__qualname__}\0{why}"
        if verbose and noted not in _NOTED:
            _NOTED.add(noted)
            report_line(f"[cache] {shown}: not cached -- {why}")
        root = None
    path = None if root is None else root / f"{name}-{key}.npz"
    if path is not None:
        _remove_stale_tmp(root)
        try:
            h, info = read_entry(path, require_digest=True)
            if info["meta"].get("key", key) != key or info["meta"].get("name", name) != name:
                raise ValueError(f"{path} was saved for name={info['meta'].get('name')!r} "
                                 f"key={info['meta'].get('key')!r}, not {name!r} {key!r}")
        except FileNotFoundError:
            pass
        except NotADirectoryError:
            pass  # ATTN_CACHE names a file; saving below warns about it
        except ValueError as e:
            _move_aside(path, str(e))
        except OSError as e:
            warnings.warn(f"[cache] could not read {path} ({e}); recomputing", RuntimeWarning,
                          stacklevel=2)
        else:
            if verbose:
                # One short line for the reader (the folder is the reader's own, named by
                # ATTN_CACHE; printing it would put a machine path into the book).
                report_line(f"[cache] {shown}: reused the result computed on "
                            f"{h.saved_at[:10]} ({h.seconds:.0f} s)")
            return h
    store = None if path is None else _GroupStore(path.with_suffix(".parts"), name)
    token = GROUP_STORE.set(store)
    try:
        h = compute()
    finally:
        GROUP_STORE.reset(token)
    if store is not None and store.loaded and verbose:
        report_line(f"[cache] {shown}: resumed an interrupted run ({len(store.loaded)} "
                    f"finished group(s) reused, the rest trained now)")
    if not isinstance(h, History):
        raise TypeError(f"compute() must return a History; got {type(h).__name__}")
    h.cached = False
    saved = False
    if path is not None:
        try:
            save_history(h, path, meta={"name": name, "key": key, "experiment_config": config,
                                        **({"code": code} if code is not None else {})})
            saved = True
            shutil.rmtree(store.folder, ignore_errors=True)
        except OSError as e:
            warnings.warn(f"[cache] {name}: could not save the result to the cache folder {root} "
                          f"({type(e).__name__}: {e}); the computed result is returned but not "
                          f"cached. Point ATTN_CACHE at a writable folder, or set ATTN_CACHE=off "
                          f"to disable the cache", RuntimeWarning, stacklevel=2)
        except (TypeError, ValueError) as e:
            warnings.warn(f"[cache] {name}: the result cannot be cached ({e}); it is returned "
                          f"but not saved to {root} (ATTN_CACHE=off disables the cache)",
                          RuntimeWarning, stacklevel=2)
    if verbose and cap is not None:
        batch = env_smoke_batch()
        per = "" if batch is None else f" and {batch} examples a batch"
        print(wrap_line(f"[smoke] {shown}: at most {cap} steps{per} (ATTN_MAX_STEPS), "
                        f"not cached"))
    elif verbose:
        report_line(f"[cache] {shown}: computed in {h.seconds:.0f} s"
                    + (" (saved)" if saved else ""))
    return h
