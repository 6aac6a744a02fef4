//! Reading a Hugging Face / sentence-transformers model directory: `config.json` (the BERT
//! hyper-parameters), `modules.json`, `1_Pooling/config.json` and
//! `sentence_bert_config.json` (pooling, `max_seq_length`, normalisation, lower-casing).
//!
//! Every error names the file and the JSON field at fault.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::EmbedError;

/// How token vectors are pooled into one sentence vector (sentence-transformers
/// `models.Pooling`, read from `1_Pooling/config.json`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Pooling {
    /// Mean of the token vectors under the attention mask (`pooling_mode_mean_tokens`).
    Mean,
    /// The first (`[CLS]`) token's vector (`pooling_mode_cls_token`).
    Cls,
    /// Element-wise maximum over the tokens (`pooling_mode_max_tokens`).
    Max,
    /// Sum of the token vectors divided by `sqrt(token count)`
    /// (`pooling_mode_mean_sqrt_len_tokens`).
    MeanSqrtLen,
}

impl Pooling {
    /// Short name used in identities and manifests: `mean`, `cls`, `max`, `mean_sqrt_len`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The feed-forward activation named by `config.json`'s `hidden_act`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HiddenAct {
    /// `gelu`: exact GELU, `x * (1 + erf(x / sqrt 2)) / 2` (BERT, MiniLM, bge, e5).
    Gelu,
    /// `gelu_new`, `gelu_pytorch_tanh`, `gelu_fast`: the tanh approximation of GELU.
    GeluTanh,
    /// `relu`.
    Relu,
}

/// The BERT hyper-parameters the forward pass needs, from `config.json`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub hidden_act: HiddenAct,
    pub max_position_embeddings: usize,
    pub type_vocab_size: usize,
    pub layer_norm_eps: f64,
    pub model_type: Option<String>,
}

/// What the sentence-transformers files of a model directory say about turning token vectors
/// into one sentence vector.
///
/// Source: sentence-transformers' `modules.json` (the module pipeline), `1_Pooling/config.json`
/// (`models.Pooling`) and `sentence_bert_config.json` (`models.Transformer`). A plain Hugging
/// Face directory without these files gets mean pooling, no model normalisation and
/// `max_seq_length = max_position_embeddings`, which is what sentence-transformers itself
/// assumes for such a directory.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SentenceTransformerConfig {
    /// Pooling mode.
    pub pooling: Pooling,
    /// Inputs are truncated to this many word pieces, special tokens included.
    pub max_seq_length: usize,
    /// Whether the model's pipeline ends with a `Normalize` module (L2 normalisation).
    pub normalize: bool,
    /// Whether sentence-transformers lower-cases the text before tokenizing
    /// (`do_lower_case`; the tokenizer may lower-case on its own as well).
    pub do_lower_case: bool,
    /// Sub-directory holding the transformer (`""` for the usual layout).
    pub transformer_path: String,
}

pub(crate) fn read_json(path: &Path) -> Result<Value, EmbedError> {
    let text = std::fs::read_to_string(path).map_err(|e| EmbedError::Model {
        path: path.to_path_buf(),
        message: format!("cannot read: {e}"),
    })?;
    serde_json::from_str(&text).map_err(|e| EmbedError::Model {
        path: path.to_path_buf(),
        message: format!("invalid JSON: {e}"),
    })
}

fn model_err(path: &Path, message: impl Into<String>) -> EmbedError {
    EmbedError::Model {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

fn get_usize(v: &Value, path: &Path, field: &str) -> Result<usize, EmbedError> {
    match v.get(field) {
        Some(x) => x
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| {
                model_err(
                    path,
                    format!("field `{field}` must be a non-negative integer, found {x}"),
                )
            }),
        None => Err(model_err(path, format!("missing field `{field}`"))),
    }
}

fn get_bool(v: &Value, path: &Path, field: &str) -> Result<Option<bool>, EmbedError> {
    match v.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(x) => Err(model_err(
            path,
            format!("field `{field}` must be a boolean, found {x}"),
        )),
    }
}

