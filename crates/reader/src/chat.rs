//! Chat templates: the Jinja template stored in a GGUF (`tokenizer.chat_template`), rendered
//! by a small interpreter for the subset chat templates use, plus built-in ChatML and plain
//! formats.
//!
//! Rendering follows Hugging Face `apply_chat_template` (transformers): variables `messages`
//! (a list of `{role, content}` maps), `add_generation_prompt`, `bos_token`, `eos_token`, the
//! function `raise_exception(msg)`, and the environment options `trim_blocks = true`,
//! `lstrip_blocks = true`.
//!
//! Supported Jinja subset: text; `{{ expr }}`; `{% if %}/{% elif %}/{% else %}/{% endif %}`;
//! `{% for x in expr %}...{% else %}...{% endfor %}` with `loop.index`, `loop.index0`,
//! `loop.first`, `loop.last`, `loop.length`, `loop.revindex`, `loop.revindex0`;
//! `{% set name = expr %}` (scoped to the enclosing `for`, as in Jinja);
//! `{% generation %}` blocks (rendered as their body); comments; whitespace control (`{%-`,
//! `-%}`, ...). Expressions: string/int/bool/none literals, lists, names, `.attr`, `[index]`,
//! `[a:b]` slices, `+ - * / // % ~`, comparisons, `in`, `not in`, `and`, `or`, `not`,
//! `x if c else y`, `is [not] defined/undefined/none/string/number/mapping/sequence/iterable/
//! true/false/boolean`, filters `trim length count lower upper capitalize string tojson default
//! first last join list`, methods `strip lstrip rstrip startswith endswith lower upper split`.
//!
//! Blocks are parsed up front but expressions only when evaluated, so a template whose
//! untaken branches use something unsupported (tool calls, `namespace`, macros) still renders
//! the plain system/user/assistant shape; reaching an unsupported construct is an error naming
//! it ([`crate::ReaderError::Template`]), and [`ChatTemplate::plain`] is the fallback.

use crate::ReaderError;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatMessage {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// Message text.
    pub content: String,
}

impl ChatMessage {
    /// A message with `role` and `content`.
    pub fn new(role: &str, content: impl Into<String>) -> Self {
        ChatMessage {
            role: role.to_string(),
            content: content.into(),
        }
    }
}

/// The ChatML template (`<|im_start|>role\ncontent<|im_end|>\n`), as used by SmolLM2 and
/// Qwen2 without their default system prompts.
pub const CHATML_TEMPLATE: &str = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/// A chat template.
#[derive(Debug, Clone)]
pub struct ChatTemplate {
    kind: Kind,
    source: String,
}

#[derive(Debug, Clone)]
enum Kind {
    Jinja(Vec<Node>),
    Plain,
}

impl ChatTemplate {
    /// Parses a Jinja chat template (block structure only; expressions are parsed when
    /// evaluated).
    ///
    /// # Errors
    /// [`ReaderError::Template`] for unbalanced blocks or unterminated tags.
    pub fn from_jinja(source: &str) -> Result<Self, ReaderError> {
        let pieces = lex(source)?;
        let mut pos = 0;
        let (nodes, end) = parse_nodes(&pieces, &mut pos, &[])?;
        if let Some(end) = end {
            return Err(terr(format!("unexpected `{{% {end} %}}`")));
        }
        Ok(ChatTemplate {
            kind: Kind::Jinja(nodes),
            source: source.to_string(),
        })
    }

    /// The built-in ChatML template ([`CHATML_TEMPLATE`]).
    pub fn chatml() -> Self {
        Self::from_jinja(CHATML_TEMPLATE).expect("built-in ChatML template parses")
    }

    /// A plain template without chat markup: each message's content followed by a blank line
    /// (`"{system}\n\n{user}\n"`; the assistant text follows directly). With
    /// [`crate::CuePlacement::Assistant`] this yields lm-evaluation-harness's plain MMLU shape,
    /// `"...\nD. text\nAnswer:"`.
    pub fn plain() -> Self {
        ChatTemplate {
            kind: Kind::Plain,
            source: "plain".into(),
        }
    }

    /// The template source (`"plain"` for [`ChatTemplate::plain`]).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Renders `messages` (with the generation prompt when `add_generation_prompt`).
    ///
    /// # Errors
    /// [`ReaderError::Template`] naming the unsupported construct or the failing expression,
    /// or the message of the template's `raise_exception`.
    pub fn render(
        &self,
        messages: &[ChatMessage],
        add_generation_prompt: bool,
        bos_token: &str,
        eos_token: &str,
    ) -> Result<String, ReaderError> {
        match &self.kind {
            Kind::Plain => {
                let mut out = String::new();
                for (i, m) in messages.iter().enumerate() {
                    out.push_str(&m.content);
                    out.push_str(if i + 1 < messages.len() { "\n\n" } else { "\n" });
                }
                Ok(out)
            }
            Kind::Jinja(nodes) => {
                let msgs = V::List(
                    messages
                        .iter()
                        .map(|m| {
                            let mut map = BTreeMap::new();
                            map.insert("role".to_string(), V::Str(m.role.clone()));
                            map.insert("content".to_string(), V::Str(m.content.clone()));
                            V::Map(map)
                        })
                        .collect(),
                );
                let mut globals = BTreeMap::new();
                globals.insert("messages".to_string(), msgs);
                globals.insert(
                    "add_generation_prompt".to_string(),
                    V::Bool(add_generation_prompt),
                );
                globals.insert("bos_token".to_string(), V::Str(bos_token.into()));
                globals.insert("eos_token".to_string(), V::Str(eos_token.into()));
                let mut env = Env {
                    scopes: vec![globals],
                };
                let mut out = String::new();
                exec(nodes, &mut env, &mut out)?;
                Ok(out)
            }
        }
    }
}

