"""Python chunker objects as chunkbench strategies: what kind of object it is, how to call it
on a batch of texts, and its identity (the `kind: python` entry of the run's config).

Objects, in the order they are recognised:

- ``get_nodes_from_documents`` (a LlamaIndex node parser): the texts become
  ``llama_index.core.Document``s, each node's text with its ``start_char_idx``;
- ``split_text`` (a LangChain text splitter): the chunk texts;
- ``chunk`` (a chonkie chunker): each chunk's ``text`` with its ``start_index``;
- any other callable ``f(text)``: a list of strings, ``(text, start)`` pairs (a character
  start, checked), ``(start, end)`` character spans, ``chunkbench_harness.Span``s, or objects
  with ``text`` and ``start_index``.

LangChain's chunks are given the starts LangChain's own ``create_documents(add_start_index=
True)`` computes (searched from the previous start plus its length minus the overlap), so
overlapping chunks of repetitive text land where LangChain cut them.

Texts are located in their document by the extension module exactly as the command protocol's
output is: a reported character offset is used when the document's text there is the chunk's
text, otherwise the text's first occurrence after the previous chunk's start; a text that does
not occur is an error. Every passage is therefore a byte span of its document.

Identity (the entry's ``fingerprint``): sha256 over the adapter, the object's qualified name,
where its code comes from, the declared ``version=``, and what it is:

- code of an installed distribution or of the standard library by name and version (the
  version of langchain-text-splitters identifies its splitter's code);
- the user's own code (a script, a notebook, a local module) as compiled code: each function's
  and method's bytecode, constants and names, and the values of the module globals it names,
  recursively (so a redefined function, or a changed global it reads, is a new chunker);
- state, everywhere: the object's attributes, recursively (numbers, strings, containers,
  regular expressions, functions, objects by their attributes), a function's defaults and
  closure; caches that fill with use (LlamaIndex's callback trace, chonkie's character
  vocabulary, tiktoken's compiled encoder) are left out.

Where a part cannot be read (state held by a C object without attributes), a declared
``version=`` stands for it and the part is named by its type; without one, ``run`` raises and
asks for it, as for nesting deeper than 64 levels. Also read: functions behind
``functools.lru_cache``/``wraps`` (``__wrapped__``), and the attributes of the user's own
modules that the code names (``settings.SIZE``). A local module named like a standard one
(``chunk.py``) is the user's: origin is decided by where the file is. Not seen: code installed
in editable mode (its distribution's version does not change when you edit it), globals looked
up dynamically (``globals()["X"]``, ``getattr(module, name)``), and what the object reads from
outside itself at call time (files, environment variables): declare ``version=`` and change it
when those change.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import inspect
import json
import operator
import functools
import os
import platform
import re
import sys
import sysconfig
import types
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

Piece = Union[str, Tuple[str, int], Tuple[int, int]]

# Attributes that are caches filled by use, not settings: hashing them would give a used object
# another identity than a fresh one (a second run in one session would recompute its cells).
# By class: LlamaIndex's callback trace, chonkie's character and word tokenizers' vocabularies
# (grown as text is encoded; chunk sizes count characters or words, not ids).
_CACHES: Dict[str, frozenset] = {
    "llama_index.core.callbacks.base.CallbackManager": frozenset({"_trace_map"}),
    "chonkie.tokenizer.CharacterTokenizer": frozenset({"vocab", "token2id"}),
    "chonkie.tokenizer.WordTokenizer": frozenset({"vocab", "token2id"}),
}

# Objects identified by a name and their package's version rather than their attributes: a
# tiktoken encoding is its name (cl100k_base: a 100,000-entry vocabulary otherwise, and a
# cached property that fills on first use).
_NAMED: Dict[str, Callable[[Any], str]] = {
    "tiktoken.core.Encoding": lambda e: str(e.name),
}

# Nesting deeper than this (attributes, helper functions, globals) cannot be read: an error
# asking for `version=`, or, with one, named by type only. Cycles are cut by identity, not depth.
_MAX_DEPTH = 64


class PythonChunker:
    """A Python chunker with a declared ``version``: ``chunkers={"mine": PythonChunker(obj,
    version="2")}``. The version is part of the strategy's identity (its cell ids), beside the
    hash of the object's source and state; declare one for objects whose source cannot be read,
    and change it when the object's behaviour changes in ways its source and attributes do not
    show."""

    def __init__(self, obj: Any, version: Optional[str] = None) -> None:
        if isinstance(obj, PythonChunker):
            raise TypeError("PythonChunker(PythonChunker(...)): wrap the object once")
        self.obj = obj
        self.version = None if version is None else str(version)

    def __repr__(self) -> str:
        return f"PythonChunker({self.obj!r}, version={self.version!r})"


class Unreadable(Exception):
    """A part of the object's identity that cannot be read (its message names it)."""