impl BertConfig {
    /// Reads `config.json`.
    pub(crate) fn from_file(path: &Path) -> Result<Self, EmbedError> {
        let v = read_json(path)?;
        let positive = |field: &str| -> Result<usize, EmbedError> {
            let n = get_usize(&v, path, field)?;
            if n == 0 {
                return Err(model_err(path, format!("field `{field}` must be positive")));
            }
            Ok(n)
        };
        let hidden_size = positive("hidden_size")?;
        let num_attention_heads = positive("num_attention_heads")?;
        if hidden_size % num_attention_heads != 0 {
            return Err(model_err(
                path,
                format!(
                    "field `hidden_size` ({hidden_size}) is not a multiple of `num_attention_heads` ({num_attention_heads})"
                ),
            ));
        }
        let hidden_act = match v.get("hidden_act").and_then(Value::as_str) {
            None => return Err(model_err(path, "missing or non-string field `hidden_act`")),
            Some("gelu") => HiddenAct::Gelu,
            Some("gelu_new" | "gelu_pytorch_tanh" | "gelu_fast") => HiddenAct::GeluTanh,
            Some("relu") => HiddenAct::Relu,
            Some(other) => {
                return Err(model_err(
                    path,
                    format!("field `hidden_act`: unsupported activation `{other}` (supported: gelu, gelu_new, gelu_pytorch_tanh, gelu_fast, relu)"),
                ))
            }
        };
        match v.get("position_embedding_type").and_then(Value::as_str) {
            None | Some("absolute") => {}
            Some(other) => {
                return Err(model_err(
                    path,
                    format!("field `position_embedding_type`: only `absolute` is supported, found `{other}`"),
                ))
            }
        }
        let layer_norm_eps = match v.get("layer_norm_eps") {
            None => 1e-12,
            Some(x) => x
                .as_f64()
                .filter(|e| *e > 0.0 && e.is_finite())
                .ok_or_else(|| {
                    model_err(
                        path,
                        format!("field `layer_norm_eps` must be a positive number, found {x}"),
                    )
                })?,
        };
        let type_vocab_size = match v.get("type_vocab_size") {
            None => 2,
            Some(_) => positive("type_vocab_size")?,
        };
        Ok(Self {
            vocab_size: positive("vocab_size")?,
            hidden_size,
            num_hidden_layers: positive("num_hidden_layers")?,
            num_attention_heads,
            intermediate_size: positive("intermediate_size")?,
            hidden_act,
            max_position_embeddings: positive("max_position_embeddings")?,
            type_vocab_size,
            layer_norm_eps,
            model_type: v
                .get("model_type")
                .and_then(Value::as_str)
                .map(str::to_string),
        })
    }
}