fn terr(msg: impl Into<String>) -> ReaderError {
    ReaderError::Template(msg.into())
}

// ---------------------------------------------------------------------------------------------
// Lexing into text / expression / statement pieces.

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    Expr(String),
    Stmt(String),
}

/// Finds the end of a tag body starting at `from`, skipping quoted strings; returns the index
/// of the closing delimiter.
fn find_close(src: &str, from: usize, close: &str) -> Option<usize> {
    let b = src.as_bytes();
    let mut i = from;
    let mut quote: Option<u8> = None;
    while i < b.len() {
        match quote {
            Some(q) => {
                if b[i] == b'\\' {
                    i += 2;
                    continue;
                }
                if b[i] == q {
                    quote = None;
                }
            }
            None => {
                if b[i] == b'\'' || b[i] == b'"' {
                    quote = Some(b[i]);
                } else if src[i..].starts_with(close) {
                    return Some(i);
                }
            }
        }
        i += 1;
    }
    None
}

fn lex(src: &str) -> Result<Vec<Piece>, ReaderError> {
    let mut pieces = Vec::new();
    let mut i = 0;
    let mut strip_next = false; // `-%}` etc.: strip leading whitespace of the next text
    let mut trim_nl_next = false; // trim_blocks: drop one newline after a block tag
    while i <= src.len() {
        let next = ["{{", "{%", "{#"]
            .iter()
            .filter_map(|t| src[i..].find(t).map(|p| (i + p, *t)))
            .min_by_key(|x| x.0);
        let (text_end, open) = match next {
            Some((p, t)) => (p, Some(t)),
            None => (src.len(), None),
        };
        let mut text = src[i..text_end].to_string();
        if strip_next {
            text = text.trim_start().to_string();
        } else if trim_nl_next {
            if let Some(t) = text
                .strip_prefix("\r\n")
                .or_else(|| text.strip_prefix('\n'))
            {
                text = t.to_string();
            }
        }
        strip_next = false;
        trim_nl_next = false;
        let Some(open) = open else {
            if !text.is_empty() {
                pieces.push(Piece::Text(text));
            }
            break;
        };
        let body_start = text_end + 2;
        let minus_open = src[body_start..].starts_with('-');
        let plus_open = src[body_start..].starts_with('+');
        if minus_open {
            text = text.trim_end().to_string();
        } else if open != "{{" && !plus_open {
            // lstrip_blocks: spaces/tabs between the source line's start and a block tag.
            let line_start = src[..text_end].rfind('\n').map_or(0, |p| p + 1);
            let run = &src[line_start..text_end];
            if run.chars().all(|c| c == ' ' || c == '\t') && run.len() <= text.len() {
                text.truncate(text.len() - run.len());
            }
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        let close = match open {
            "{{" => "}}",
            "{%" => "%}",
            _ => "#}",
        };
        let inner_start = body_start + usize::from(minus_open || plus_open);
        let end = if open == "{#" {
            src[inner_start..].find(close).map(|p| inner_start + p)
        } else {
            find_close(src, inner_start, close)
        }
        .ok_or_else(|| terr(format!("unterminated `{open}` tag at byte {text_end}")))?;
        let mut inner = &src[inner_start..end];
        if let Some(s) = inner.strip_suffix('-') {
            inner = s;
            strip_next = true;
        } else if let Some(s) = inner.strip_suffix('+') {
            inner = s;
        } else if open != "{{" {
            trim_nl_next = true;
        }
        match open {
            "{{" => pieces.push(Piece::Expr(inner.trim().to_string())),
            "{%" => pieces.push(Piece::Stmt(inner.trim().to_string())),
            _ => {}
        }
        i = end + 2;
    }
    Ok(pieces)
}

// ---------------------------------------------------------------------------------------------
// Block structure.

#[derive(Debug, Clone)]
enum Node {
    Text(String),
    Out(String),
    If(Vec<(String, Vec<Node>)>, Option<Vec<Node>>),
    For {
        target: String,
        iter: String,
        body: Vec<Node>,
        else_body: Option<Vec<Node>>,
    },
    Set(String, String),
    Pass(Vec<Node>),
    Unsupported(String),
}

fn keyword(stmt: &str) -> &str {
    stmt.split(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or("")
}

/// Parses nodes until one of `ends` (returned) or the end of input (`None`).
fn parse_nodes(
    pieces: &[Piece],
    pos: &mut usize,
    ends: &[&str],
) -> Result<(Vec<Node>, Option<String>), ReaderError> {
    let mut nodes = Vec::new();
    while *pos < pieces.len() {
        let p = &pieces[*pos];
        *pos += 1;
        match p {
            Piece::Text(t) => nodes.push(Node::Text(t.clone())),
            Piece::Expr(e) => nodes.push(Node::Out(e.clone())),
            Piece::Stmt(s) => {
                let kw = keyword(s);
                if ends.contains(&kw) {
                    return Ok((nodes, Some(s.clone())));
                }
                if kw == "elif" || kw == "else" || kw.starts_with("end") {
                    return Err(terr(format!("unexpected `{{% {s} %}}`")));
                }
                match kw {
                    "if" => {
                        let mut branches = Vec::new();
                        let mut cond = s[2..].trim().to_string();
                        let mut else_body = None;
                        loop {
                            let (body, end) = parse_nodes(pieces, pos, &["elif", "else", "endif"])?;
                            let end = end.ok_or_else(|| terr("`if` without `endif`"))?;
                            branches.push((cond.clone(), body));
                            match keyword(&end) {
                                "elif" => cond = end[4..].trim().to_string(),
                                "else" => {
                                    let (body, end) = parse_nodes(pieces, pos, &["endif"])?;
                                    end.ok_or_else(|| terr("`if` without `endif`"))?;
                                    else_body = Some(body);
                                    break;
                                }
                                _ => break,
                            }
                        }
                        nodes.push(Node::If(branches, else_body));
                    }
                    "for" => {
                        let rest = s[3..].trim();
                        let (target, iter) = rest
                            .split_once(" in ")
                            .ok_or_else(|| terr(format!("cannot parse `{{% {s} %}}`")))?;
                        let (body, end) = parse_nodes(pieces, pos, &["else", "endfor"])?;
                        let end = end.ok_or_else(|| terr("`for` without `endfor`"))?;
                        let else_body = if keyword(&end) == "else" {
                            let (b, e) = parse_nodes(pieces, pos, &["endfor"])?;
                            e.ok_or_else(|| terr("`for` without `endfor`"))?;
                            Some(b)
                        } else {
                            None
                        };
                        nodes.push(Node::For {
                            target: target.trim().to_string(),
                            iter: iter.trim().to_string(),
                            body,
                            else_body,
                        });
                    }
                    "set" => {
                        let rest = s[3..].trim();
                        match rest.split_once('=') {
                            Some((name, expr))
                                if !name.trim().is_empty()
                                    && name
                                        .trim()
                                        .chars()
                                        .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
                                    && !expr.starts_with('=') =>
                            {
                                nodes.push(Node::Set(
                                    name.trim().to_string(),
                                    expr.trim().to_string(),
                                ))
                            }
                            _ => {
                                // Block set: `{% set x %}...{% endset %}`.
                                let (_, end) = parse_nodes(pieces, pos, &["endset"])?;
                                end.ok_or_else(|| terr("`set` block without `endset`"))?;
                                nodes.push(Node::Unsupported(format!("{{% {s} %}}")));
                            }
                        }
                    }
                    "generation" => {
                        let (body, end) = parse_nodes(pieces, pos, &["endgeneration"])?;
                        end.ok_or_else(|| terr("`generation` without `endgeneration`"))?;
                        nodes.push(Node::Pass(body));
                    }
                    "macro" | "call" | "filter" | "block" | "with" | "raw" => {
                        let end_kw = format!("end{kw}");
                        let (_, end) = parse_nodes(pieces, pos, &[end_kw.as_str()])?;
                        end.ok_or_else(|| terr(format!("`{kw}` without `{end_kw}`")))?;
                        nodes.push(Node::Unsupported(format!("{{% {kw} %}} block")));
                    }
                    _ => nodes.push(Node::Unsupported(format!("{{% {s} %}}"))),
                }
            }
        }
    }
    Ok((nodes, None))
}

// ---------------------------------------------------------------------------------------------
// Values and evaluation.

#[derive(Debug, Clone, PartialEq)]
enum V {
    Undef,
    None,
    Bool(bool),
    Int(i64),
    Str(String),
    List(Vec<V>),
    Map(BTreeMap<String, V>),
}

impl V {
    fn truthy(&self) -> bool {
        match self {
            V::Undef | V::None => false,
            V::Bool(b) => *b,
            V::Int(i) => *i != 0,
            V::Str(s) => !s.is_empty(),
            V::List(l) => !l.is_empty(),
            V::Map(m) => !m.is_empty(),
        }
    }

    fn render(&self, out: &mut String) {
        match self {
            V::Undef => {}
            V::None => out.push_str("None"),
            V::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
            V::Int(i) => {
                let _ = write!(out, "{i}");
            }
            V::Str(s) => out.push_str(s),
            V::List(l) => {
                out.push('[');
                for (i, v) in l.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    v.repr(out);
                }
                out.push(']');
            }
            V::Map(m) => {
                out.push('{');
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    let _ = write!(out, "'{k}': ");
                    v.repr(out);
                }
                out.push('}');
            }
        }
    }

    fn repr(&self, out: &mut String) {
        match self {
            V::Str(s) => {
                let _ = write!(out, "'{s}'");
            }
            v => v.render(out),
        }
    }

    fn to_json(&self) -> serde_json::Value {
        match self {
            V::Undef | V::None => serde_json::Value::Null,
            V::Bool(b) => (*b).into(),
            V::Int(i) => (*i).into(),
            V::Str(s) => s.clone().into(),
            V::List(l) => l.iter().map(V::to_json).collect(),
            V::Map(m) => m.iter().map(|(k, v)| (k.clone(), v.to_json())).collect(),
        }
    }

    fn type_name(&self) -> &'static str {
        match self {
            V::Undef => "undefined",
            V::None => "none",
            V::Bool(_) => "bool",
            V::Int(_) => "int",
            V::Str(_) => "string",
            V::List(_) => "list",
            V::Map(_) => "mapping",
        }
    }
}