def _qualname(x: Any) -> str:
    t = x if inspect.isclass(x) or inspect.isroutine(x) else type(x)
    module = getattr(t, "__module__", None) or getattr(
        getattr(t, "__objclass__", None), "__module__", "?"
    )
    return f"{module}.{getattr(t, '__qualname__', getattr(t, '__name__', '?'))}"


@functools.lru_cache(maxsize=None)
def _distributions() -> Dict[str, List[str]]:
    try:
        return dict(importlib.metadata.packages_distributions())
    except Exception:  # pragma: no cover - broken metadata
        return {}


@functools.lru_cache(maxsize=None)
def _stdlib_paths() -> Tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple(os.path.realpath(paths[k]) for k in ("stdlib", "platstdlib") if k in paths)


@functools.lru_cache(maxsize=None)
def _site_paths() -> Tuple[str, ...]:
    paths = sysconfig.get_paths()
    found = {os.path.realpath(paths[k]) for k in ("purelib", "platlib") if k in paths}
    found.update(os.path.realpath(p) for p in sys.path if p.endswith(("site-packages", "dist-packages")))
    return tuple(sorted(found))


def _under(f: str, roots: Tuple[str, ...]) -> bool:
    return any(f == r or f.startswith(r + os.sep) for r in roots)


@functools.lru_cache(maxsize=None)
def _module_origin(module: str) -> str:
    """What code of `module` is, by where its file is: ``"package NAME VERSION"`` (a file of an
    installed distribution, under site-packages: its version identifies its code),
    ``"python X.Y.Z"`` (the standard library or a built-in module), or ``""`` (the user's own
    code: a script, a notebook, a local module, even one named like a standard module; read
    as code)."""
    top = module.split(".")[0]
    if not top or top == "__main__":
        return ""
    python = f"python {platform.python_version()}"
    if module in sys.builtin_module_names or top in sys.builtin_module_names:
        return python
    m = sys.modules.get(module) or sys.modules.get(top)
    f = getattr(m, "__file__", None)
    if not f:
        # A namespace package or a module created at run time: the user's.
        return ""
    f = os.path.realpath(f)
    if _under(f, _site_paths()):
        for d in _distributions().get(top, []):
            try:
                return f"package {d} {importlib.metadata.version(d)}"
            except importlib.metadata.PackageNotFoundError:
                continue
        return ""
    if _under(f, _stdlib_paths()):
        return python
    return ""


# Py_TPFLAGS_HEAPTYPE: a class created at run time (a `class` statement), not a static C type.
_HEAPTYPE = 1 << 9


def _origin(x: Any) -> str:
    t = x if inspect.isclass(x) or inspect.isroutine(x) else type(x)
    module = getattr(t, "__module__", None) or getattr(
        getattr(t, "__objclass__", None), "__module__", ""
    )
    if module == "builtins" and inspect.isclass(t) and t.__flags__ & _HEAPTYPE:
        # A class statement run with globals that have no `__name__` (exec): user code.
        return ""
    return _module_origin(module or "")