impl SentenceTransformerConfig {
    /// Reads the sentence-transformers files of `dir` (all optional, see the type's doc).
    /// `max_position_embeddings` caps `max_seq_length`.
    pub(crate) fn from_dir(dir: &Path, max_position_embeddings: usize) -> Result<Self, EmbedError> {
        let modules_path = dir.join("modules.json");
        let mut pooling_path: Option<PathBuf> = None;
        let mut normalize = false;
        let mut transformer_path = String::new();
        if modules_path.exists() {
            let v = read_json(&modules_path)?;
            let list = v
                .as_array()
                .ok_or_else(|| model_err(&modules_path, "expected a JSON array of modules"))?;
            for (i, m) in list.iter().enumerate() {
                let ty = m.get("type").and_then(Value::as_str).ok_or_else(|| {
                    model_err(
                        &modules_path,
                        format!("module {i}: missing string field `type`"),
                    )
                })?;
                let sub = m
                    .get("path")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                match ty.rsplit('.').next().unwrap_or(ty) {
                    "Transformer" => transformer_path = sub,
                    "Pooling" => pooling_path = Some(dir.join(sub).join("config.json")),
                    "Normalize" => normalize = true,
                    other => {
                        return Err(model_err(
                            &modules_path,
                            format!("module {i}: unsupported sentence-transformers module `{other}` (field `type` = `{ty}`); supported: Transformer, Pooling, Normalize"),
                        ))
                    }
                }
            }
        } else if dir.join("1_Pooling").join("config.json").exists() {
            pooling_path = Some(dir.join("1_Pooling").join("config.json"));
        }
        let pooling = match pooling_path {
            Some(p) => read_pooling(&p)?,
            None => Pooling::Mean,
        };
        let mut max_seq_length = max_position_embeddings;
        let mut do_lower_case = false;
        let sbert = dir
            .join(&transformer_path)
            .join("sentence_bert_config.json");
        if sbert.exists() {
            let v = read_json(&sbert)?;
            if v.get("max_seq_length").is_some_and(|x| !x.is_null()) {
                max_seq_length = get_usize(&v, &sbert, "max_seq_length")?;
            }
            do_lower_case = get_bool(&v, &sbert, "do_lower_case")?.unwrap_or(false);
        }
        if max_seq_length < 2 {
            return Err(model_err(
                &sbert,
                "field `max_seq_length` must be at least 2 (room for [CLS] and [SEP])",
            ));
        }
        Ok(Self {
            pooling,
            max_seq_length: max_seq_length.min(max_position_embeddings),
            normalize,
            do_lower_case,
            transformer_path,
        })
    }
}

fn read_pooling(path: &Path) -> Result<Pooling, EmbedError> {
    let v = read_json(path)?;
    if let Some(mode) = v.get("pooling_mode").and_then(Value::as_str) {
        return match mode {
            "mean" => Ok(Pooling::Mean),
            "cls" => Ok(Pooling::Cls),
            "max" => Ok(Pooling::Max),
            "mean_sqrt_len_tokens" => Ok(Pooling::MeanSqrtLen),
            other => Err(model_err(
                path,
                format!("field `pooling_mode`: unsupported mode `{other}`"),
            )),
        };
    }
    let modes = [
        ("pooling_mode_cls_token", Some(Pooling::Cls)),
        ("pooling_mode_mean_tokens", Some(Pooling::Mean)),
        ("pooling_mode_max_tokens", Some(Pooling::Max)),
        (
            "pooling_mode_mean_sqrt_len_tokens",
            Some(Pooling::MeanSqrtLen),
        ),
        ("pooling_mode_weightedmean_tokens", None),
        ("pooling_mode_lasttoken", None),
    ];
    let mut chosen = Vec::new();
    for (field, mode) in modes {
        if get_bool(&v, path, field)?.unwrap_or(false) {
            match mode {
                Some(m) => chosen.push((field, m)),
                None => {
                    return Err(model_err(
                        path,
                        format!("field `{field}`: this pooling mode is not supported"),
                    ))
                }
            }
        }
    }
    match chosen.as_slice() {
        [(_, m)] => Ok(*m),
        [] => Err(model_err(
            path,
            "no pooling mode is enabled (expected exactly one `pooling_mode_*` field set to true)",
        )),
        many => Err(model_err(
            path,
            format!(
                "several pooling modes are enabled ({}); concatenated pooling is not supported",
                many.iter().map(|(f, _)| *f).collect::<Vec<_>>().join(", ")
            ),
        )),
    }
}

#[cfg(test)]
mod tests {

    // Every variant's strum name equals its serde name, so the two derives agree.
    use testkit::names_agree;

    #[test]
    fn pooling_names_are_the_serde_names() {
        names_agree::<Pooling>();
    }
    use super::*;