struct Env {
    scopes: Vec<BTreeMap<String, V>>,
}

impl Env {
    fn get(&self, name: &str) -> V {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.get(name).cloned())
            .unwrap_or(V::Undef)
    }
    fn set(&mut self, name: &str, v: V) {
        if let Some(s) = self.scopes.last_mut() {
            s.insert(name.to_string(), v);
        }
    }
}

fn exec(nodes: &[Node], env: &mut Env, out: &mut String) -> Result<(), ReaderError> {
    for n in nodes {
        match n {
            Node::Text(t) => out.push_str(t),
            Node::Out(e) => eval_str(e, env)?.render(out),
            Node::If(branches, else_body) => {
                let mut taken = false;
                for (cond, body) in branches {
                    if eval_str(cond, env)?.truthy() {
                        exec(body, env, out)?;
                        taken = true;
                        break;
                    }
                }
                if !taken {
                    if let Some(b) = else_body {
                        exec(b, env, out)?;
                    }
                }
            }
            Node::For {
                target,
                iter,
                body,
                else_body,
            } => {
                if !target.chars().all(|c| c.is_alphanumeric() || c == '_') {
                    return Err(terr(format!(
                        "unsupported loop target `{target}` (one name only)"
                    )));
                }
                let items = match eval_str(iter, env)? {
                    V::List(l) => l,
                    V::Undef | V::None => Vec::new(),
                    V::Map(m) => m.keys().map(|k| V::Str(k.clone())).collect(),
                    V::Str(s) => s.chars().map(|c| V::Str(c.to_string())).collect(),
                    v => return Err(terr(format!("cannot iterate over {}", v.type_name()))),
                };
                if items.is_empty() {
                    if let Some(b) = else_body {
                        exec(b, env, out)?;
                    }
                    continue;
                }
                let len = items.len();
                for (i, item) in items.into_iter().enumerate() {
                    let mut scope = BTreeMap::new();
                    let mut lp = BTreeMap::new();
                    lp.insert("index".into(), V::Int(i as i64 + 1));
                    lp.insert("index0".into(), V::Int(i as i64));
                    lp.insert("revindex".into(), V::Int((len - i) as i64));
                    lp.insert("revindex0".into(), V::Int((len - i - 1) as i64));
                    lp.insert("first".into(), V::Bool(i == 0));
                    lp.insert("last".into(), V::Bool(i + 1 == len));
                    lp.insert("length".into(), V::Int(len as i64));
                    scope.insert("loop".into(), V::Map(lp));
                    scope.insert(target.clone(), item);
                    env.scopes.push(scope);
                    let r = exec(body, env, out);
                    env.scopes.pop();
                    r?;
                }
            }
            Node::Set(name, expr) => {
                if name.contains('.') {
                    return Err(terr(format!(
                        "unsupported attribute assignment `{{% set {name} = ... %}}`"
                    )));
                }
                let v = eval_str(expr, env)?;
                env.set(name, v);
            }
            Node::Pass(body) => exec(body, env, out)?,
            Node::Unsupported(what) => {
                return Err(terr(format!(
                    "unsupported template construct {what}; use the plain or ChatML format"
                )))
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Expressions.

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Str(String),
    Int(i64),
    Name(String),
    Op(&'static str),
}

const OPS: [&str; 25] = [
    "==", "!=", "<=", ">=", "//", "<", ">", "+", "-", "*", "/", "%", "~", "|", ".", "[", "]", "(",
    ")", ",", ":", "{", "}", "=", "!",
];

fn tokenize(src: &str) -> Result<Vec<Tok>, ReaderError> {
    let mut toks = Vec::new();
    let chars: Vec<char> = src.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '\'' || c == '"' {
            let mut s = String::new();
            i += 1;
            loop {
                let Some(&d) = chars.get(i) else {
                    return Err(terr(format!("unterminated string in `{src}`")));
                };
                i += 1;
                if d == c {
                    break;
                }
                if d == '\\' {
                    let e = chars.get(i).copied().unwrap_or('\\');
                    i += 1;
                    s.push(match e {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        other => other,
                    });
                } else {
                    s.push(d);
                }
            }
            toks.push(Tok::Str(s));
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            let s: String = chars[start..i].iter().collect();
            if chars.get(i) == Some(&'.') && chars.get(i + 1).is_some_and(|c| c.is_ascii_digit()) {
                return Err(terr(format!("float literals are unsupported in `{src}`")));
            }
            toks.push(Tok::Int(
                s.parse()
                    .map_err(|_| terr(format!("bad number in `{src}`")))?,
            ));
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            toks.push(Tok::Name(chars[start..i].iter().collect()));
        } else {
            let rest: String = chars[i..chars.len().min(i + 2)].iter().collect();
            let op = OPS
                .iter()
                .find(|o| rest.starts_with(**o))
                .ok_or_else(|| terr(format!("unexpected `{c}` in `{src}`")))?;
            toks.push(Tok::Op(op));
            i += op.chars().count();
        }
    }
    Ok(toks)
}

#[derive(Debug, Clone)]
enum Ex {
    Lit(V),
    Name(String),
    List(Vec<Ex>),
    Dict(Vec<(Ex, Ex)>),
    Attr(Box<Ex>, String),
    Index(Box<Ex>, Box<Ex>),
    Slice(Box<Ex>, Option<Box<Ex>>, Option<Box<Ex>>),
    Call(Box<Ex>, Vec<Ex>),
    Filter(Box<Ex>, String, Vec<Ex>),
    Test(Box<Ex>, String, bool),
    Not(Box<Ex>),
    Neg(Box<Ex>),
    Bin(&'static str, Box<Ex>, Box<Ex>),
    And(Box<Ex>, Box<Ex>),
    Or(Box<Ex>, Box<Ex>),
    Cond(Box<Ex>, Box<Ex>, Box<Ex>),
}

struct P<'a> {
    toks: Vec<Tok>,
    i: usize,
    src: &'a str,
}

impl P<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i)
    }
    fn is_op(&self, op: &str) -> bool {
        matches!(self.peek(), Some(Tok::Op(o)) if *o == op)
    }
    fn is_name(&self, n: &str) -> bool {
        matches!(self.peek(), Some(Tok::Name(x)) if x == n)
    }
    fn err(&self, what: &str) -> ReaderError {
        terr(format!("{what} in `{}`", self.src))
    }
    fn expect_op(&mut self, op: &str) -> Result<(), ReaderError> {
        if self.is_op(op) {
            self.i += 1;
            Ok(())
        } else {
            Err(self.err(&format!("expected `{op}`")))
        }
    }

    fn expr(&mut self) -> Result<Ex, ReaderError> {
        let e = self.or()?;
        if self.is_name("if") {
            self.i += 1;
            let c = self.or()?;
            let other = if self.is_name("else") {
                self.i += 1;
                self.expr()?
            } else {
                Ex::Lit(V::Undef)
            };
            return Ok(Ex::Cond(Box::new(c), Box::new(e), Box::new(other)));
        }
        Ok(e)
    }
    fn or(&mut self) -> Result<Ex, ReaderError> {
        let mut e = self.and()?;
        while self.is_name("or") {
            self.i += 1;
            e = Ex::Or(Box::new(e), Box::new(self.and()?));
        }
        Ok(e)
    }
    fn and(&mut self) -> Result<Ex, ReaderError> {
        let mut e = self.not()?;
        while self.is_name("and") {
            self.i += 1;
            e = Ex::And(Box::new(e), Box::new(self.not()?));
        }
        Ok(e)
    }
    fn not(&mut self) -> Result<Ex, ReaderError> {
        if self.is_name("not") {
            self.i += 1;
            return Ok(Ex::Not(Box::new(self.not()?)));
        }
        self.cmp()
    }
    fn cmp(&mut self) -> Result<Ex, ReaderError> {
        let mut e = self.concat()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Op(o)) if matches!(*o, "==" | "!=" | "<" | ">" | "<=" | ">=") => *o,
                Some(Tok::Name(n)) if n == "in" => "in",
                Some(Tok::Name(n))
                    if n == "not"
                        && matches!(self.toks.get(self.i + 1), Some(Tok::Name(x)) if x == "in") =>
                {
                    self.i += 1;
                    "not in"
                }
                Some(Tok::Name(n)) if n == "is" => {
                    self.i += 1;
                    let neg = self.is_name("not");
                    if neg {
                        self.i += 1;
                    }
                    let Some(Tok::Name(test)) = self.peek().cloned() else {
                        return Err(self.err("expected a test name after `is`"));
                    };
                    self.i += 1;
                    e = Ex::Test(Box::new(e), test, neg);
                    continue;
                }
                _ => break,
            };
            self.i += 1;
            let r = self.concat()?;
            e = Ex::Bin(op, Box::new(e), Box::new(r));
        }
        Ok(e)
    }
    fn concat(&mut self) -> Result<Ex, ReaderError> {
        let mut e = self.add()?;
        while self.is_op("~") {
            self.i += 1;
            e = Ex::Bin("~", Box::new(e), Box::new(self.add()?));
        }
        Ok(e)
    }
    fn add(&mut self) -> Result<Ex, ReaderError> {
        let mut e = self.mul()?;
        while self.is_op("+") || self.is_op("-") {
            let op = if self.is_op("+") { "+" } else { "-" };
            self.i += 1;
            e = Ex::Bin(op, Box::new(e), Box::new(self.mul()?));
        }
        Ok(e)
    }
    fn mul(&mut self) -> Result<Ex, ReaderError> {
        let mut e = self.unary()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Op(o)) if matches!(*o, "*" | "/" | "//" | "%") => *o,
                _ => break,
            };
            self.i += 1;
            e = Ex::Bin(op, Box::new(e), Box::new(self.unary()?));
        }
        Ok(e)
    }
    fn unary(&mut self) -> Result<Ex, ReaderError> {
        if self.is_op("-") {
            self.i += 1;
            return Ok(Ex::Neg(Box::new(self.unary()?)));
        }
        let mut e = self.postfix()?;
        while self.is_op("|") {
            self.i += 1;
            let Some(Tok::Name(f)) = self.peek().cloned() else {
                return Err(self.err("expected a filter name after `|`"));
            };
            self.i += 1;
            let args = if self.is_op("(") {
                self.i += 1;
                self.args(")")?
            } else {
                Vec::new()
            };
            e = Ex::Filter(Box::new(e), f, args);
        }
        Ok(e)
    }
    fn args(&mut self, close: &str) -> Result<Vec<Ex>, ReaderError> {
        let mut args = Vec::new();
        while !self.is_op(close) {
            // Keyword arguments are not supported; `name=value` is an error.
            args.push(self.expr()?);
            if self.is_op("=") {
                return Err(self.err("keyword arguments are unsupported"));
            }
            if !self.is_op(close) {
                self.expect_op(",")?;
            }
        }
        self.i += 1;
        Ok(args)
    }
    fn postfix(&mut self) -> Result<Ex, ReaderError> {
        let mut e = self.primary()?;
        loop {
            if self.is_op(".") {
                self.i += 1;
                let Some(Tok::Name(a)) = self.peek().cloned() else {
                    return Err(self.err("expected an attribute name after `.`"));
                };
                self.i += 1;
                e = Ex::Attr(Box::new(e), a);
            } else if self.is_op("[") {
                self.i += 1;
                let start = if self.is_op(":") {
                    None
                } else {
                    Some(Box::new(self.expr()?))
                };
                if self.is_op(":") {
                    self.i += 1;
                    let end = if self.is_op("]") {
                        None
                    } else {
                        Some(Box::new(self.expr()?))
                    };
                    self.expect_op("]")?;
                    e = Ex::Slice(Box::new(e), start, end);
                } else {
                    self.expect_op("]")?;
                    let idx = start.ok_or_else(|| self.err("empty index"))?;
                    e = Ex::Index(Box::new(e), idx);
                }
            } else if self.is_op("(") {
                self.i += 1;
                let args = self.args(")")?;
                e = Ex::Call(Box::new(e), args);
            } else {
                break;
            }
        }
        Ok(e)
    }
    fn primary(&mut self) -> Result<Ex, ReaderError> {
        let t = self
            .peek()
            .cloned()
            .ok_or_else(|| self.err("unexpected end of expression"))?;
        self.i += 1;
        Ok(match t {
            Tok::Str(s) => {
                // Adjacent string literals concatenate.
                let mut s = s;
                while let Some(Tok::Str(more)) = self.peek().cloned() {
                    self.i += 1;
                    s.push_str(&more);
                }
                Ex::Lit(V::Str(s))
            }
            Tok::Int(i) => Ex::Lit(V::Int(i)),
            Tok::Name(n) => match n.as_str() {
                "true" | "True" => Ex::Lit(V::Bool(true)),
                "false" | "False" => Ex::Lit(V::Bool(false)),
                "none" | "None" => Ex::Lit(V::None),
                _ => Ex::Name(n),
            },
            Tok::Op("(") => {
                let e = self.expr()?;
                self.expect_op(")")?;
                e
            }
            Tok::Op("[") => Ex::List(self.args("]")?),
            Tok::Op("{") => {
                let mut items = Vec::new();
                while !self.is_op("}") {
                    let k = self.expr()?;
                    self.expect_op(":")?;
                    let v = self.expr()?;
                    items.push((k, v));
                    if !self.is_op("}") {
                        self.expect_op(",")?;
                    }
                }
                self.i += 1;
                Ex::Dict(items)
            }
            Tok::Op(o) => return Err(self.err(&format!("unexpected `{o}`"))),
        })
    }
}