class _Identity:
    """Collects the text the fingerprint hashes.

    Code of installed packages and of the standard library is named with its version; the
    user's own code (functions, classes, methods) is read as compiled code: bytecode,
    constants, names, and the values of the module globals it names, recursively. State
    (attributes) is read everywhere. A part that cannot be read raises :class:`Unreadable`, or,
    when a version was declared (``lenient``), is named by its type and noted."""

    def __init__(self, lenient: bool) -> None:
        self.lenient = lenient
        self.unreadable_parts: List[str] = []
        self.seen: set = set()

    def unreadable(self, what: str, name: str) -> str:
        """A part that cannot be read: :class:`Unreadable` naming `what`, or, when a version was
        declared, a placeholder naming `name` (the part is noted)."""
        if not self.lenient:
            raise Unreadable(what)
        self.unreadable_parts.append(what)
        return f"<unreadable {name}>"

    def enter(self, x: Any, depth: int) -> Optional[str]:
        """Marks `x` as being read; returns what stands for it instead when it was read already
        (a cycle, a shared object) or is nested too deep."""
        if id(x) in self.seen:
            return f"ref:{_qualname(x)}"
        if depth >= _MAX_DEPTH:
            return self.unreadable(f"a {_qualname(x)} nested more than {_MAX_DEPTH} levels deep", _qualname(x))
        self.seen.add(id(x))
        return None

    def state(self, x: Any, depth: int = 0) -> str:
        if x is None or isinstance(x, (bool, int, float, complex, str, bytes)):
            return f"{type(x).__name__}:{x!r}"
        if isinstance(x, (list, tuple)):
            inner = ",".join(self.state(i, depth + 1) for i in x)
            return f"{type(x).__name__}[{inner}]"
        if isinstance(x, (set, frozenset)):
            return "set[" + ",".join(sorted(self.state(i, depth + 1) for i in x)) + "]"
        if isinstance(x, dict):
            items = sorted((self.state(k, depth + 1), self.state(v, depth + 1)) for k, v in x.items())
            return "dict{" + ",".join(f"{k}:{v}" for k, v in items) + "}"
        if isinstance(x, re.Pattern):
            return f"re({x.pattern!r},{x.flags})"
        if isinstance(x, types.ModuleType):
            # By name: a module's attributes are the process's state (caches), not the chunker's.
            return f"module:{x.__name__}"
        if isinstance(x, types.CodeType):
            return self.code(x, {}, depth)
        named = _NAMED.get(_qualname(x)) if not inspect.isclass(x) else None
        if named is not None:
            return f"named:{_qualname(x)}:{named(x)}@{_origin(x)}"
        wrapped = getattr(x, "__wrapped__", None)
        if wrapped is not None and callable(x) and not inspect.isclass(x):
            # functools.lru_cache / cache / wraps: the function inside is what runs.
            return f"wrapped:{_qualname(x)}:" + self.state(wrapped, depth + 1)
        if isinstance(x, functools.partial):
            return (
                "partial:"
                + self.state(x.func, depth + 1)
                + self.state(list(x.args), depth + 1)
                + self.state(dict(x.keywords), depth + 1)
            )
        if isinstance(x, (staticmethod, classmethod)):
            return f"{type(x).__name__}:" + self.state(x.__func__, depth + 1)
        if isinstance(x, property):
            return "property:" + self.state([x.fget, x.fset, x.fdel], depth + 1)
        if inspect.ismethod(x):
            return "method:" + self.state(x.__func__, depth + 1) + "@" + self.state(x.__self__, depth + 1)
        if inspect.isclass(x):
            return self.cls(x, depth)
        if inspect.isfunction(x):
            return self.function(x, depth)
        if inspect.isroutine(x):
            # Built-in functions and methods (`len`, `str.split`): the interpreter's or a C
            # extension's, named with its version.
            return f"name:{_qualname(x)}@{_origin(x)}"
        stand_in = self.enter(x, depth)
        if stand_in is not None:
            return stand_in
        attrs = getattr(x, "__dict__", None)
        slots = [s for c in type(x).__mro__ for s in getattr(c, "__slots__", ()) if hasattr(x, s)]
        if attrs is None and not slots:
            return self.unreadable(f"the state of a {_qualname(x)} (no attributes to read)", _qualname(x))
        state = dict(attrs or {})
        state.update({s: getattr(x, s) for s in slots})
        for cache in _CACHES.get(_qualname(x), ()):
            state.pop(cache, None)
        return f"obj:{self.cls(type(x), depth + 1)}" + self.state(state, depth + 1)

    def cls(self, c: type, depth: int) -> str:
        """A class: by name and version when it is a package's or Python's, else its own
        attributes (methods as code) and its base classes."""
        origin = _origin(c)
        if origin or c is object:
            return f"class:{_qualname(c)}@{origin}"
        stand_in = self.enter(c, depth)
        if stand_in is not None:
            return stand_in
        own = {
            k: v
            for k, v in vars(c).items()
            if k not in ("__dict__", "__weakref__", "__module__", "__doc__", "__qualname__")
        }
        return (
            f"class:{_qualname(c)}"
            + self.state([b for b in c.__bases__], depth + 1)
            + self.state(own, depth + 1)
        )

    def function(self, f: Any, depth: int) -> str:
        origin = _origin(f)
        if origin:
            return f"fn:{_qualname(f)}@{origin}"
        stand_in = self.enter(f, depth)
        if stand_in is not None:
            return stand_in
        closure = [c.cell_contents for c in (f.__closure__ or ()) if _has_contents(c)]
        return (
            f"fn:{_qualname(f)}:"
            + self.code(f.__code__, f.__globals__, depth + 1)
            + self.state(list(f.__defaults__ or ()), depth + 1)
            + self.state(dict(f.__kwdefaults__ or {}), depth + 1)
            + self.state(closure, depth + 1)
        )

    def code(self, co: types.CodeType, globs: Dict[str, Any], depth: int) -> str:
        """Compiled code: bytecode, constants (nested code too), names, and the values of the
        module globals it names (a changed global is a changed chunker)."""
        consts = ",".join(
            self.code(c, globs, depth + 1) if isinstance(c, types.CodeType) else self.state(c, depth + 1)
            for c in co.co_consts
        )
        used = sorted(n for n in co.co_names if n in globs)
        values = ",".join(f"{n}={self.state(globs[n], depth + 1)}" for n in used)
        # `settings.SIZE` of the user's own module `settings`: the attributes the code names.
        for n in used:
            m = globs[n]
            if isinstance(m, types.ModuleType) and not _module_origin(m.__name__):
                attrs = sorted(a for a in co.co_names if a in vars(m))
                values += ",".join(
                    f"{n}.{a}={self.state(vars(m)[a], depth + 1)}" for a in attrs
                )
        return f"code[{co.co_code.hex()}|{consts}|{','.join(co.co_names)}|{values}]"


