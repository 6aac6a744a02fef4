"""Python chunker objects as chunkbench strategies: what kind of object it is, how to call it
on a batch of texts, and its identity (the `kind: python` entry of the run's config).

Objects, in the order they are recognised:

- ``get_nodes_from_documents`` (a LlamaIndex node parser): the texts become
  ``llama_index.core.Document``s, each node's text with its ``start_char_idx``;
- ``split_text`` (a LangChain text splitter): the chunk texts;
- ``chunk`` (a chonkie chunker): each chunk's ``text`` with its ``start_index``;
- any other callable ``f(text)``: a list of strings, ``(start, end)`` character spans,
  ``chunkbench_harness.Span``s, or objects with ``text`` and ``start_index``.

Texts are located in their document by the extension module exactly as the command protocol's
output is: a reported character offset is used when the document's text there is the chunk's
text, otherwise the text's first occurrence after the previous chunk's start; a text that does
not occur is an error. Every passage is therefore a byte span of its document.

Identity (the entry's ``fingerprint``): sha256 over the adapter, the object's qualified name,
the source of its class and base classes (or of the function), and its state: attributes,
recursively (numbers, strings, containers, regular expressions, functions by their source,
objects by their attributes), a function's defaults and closure. Where a part cannot be read
(source of a C extension or of code typed at a prompt; state held by a C object), a declared
``version=`` stands for it and the part is named by its type; without one, ``run`` raises and
asks for it. What the object calls but does not hold (a helper function in another module) is
not seen: change ``version=`` when it changes.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import inspect
import json
import functools
import re
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

# Attributes nested deeper than this are named by type only (a cycle, or a huge object graph).
_MAX_DEPTH = 8


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


def _source(x: Any) -> str:
    try:
        return inspect.getsource(x)
    except (OSError, TypeError) as e:
        raise Unreadable(f"the source of {_qualname(x)} ({e})") from None


class _Identity:
    """Collects the text the fingerprint hashes, noting unreadable parts instead of raising
    when a version was declared."""

    def __init__(self, lenient: bool) -> None:
        self.lenient = lenient
        self.unreadable: List[str] = []

    def part(self, read: Callable[[], str], name: str) -> str:
        try:
            return read()
        except Unreadable as e:
            if not self.lenient:
                raise
            self.unreadable.append(str(e))
            return f"<unreadable {name}>"

    def state(self, x: Any, depth: int = 0, seen: Optional[set] = None) -> str:
        seen = set() if seen is None else seen
        if x is None or isinstance(x, (bool, int, float, str, bytes)):
            return repr(x)
        if isinstance(x, (list, tuple)):
            inner = ",".join(self.state(i, depth + 1, seen) for i in x)
            return f"{type(x).__name__}[{inner}]"
        if isinstance(x, (set, frozenset)):
            return "set[" + ",".join(sorted(self.state(i, depth + 1, seen) for i in x)) + "]"
        if isinstance(x, dict):
            items = sorted(
                (self.state(k, depth + 1, seen), self.state(v, depth + 1, seen)) for k, v in x.items()
            )
            return "dict{" + ",".join(f"{k}:{v}" for k, v in items) + "}"
        if isinstance(x, re.Pattern):
            return f"re({x.pattern!r},{x.flags})"
        if isinstance(x, types.ModuleType):
            # By name: a module's attributes are the process's state (caches), not the chunker's.
            return f"module:{x.__name__}"
        if isinstance(x, functools.partial):
            return (
                "partial:"
                + self.state(x.func, depth + 1, seen)
                + self.state(list(x.args), depth + 1, seen)
                + self.state(dict(x.keywords), depth + 1, seen)
            )
        if inspect.isclass(x) or (
            inspect.isroutine(x) and not inspect.isfunction(x) and not inspect.ismethod(x)
        ):
            # Classes by name, and built-in functions and methods (`len`, `str.split`): their
            # behaviour is the interpreter's.
            return f"name:{_qualname(x)}"
        if inspect.ismethod(x):
            return "method:" + self.state(x.__func__, depth + 1, seen) + "@" + self.state(
                x.__self__, depth + 1, seen
            )
        if inspect.isfunction(x):
            return self.function(x, depth, seen)
        if id(x) in seen or depth >= _MAX_DEPTH:
            return f"ref:{_qualname(x)}"
        seen.add(id(x))
        attrs = getattr(x, "__dict__", None)
        slots = [s for c in type(x).__mro__ for s in getattr(c, "__slots__", ()) if hasattr(x, s)]
        if attrs is None and not slots:

            def unreadable() -> str:
                raise Unreadable(f"the state of a {_qualname(x)} (no attributes to read)")

            return self.part(unreadable, _qualname(x))
        state = dict(attrs or {})
        state.update({s: getattr(x, s) for s in slots})
        for cache in _CACHES.get(_qualname(x), ()):
            state.pop(cache, None)
        return f"obj:{_qualname(x)}" + self.state(state, depth + 1, seen)

    def function(self, f: Any, depth: int, seen: set) -> str:
        src = self.part(lambda: _source(f), _qualname(f))
        closure = [c.cell_contents for c in (f.__closure__ or ()) if _has_contents(c)]
        return (
            f"fn:{_qualname(f)}:{src}"
            + self.state(list(f.__defaults__ or ()), depth + 1, seen)
            + self.state(dict(f.__kwdefaults__ or {}), depth + 1, seen)
            + self.state(closure, depth + 1, seen)
        )


def _has_contents(cell: Any) -> bool:
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False


def _package_version(obj: Any) -> str:
    """``"name version"`` of the installed distribution the object's module comes from, or
    ``""`` (a script, a notebook, a local module)."""
    module = getattr(obj if inspect.isroutine(obj) else type(obj), "__module__", "") or ""
    top = module.split(".")[0]
    if not top or top == "__main__":
        return ""
    try:
        dists = importlib.metadata.packages_distributions().get(top, [])
    except Exception:  # pragma: no cover - broken metadata
        dists = []
    for d in dists:
        try:
            return f"{d} {importlib.metadata.version(d)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return ""


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
    parts = [f"adapter:{adapter}", f"object:{_qualname(obj)}"]
    try:
        if inspect.isroutine(obj) or inspect.isfunction(obj):
            parts.append(ident.state(obj))
        else:
            for cls in type(obj).__mro__:
                if cls is object or cls.__module__ == "builtins":
                    continue
                parts.append(ident.part(lambda c=cls: _source(c), _qualname(cls)))
            parts.append(ident.state(obj))
    except Unreadable as e:
        raise ValueError(
            f"chunkers[{name!r}]: {e} cannot be read, so chunkbench cannot tell this chunker "
            f"from a changed one; declare what it is: chunkers={{{name!r}: "
            "chunkbench_harness.PythonChunker(obj, version=\"1\")}, and change the version "
            "whenever its behaviour changes"
        ) from None
    version = declared if declared is not None else _package_version(obj)
    parts.append(f"version:{version}")
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
    call = {"langchain": lambda o: o.split_text, "chonkie": lambda o: o.chunk}.get(
        adapter, lambda o: o
    )(obj)

    def split(texts: Sequence[str]) -> List[List[Piece]]:
        return [[_piece(c, name) for c in _as_list(call(t), name)] for t in texts]

    return split


def _as_list(result: Any, name: str) -> list:
    if isinstance(result, (str, bytes)) or not hasattr(result, "__iter__"):
        raise TypeError(
            f"chunkers[{name!r}] returned a {type(result).__name__}, not a list of chunks "
            "(strings, (start, end) character spans, or objects with text and start_index)"
        )
    return list(result)


def _piece(c: Any, name: str) -> Piece:
    if isinstance(c, str):
        return c
    if (
        isinstance(c, (tuple, list))
        and len(c) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in c)
    ):
        return (int(c[0]), int(c[1]))
    char_start = getattr(c, "char_start", None)
    char_end = getattr(c, "char_end", None)
    if isinstance(char_start, int) and isinstance(char_end, int):  # a Span
        return (char_start, char_end)
    text = getattr(c, "text", None)
    if isinstance(text, str):
        start = getattr(c, "start_index", None)
        if start is None:
            start = getattr(c, "start_char_idx", None)
        return (text, int(start)) if isinstance(start, int) and start >= 0 else text
    raise TypeError(
        f"chunkers[{name!r}] returned a {type(c).__name__} as a chunk: give strings, (start, end) "
        "character spans, or objects with text (and start_index)"
    )


def dumps(e: dict) -> str:
    """The entry as JSON (a YAML flow mapping for ``--set strategies.NAME=...``)."""
    return json.dumps(e, ensure_ascii=True, sort_keys=False)