fn eval_str(src: &str, env: &Env) -> Result<V, ReaderError> {
    let toks = tokenize(src)?;
    let mut p = P { toks, i: 0, src };
    let e = p.expr()?;
    if p.i != p.toks.len() {
        return Err(p.err("unexpected trailing tokens"));
    }
    eval(&e, env, src)
}

fn as_int(v: &V, src: &str) -> Result<i64, ReaderError> {
    match v {
        V::Int(i) => Ok(*i),
        V::Bool(b) => Ok(i64::from(*b)),
        other => Err(terr(format!(
            "expected a number, got {} in `{src}`",
            other.type_name()
        ))),
    }
}

fn to_display(v: &V) -> String {
    let mut s = String::new();
    v.render(&mut s);
    s
}

fn norm_index(i: i64, len: usize) -> Option<usize> {
    let len = len as i64;
    let j = if i < 0 { len + i } else { i };
    (0..len).contains(&j).then_some(j as usize)
}

fn slice_bounds(start: Option<i64>, end: Option<i64>, len: usize) -> (usize, usize) {
    let l = len as i64;
    let fix = |x: i64| if x < 0 { (l + x).max(0) } else { x.min(l) };
    let s = start.map_or(0, fix);
    let e = end.map_or(l, fix);
    (s as usize, (e.max(s)) as usize)
}