def _has_contents(cell: Any) -> bool:
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False


def _package_version(obj: Any) -> str:
    """``"name version"`` of the installed distribution the object's module comes from, or
    ``""`` (a script, a notebook, a local module)."""
    origin = _origin(obj)
    return origin[len("package ") :] if origin.startswith("package ") else ""


def _adapter(obj: Any) -> str:
    if hasattr(obj, "get_nodes_from_documents"):
        return "llamaindex"
    if hasattr(obj, "split_text"):
        return "langchain"
    if hasattr(obj, "chunk") and callable(obj.chunk):
        return "chonkie"
    if callable(obj):
        return "callable"
    raise TypeError(
        f"{_qualname(obj)} is not a chunker: give a callable from text to chunks, or an object "
        "with split_text (LangChain), chunk (chonkie) or get_nodes_from_documents (LlamaIndex)"
    )


def entry(name: str, chunker: Any) -> Tuple[dict, Callable[[Sequence[str]], List[List[Piece]]]]:
    """The ``kind: python`` entry of ``chunkers[name]`` and the function the extension module
    calls with each batch of document texts.

    Raises ``ValueError`` for a bad name, ``TypeError`` for an object that is not a chunker,
    and ``ValueError`` asking for ``version=`` when the object's source or state cannot be read
    and no version was declared."""
    if not isinstance(name, str) or not name or "." in name or name != name.strip():
        raise ValueError(
            f"chunkers: name {name!r}: give a non-empty name without dots or surrounding spaces "
            "(it is the strategy's name in the run, like a config's strategies.NAME)"
        )
    declared = None
    obj = chunker
    if isinstance(chunker, PythonChunker):
        obj, declared = chunker.obj, chunker.version
    adapter = _adapter(obj)
    ident = _Identity(lenient=declared is not None)
    parts = [f"adapter:{adapter}", f"object:{_qualname(obj)}", f"origin:{_origin(obj)}"]
    try:
        parts.append(ident.state(obj))
    except Unreadable as e:
        raise ValueError(
            f"chunkers[{name!r}]: {e} cannot be read, so chunkbench cannot tell this chunker "
            f"from a changed one; declare what it is: chunkers={{{name!r}: "
            "chunkbench_harness.PythonChunker(obj, version=\"1\")}, and change the version "
            "whenever its behaviour changes"
        ) from None
    package = _package_version(obj)
    version = declared if declared is not None else package
    parts.append(f"version:{declared}")
    fingerprint = hashlib.sha256("\n\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()
    e = {"kind": "python", "object": _qualname(obj), "version": version, "fingerprint": fingerprint}
    return e, _splitter(adapter, obj, name)


def _splitter(adapter: str, obj: Any, name: str) -> Callable[[Sequence[str]], List[List[Piece]]]:
    if adapter == "llamaindex":

        def split(texts: Sequence[str]) -> List[List[Piece]]:
            from llama_index.core import Document

            docs = [Document(text=t, id_=f"chunkbench-{i}") for i, t in enumerate(texts)]
            out: List[List[Piece]] = [[] for _ in texts]
            for node in obj.get_nodes_from_documents(docs):
                ref = node.ref_doc_id or ""
                if not ref.startswith("chunkbench-"):
                    raise ValueError(f"chunkers[{name!r}]: a node without its document ({ref!r})")
                out[int(ref.split("-", 1)[1])].append(_piece(node, name))
            return out

        return split
    if adapter == "langchain":
        call = lambda t: _langchain_starts(obj, t)  # noqa: E731
    else:
        call = obj.chunk if adapter == "chonkie" else obj

    def split(texts: Sequence[str]) -> List[List[Piece]]:
        return [[_piece(c, name) for c in _as_list(call(t), name)] for t in texts]

    return split


def _langchain_starts(splitter: Any, text: str) -> list:
    """A LangChain splitter's chunks with their character starts, found as LangChain's own
    `create_documents(add_start_index=True)` finds them: each searched from the previous
    chunk's start plus its length minus the splitter's overlap. With overlapping chunks of
    repetitive text, this is where LangChain cut them; the generic rule for located texts could
    place them earlier."""
    chunks = splitter.split_text(text)
    overlap = getattr(splitter, "_chunk_overlap", None)
    if not isinstance(overlap, int) or isinstance(overlap, bool):
        return chunks
    out: list = []
    index, previous = 0, 0
    for c in chunks:
        if not isinstance(c, str):
            out.append(c)
            continue
        index = text.find(c, max(0, index + previous - overlap))
        out.append((c, index) if index >= 0 else c)
        previous = len(c)
        index = max(index, 0)
    return out


def _as_list(result: Any, name: str) -> list:
    if isinstance(result, (str, bytes, dict, set, frozenset)) or not hasattr(result, "__iter__"):
        raise TypeError(
            f"chunkers[{name!r}] returned a {type(result).__name__}, not a list of chunks "
            "(strings, (start, end) character spans, or objects with text and start_index)"
        )
    return list(result)


def _index(v: Any) -> Optional[int]:
    """`v` as an int offset (Python and numpy integers), else None (bools are not offsets)."""
    if isinstance(v, bool):
        return None
    try:
        return operator.index(v)
    except TypeError:
        return None


def _text(t: str, name: str) -> str:
    try:
        t.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(
            f"chunkers[{name!r}] returned a chunk with a lone surrogate ({t[:40]!r}): it is not "
            "a slice of any document (documents are UTF-8 text)"
        ) from None
    return t


def _piece(c: Any, name: str) -> Piece:
    if isinstance(c, str):
        return _text(c, name)
    if isinstance(c, (tuple, list)) and len(c) == 2 and isinstance(c[0], str):
        # (text, character start): the start is checked against the document's text there.
        start = _index(c[1])
        text = _text(c[0], name)
        return (text, start) if start is not None and start >= 0 else text
    if isinstance(c, (tuple, list)) and len(c) == 2:
        s, e = _index(c[0]), _index(c[1])
        if s is not None and e is not None:
            if s < 0 or e < 0 or s > e:
                raise ValueError(
                    f"chunkers[{name!r}] returned the span {tuple(c)!r}: spans are (start, end) "
                    "character offsets with 0 <= start <= end"
                )
            return (s, e)
    char_start = getattr(c, "char_start", None)
    char_end = getattr(c, "char_end", None)
    if isinstance(char_start, int) and isinstance(char_end, int):  # a Span
        return (char_start, char_end)
    text = getattr(c, "text", None)
    if isinstance(text, str):
        start = getattr(c, "start_index", None)
        if start is None:
            start = getattr(c, "start_char_idx", None)
        start = _index(start)
        text = _text(text, name)
        return (text, start) if start is not None and start >= 0 else text
    raise TypeError(
        f"chunkers[{name!r}] returned a {type(c).__name__} as a chunk: give strings, (start, end) "
        "character spans, or objects with text (and start_index)"
    )


def dumps(e: dict) -> str:
    """The entry as JSON (a YAML flow mapping for ``--set strategies.NAME=...``)."""
    return json.dumps(e, ensure_ascii=True, sort_keys=False)