    fn write(dir: &Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    const CONFIG: &str = r#"{"vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1,
        "num_attention_heads": 2, "intermediate_size": 16, "hidden_act": "gelu",
        "max_position_embeddings": 64, "type_vocab_size": 2, "layer_norm_eps": 1e-12}"#;

    #[test]
    fn bert_config_reads_fields_and_names_bad_ones() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "config.json", CONFIG);
        let c = BertConfig::from_file(&d.path().join("config.json")).unwrap();
        assert_eq!(
            (c.hidden_size, c.num_attention_heads, c.hidden_act),
            (8, 2, HiddenAct::Gelu)
        );

        write(
            d.path(),
            "config.json",
            &CONFIG.replace("\"gelu\"", "\"swish\""),
        );
        let e = BertConfig::from_file(&d.path().join("config.json"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("config.json") && e.contains("hidden_act") && e.contains("swish"),
            "{e}"
        );

        write(
            d.path(),
            "config.json",
            &CONFIG.replace("\"hidden_size\": 8,", ""),
        );
        let e = BertConfig::from_file(&d.path().join("config.json"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing field `hidden_size`"), "{e}");

        write(d.path(), "config.json", "{not json");
        let e = BertConfig::from_file(&d.path().join("config.json"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("invalid JSON"), "{e}");

        let e = BertConfig::from_file(&d.path().join("nope.json"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("nope.json") && e.contains("cannot read"), "{e}");
    }

    #[test]
    fn sentence_transformer_files_decide_pooling_length_and_normalisation() {
        let d = tempfile::tempdir().unwrap();
        // No sentence-transformers files: defaults.
        let c = SentenceTransformerConfig::from_dir(d.path(), 512).unwrap();
        assert_eq!(
            (c.pooling, c.max_seq_length, c.normalize),
            (Pooling::Mean, 512, false)
        );

        write(
            d.path(),
            "modules.json",
            r#"[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
                {"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},
                {"idx":2,"name":"2","path":"2_Normalize","type":"sentence_transformers.models.Normalize"}]"#,
        );
        write(
            d.path(),
            "1_Pooling/config.json",
            r#"{"word_embedding_dimension": 8, "pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}"#,
        );
        write(
            d.path(),
            "sentence_bert_config.json",
            r#"{"max_seq_length": 256, "do_lower_case": true}"#,
        );
        let c = SentenceTransformerConfig::from_dir(d.path(), 512).unwrap();
        assert_eq!(
            (c.pooling, c.max_seq_length, c.normalize, c.do_lower_case),
            (Pooling::Cls, 256, true, true)
        );
        // max_position_embeddings caps max_seq_length.
        assert_eq!(
            SentenceTransformerConfig::from_dir(d.path(), 128)
                .unwrap()
                .max_seq_length,
            128
        );

        write(
            d.path(),
            "1_Pooling/config.json",
            r#"{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": true}"#,
        );
        let e = SentenceTransformerConfig::from_dir(d.path(), 512)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("several pooling modes") && e.contains("1_Pooling"),
            "{e}"
        );
        write(
            d.path(),
            "1_Pooling/config.json",
            r#"{"pooling_mode_max_tokens": "yes"}"#,
        );
        let e = SentenceTransformerConfig::from_dir(d.path(), 512)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("pooling_mode_max_tokens") && e.contains("boolean"),
            "{e}"
        );
        write(
            d.path(),
            "1_Pooling/config.json",
            r#"{"pooling_mode_max_tokens": true}"#,
        );
        assert_eq!(
            SentenceTransformerConfig::from_dir(d.path(), 512)
                .unwrap()
                .pooling,
            Pooling::Max
        );

        write(
            d.path(),
            "modules.json",
            r#"[{"idx":0,"path":"2_Dense","type":"sentence_transformers.models.Dense"}]"#,
        );
        let e = SentenceTransformerConfig::from_dir(d.path(), 512)
            .unwrap_err()
            .to_string();
        assert!(e.contains("modules.json") && e.contains("Dense"), "{e}");
    }
}