fn eval(e: &Ex, env: &Env, src: &str) -> Result<V, ReaderError> {
    let ev = |x: &Ex| eval(x, env, src);
    Ok(match e {
        Ex::Lit(v) => v.clone(),
        Ex::Name(n) => env.get(n),
        Ex::List(items) => V::List(items.iter().map(ev).collect::<Result<_, _>>()?),
        Ex::Dict(items) => {
            let mut m = BTreeMap::new();
            for (k, v) in items {
                m.insert(to_display(&ev(k)?), ev(v)?);
            }
            V::Map(m)
        }
        Ex::Attr(obj, name) => match ev(obj)? {
            V::Map(m) => m.get(name).cloned().unwrap_or(V::Undef),
            _ => V::Undef,
        },
        Ex::Index(obj, idx) => {
            let o = ev(obj)?;
            let i = ev(idx)?;
            match (&o, &i) {
                (V::Map(m), V::Str(k)) => m.get(k).cloned().unwrap_or(V::Undef),
                (V::List(l), V::Int(n)) => norm_index(*n, l.len())
                    .map(|j| l[j].clone())
                    .ok_or_else(|| terr(format!("index {n} out of range in `{src}`")))?,
                (V::Str(s), V::Int(n)) => {
                    let cs: Vec<char> = s.chars().collect();
                    norm_index(*n, cs.len())
                        .map(|j| V::Str(cs[j].to_string()))
                        .ok_or_else(|| terr(format!("index {n} out of range in `{src}`")))?
                }
                (V::Undef, _) => V::Undef,
                _ => {
                    return Err(terr(format!(
                        "cannot index {} with {} in `{src}`",
                        o.type_name(),
                        i.type_name()
                    )))
                }
            }
        }
        Ex::Slice(obj, a, b) => {
            let a = a
                .as_ref()
                .map(|x| ev(x).and_then(|v| as_int(&v, src)))
                .transpose()?;
            let b = b
                .as_ref()
                .map(|x| ev(x).and_then(|v| as_int(&v, src)))
                .transpose()?;
            match ev(obj)? {
                V::List(l) => {
                    let (s, e) = slice_bounds(a, b, l.len());
                    V::List(l[s..e].to_vec())
                }
                V::Str(st) => {
                    let cs: Vec<char> = st.chars().collect();
                    let (s, e) = slice_bounds(a, b, cs.len());
                    V::Str(cs[s..e].iter().collect())
                }
                other => {
                    return Err(terr(format!(
                        "cannot slice {} in `{src}`",
                        other.type_name()
                    )))
                }
            }
        }
        Ex::Call(callee, args) => {
            let args: Vec<V> = args.iter().map(ev).collect::<Result<_, _>>()?;
            match &**callee {
                Ex::Name(n) if n == "raise_exception" => {
                    return Err(terr(format!(
                        "the template raised: {}",
                        args.first().map(to_display).unwrap_or_default()
                    )))
                }
                Ex::Attr(obj, method) => call_method(&ev(obj)?, method, &args, src)?,
                Ex::Name(n) => return Err(terr(format!("unsupported function `{n}` in `{src}`"))),
                _ => return Err(terr(format!("unsupported call in `{src}`"))),
            }
        }
        Ex::Filter(x, f, args) => {
            let v = ev(x)?;
            let args: Vec<V> = args.iter().map(ev).collect::<Result<_, _>>()?;
            apply_filter(v, f, &args, src)?
        }
        Ex::Test(x, test, neg) => {
            let v = ev(x)?;
            let r = match test.as_str() {
                "defined" => v != V::Undef,
                "undefined" => v == V::Undef,
                "none" => v == V::None,
                "string" => matches!(v, V::Str(_)),
                "number" | "integer" => matches!(v, V::Int(_)),
                "mapping" => matches!(v, V::Map(_)),
                "sequence" | "iterable" => matches!(v, V::List(_) | V::Str(_) | V::Map(_)),
                "true" => v == V::Bool(true),
                "false" => v == V::Bool(false),
                "boolean" => matches!(v, V::Bool(_)),
                other => return Err(terr(format!("unsupported test `is {other}` in `{src}`"))),
            };
            V::Bool(r != *neg)
        }
        Ex::Not(x) => V::Bool(!ev(x)?.truthy()),
        Ex::Neg(x) => V::Int(-as_int(&ev(x)?, src)?),
        Ex::And(a, b) => {
            let l = ev(a)?;
            if !l.truthy() {
                l
            } else {
                ev(b)?
            }
        }
        Ex::Or(a, b) => {
            let l = ev(a)?;
            if l.truthy() {
                l
            } else {
                ev(b)?
            }
        }
        Ex::Cond(c, a, b) => {
            if ev(c)?.truthy() {
                ev(a)?
            } else {
                ev(b)?
            }
        }
        Ex::Bin(op, a, b) => binop(op, ev(a)?, ev(b)?, src)?,
    })
}

fn binop(op: &str, l: V, r: V, src: &str) -> Result<V, ReaderError> {
    Ok(match op {
        "==" => V::Bool(l == r),
        "!=" => V::Bool(l != r),
        "<" | ">" | "<=" | ">=" => {
            let ord = match (&l, &r) {
                (V::Int(a), V::Int(b)) => a.cmp(b),
                (V::Str(a), V::Str(b)) => a.cmp(b),
                _ => {
                    return Err(terr(format!(
                        "cannot compare {} and {} in `{src}`",
                        l.type_name(),
                        r.type_name()
                    )))
                }
            };
            V::Bool(match op {
                "<" => ord.is_lt(),
                ">" => ord.is_gt(),
                "<=" => ord.is_le(),
                _ => ord.is_ge(),
            })
        }
        "in" | "not in" => {
            let found = match (&l, &r) {
                (V::Str(a), V::Str(b)) => b.contains(a.as_str()),
                (x, V::List(items)) => items.contains(x),
                (V::Str(k), V::Map(m)) => m.contains_key(k),
                (_, V::Undef) => false,
                _ => {
                    return Err(terr(format!(
                        "unsupported `in` on {} in `{src}`",
                        r.type_name()
                    )))
                }
            };
            V::Bool(found == (op == "in"))
        }
        "~" => V::Str(to_display(&l) + &to_display(&r)),
        "+" => match (l, r) {
            (V::Int(a), V::Int(b)) => V::Int(a + b),
            (V::Str(a), V::Str(b)) => V::Str(a + &b),
            (V::List(mut a), V::List(b)) => {
                a.extend(b);
                V::List(a)
            }
            (a, b) => {
                return Err(terr(format!(
                    "cannot add {} and {} in `{src}`",
                    a.type_name(),
                    b.type_name()
                )))
            }
        },
        _ => {
            let a = as_int(&l, src)?;
            let b = as_int(&r, src)?;
            match op {
                "-" => V::Int(a - b),
                "*" => V::Int(a * b),
                "%" | "//" | "/" if b == 0 => {
                    return Err(terr(format!("division by zero in `{src}`")))
                }
                "%" => V::Int(a.rem_euclid(b)),
                "//" => V::Int(a.div_euclid(b)),
                "/" if a % b == 0 => V::Int(a / b),
                _ => return Err(terr(format!("non-integer division in `{src}`"))),
            }
        }
    })
}

fn call_method(obj: &V, method: &str, args: &[V], src: &str) -> Result<V, ReaderError> {
    let arg_str = |i: usize| match args.get(i) {
        Some(V::Str(s)) => Some(s.clone()),
        _ => None,
    };
    match (obj, method) {
        (V::Str(s), "strip") => Ok(V::Str(match arg_str(0) {
            Some(chars) => s.trim_matches(|c| chars.contains(c)).to_string(),
            None => s.trim().to_string(),
        })),
        (V::Str(s), "lstrip") => Ok(V::Str(s.trim_start().to_string())),
        (V::Str(s), "rstrip") => Ok(V::Str(s.trim_end().to_string())),
        (V::Str(s), "lower") => Ok(V::Str(s.to_lowercase())),
        (V::Str(s), "upper") => Ok(V::Str(s.to_uppercase())),
        (V::Str(s), "startswith") => Ok(V::Bool(arg_str(0).is_some_and(|p| s.starts_with(&p)))),
        (V::Str(s), "endswith") => Ok(V::Bool(arg_str(0).is_some_and(|p| s.ends_with(&p)))),
        (V::Str(s), "split") => Ok(V::List(match arg_str(0) {
            Some(sep) => s.split(sep.as_str()).map(|x| V::Str(x.into())).collect(),
            None => s.split_whitespace().map(|x| V::Str(x.into())).collect(),
        })),
        _ => Err(terr(format!(
            "unsupported method `{method}` on {} in `{src}`",
            obj.type_name()
        ))),
    }
}

fn apply_filter(v: V, f: &str, args: &[V], src: &str) -> Result<V, ReaderError> {
    Ok(match (f, v) {
        ("trim", V::Str(s)) => V::Str(s.trim().to_string()),
        ("lower", V::Str(s)) => V::Str(s.to_lowercase()),
        ("upper", V::Str(s)) => V::Str(s.to_uppercase()),
        ("capitalize", V::Str(s)) => {
            let mut cs = s.chars();
            V::Str(match cs.next() {
                Some(c) => c.to_uppercase().collect::<String>() + &cs.as_str().to_lowercase(),
                None => String::new(),
            })
        }
        ("length" | "count", V::Str(s)) => V::Int(s.chars().count() as i64),
        ("length" | "count", V::List(l)) => V::Int(l.len() as i64),
        ("length" | "count", V::Map(m)) => V::Int(m.len() as i64),
        ("string", v) => V::Str(to_display(&v)),
        ("tojson", v) => V::Str(v.to_json().to_string()),
        ("default", V::Undef) => args.first().cloned().unwrap_or(V::Str(String::new())),
        ("default", v) => v,
        ("first", V::List(l)) => l.first().cloned().unwrap_or(V::Undef),
        ("last", V::List(l)) => l.last().cloned().unwrap_or(V::Undef),
        ("list", V::List(l)) => V::List(l),
        ("join", V::List(l)) => {
            let sep = match args.first() {
                Some(V::Str(s)) => s.clone(),
                _ => String::new(),
            };
            V::Str(l.iter().map(to_display).collect::<Vec<_>>().join(&sep))
        }
        (f, v) => {
            return Err(terr(format!(
                "unsupported filter `{f}` on {} in `{src}`",
                v.type_name()
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMOLLM2: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

    fn user(s: &str) -> Vec<ChatMessage> {
        vec![ChatMessage::new("user", s)]
    }

    #[test]
    fn smollm2_template_default_system() {
        let t = ChatTemplate::from_jinja(SMOLLM2).unwrap();
        let out = t
            .render(&user("Hi"), true, "<|im_start|>", "<|im_end|>")
            .unwrap();
        assert_eq!(
            out,
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging \
             Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        );
        let msgs = vec![
            ChatMessage::new("system", "Be brief."),
            ChatMessage::new("user", "Hi"),
        ];
        let out = t.render(&msgs, false, "", "").unwrap();
        assert_eq!(
            out,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        );
    }

    #[test]
    fn chatml_and_plain() {
        let out = ChatTemplate::chatml()
            .render(&user("Q?"), true, "", "")
            .unwrap();
        assert_eq!(
            out,
            "<|im_start|>user\nQ?<|im_end|>\n<|im_start|>assistant\n"
        );
        let msgs = vec![
            ChatMessage::new("system", "S"),
            ChatMessage::new("user", "U"),
        ];
        assert_eq!(
            ChatTemplate::plain().render(&msgs, true, "", "").unwrap(),
            "S\n\nU\n"
        );
    }

    /// The Qwen2.5 template shape: tool branches are untaken, so they need not be supported.
    #[test]
    fn qwen25_style_template_with_untaken_tool_branches() {
        let src = r#"{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- for tool in tools %}{{- "\n" }}{{- tool | tojson }}{%- endfor %}
    {%- set ns = namespace(x=1) %}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {%- for tool_call in message.tool_calls %}{{- tool_call.name }}{%- endfor %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
"#;
        let t = ChatTemplate::from_jinja(src).unwrap();
        let out = t.render(&user("Hi"), true, "", "").unwrap();
        assert_eq!(
            out,
            "<|im_start|>system\nYou are Qwen.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n\
             <|im_start|>assistant\n"
        );
    }

    /// The Llama-3 template shape: `set` in a loop, `| trim`, `bos_token`.
    #[test]
    fn llama3_style_template() {
        let src = "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";
        let t = ChatTemplate::from_jinja(src).unwrap();
        let out = t
            .render(&user("  Hi  "), true, "<|begin_of_text|>", "")
            .unwrap();
        assert_eq!(
            out,
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>\
             <|start_header_id|>assistant<|end_header_id|>\n\n"
        );
    }

    /// The Mistral-instruct template shape: alternation check with `%` and `raise_exception`.
    #[test]
    fn mistral_style_template_and_raise() {
        let src = "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}";
        let t = ChatTemplate::from_jinja(src).unwrap();
        assert_eq!(
            t.render(&user("Hi"), true, "<s>", "</s>").unwrap(),
            "<s>[INST] Hi [/INST]"
        );
        let err = t
            .render(&[ChatMessage::new("system", "S")], true, "<s>", "</s>")
            .unwrap_err();
        assert!(err.to_string().contains("roles must alternate"), "{err}");
    }

    #[test]
    fn whitespace_control_and_trim_blocks() {
        let t = ChatTemplate::from_jinja("a\n  {% if true %}\nb\n  {%- endif %}  \n{# c #}\nd")
            .unwrap();
        assert_eq!(t.render(&[], false, "", "").unwrap(), "a\nb  \nd");
    }

    #[test]
    fn unsupported_constructs_fail_clearly() {
        let t = ChatTemplate::from_jinja("{% macro m() %}x{% endmacro %}{{ m() }}").unwrap();
        let e = t.render(&user("x"), true, "", "").unwrap_err().to_string();
        assert!(e.contains("unsupported"), "{e}");
        let t = ChatTemplate::from_jinja("{{ strftime_now('%Y') }}").unwrap();
        assert!(t.render(&user("x"), true, "", "").is_err());
        assert!(ChatTemplate::from_jinja("{% if x %}no end").is_err());
        assert!(ChatTemplate::from_jinja("{{ unterminated").is_err());
        assert!(ChatTemplate::from_jinja("{% endfor %}").is_err());
    }

    #[test]
    fn expressions() {
        let t = ChatTemplate::from_jinja(
            "{{ messages|length }} {{ messages[-1].content[1:3] }} {{ 'x' in 'axb' }} \
             {{ 7 // 2 }} {{ none is none }} {{ foo is defined }} {{ [1, 2]|join('-') }} \
             {{ 'a' if false else 'b' }} {{ ' s '.strip() ~ 1 }} {{ {'k': 'v'}['k'] }}",
        )
        .unwrap();
        assert_eq!(
            t.render(&user("hello"), false, "", "").unwrap(),
            "1 el True 3 True False 1-2 b s1 v"
        );
    }
}
