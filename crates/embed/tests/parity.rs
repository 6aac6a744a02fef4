//! all-MiniLM-L6-v2 parity with sentence-transformers (../shared/reference/minilm) and
//! robustness on edge inputs. Needs the model (`chunkbench models fetch`).

mod common;

use embed::{cosine, BertEmbedder, BertOptions, Embedder, ForwardImpl, Pooling};

fn check_parity(e: &BertEmbedder, label: &str) {
    let r = common::reference();
    let texts: Vec<&str> = r.sentences.iter().map(String::as_str).collect();
    let got = e.embed(&texts).expect("embed reference sentences");
    assert_eq!(got.len(), texts.len());
    let mut worst = (f64::INFINITY, 0usize);
    for (i, (g, want)) in got.iter().zip(&r.embeddings).enumerate() {
        assert_eq!(g.len(), 384);
        let c = cosine(g, want);
        if c < worst.0 {
            worst = (c, i);
        }
        let (tokens, _) = e.token_count(texts[i]).unwrap();
        assert_eq!(
            tokens,
            r.token_counts[i],
            "token count of sentence {i} ({:?})",
            &texts[i][..texts[i].len().min(40)]
        );
    }
    eprintln!(
        "{label}: min cosine {:.12} (1 - cos = {:.2e}, sentence {}) over {} sentences",
        worst.0,
        1.0 - worst.0,
        worst.1,
        texts.len()
    );
    for (i, (g, want)) in got.iter().zip(&r.embeddings).enumerate() {
        let c = cosine(g, want);
        assert!(
            c >= 0.9999,
            "{label}: sentence {i} {:?}: cosine {c}",
            &texts[i][..texts[i].len().min(60)]
        );
    }
    // Every input longer than max_seq_length is reported as truncated.
    let truncated = r.token_counts.iter().filter(|&&n| n == 256).count() as u64;
    let s = e.stats();
    assert!(truncated >= 1);
    assert_eq!(s.truncated, truncated, "{label}: truncated count");
    assert_eq!(s.tokens, r.token_counts.iter().sum::<usize>() as u64);
    assert_eq!(s.texts, texts.len() as u64);
}

#[test]
fn fused_forward_matches_sentence_transformers() {
    let e = BertEmbedder::load(common::model_dir()).unwrap();
    let info = e.info();
    assert_eq!(info.sentence_transformers.pooling, Pooling::Mean);
    assert_eq!(info.sentence_transformers.max_seq_length, 256);
    assert!(info.sentence_transformers.normalize);
    assert_eq!(info.weights_sha256.len(), 64);
    assert!(
        e.identity().contains(&info.weights_sha256)
            && e.identity().contains("pool=mean:max_seq=256")
    );
    check_parity(&e, "fused");
}

#[test]
fn candle_reference_forward_matches_sentence_transformers() {
    let opts = BertOptions {
        forward: ForwardImpl::CandleReference,
        ..BertOptions::default()
    };
    let e = BertEmbedder::load_with(common::model_dir(), opts).unwrap();
    check_parity(&e, "candle-reference");
}

#[test]
fn batching_does_not_change_vectors() {
    let e = BertEmbedder::load(common::model_dir()).unwrap();
    let r = common::reference();
    // A mix of short, medium and truncated (256-piece) inputs.
    let picked = [0usize, 3, 10, 22, 24, 29, 60, 66, 86, 90, 96, 101];
    let texts: Vec<&str> = picked.iter().map(|&i| r.sentences[i].as_str()).collect();
    let all = e.embed(&texts).unwrap();
    let small = BertEmbedder::load_with(
        common::model_dir(),
        BertOptions {
            batch: embed::BatchConfig {
                max_batch_size: 3,
                max_batch_tokens: 300,
            },
            ..BertOptions::default()
        },
    )
    .unwrap();
    let pieces = small.embed(&texts).unwrap();
    for (k, &i) in picked.iter().enumerate() {
        assert!(
            cosine(&pieces[k], &all[k]) > 0.999_999,
            "sentence {i} small batches"
        );
        assert!(cosine(&all[k], &r.embeddings[i]) >= 0.9999);
    }
    for k in [0, 3, picked.len() - 1] {
        let alone = e.embed(&[texts[k]]).unwrap();
        assert!(
            cosine(&alone[0], &all[k]) > 0.999_999,
            "sentence {} alone vs batched",
            picked[k]
        );
    }
    assert!(small.stats().batches >= 4 && e.stats().batches == 1 + 3);
}

#[test]
fn edge_inputs_give_finite_unit_vectors() {
    let e = BertEmbedder::load(common::model_dir()).unwrap();
    let long = vec!["evolution"; 2000].join(" ");
    let chars = "x".repeat(50_000);
    let edge = [
        "",
        " ",
        "\t\n \r\n",
        long.as_str(),
        chars.as_str(),
        "日本語のテキスト。北京是中国的首都。한국어 문장입니다.",
        "🚀🔥👩‍👩‍👧‍👦🏳️‍🌈 emoji only? 🤔",
        "\u{0}\u{1}\u{7f}\u{200b}\u{feff}",
        "\u{301}\u{301}\u{301}",
        "مرحبا بالعالم",
    ];
    let got = e.embed(&edge).unwrap();
    assert_eq!(got.len(), edge.len());
    for (t, v) in edge.iter().zip(&got) {
        assert_eq!(v.len(), 384);
        assert!(
            v.iter().all(|x| x.is_finite()),
            "non-finite vector for {:?}",
            &t[..t.len().min(20)]
        );
        let n: f64 = v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
        assert!((n - 1.0).abs() < 1e-4 || n == 0.0, "norm {n}");
    }
    assert_eq!(
        e.stats().truncated,
        1,
        "only the 2000-word input exceeds 256 word pieces"
    );
    assert!(e.embed(&[]).unwrap().is_empty());
}

#[test]
fn missing_or_broken_model_directory_is_a_clear_error() {
    let err = BertEmbedder::load("/nonexistent/model/dir")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("/nonexistent/model/dir") && err.contains("not found"),
        "{err}"
    );

    // A copy of the model's small files without weights: the error names model.safetensors.
    let d = tempfile::tempdir().unwrap();
    let src = common::model_dir();
    std::fs::create_dir(d.path().join("1_Pooling")).unwrap();
    for f in [
        "config.json",
        "tokenizer.json",
        "modules.json",
        "sentence_bert_config.json",
        "1_Pooling/config.json",
    ] {
        std::fs::copy(src.join(f), d.path().join(f)).unwrap();
    }
    let err = BertEmbedder::load(d.path()).unwrap_err().to_string();
    assert!(err.contains("model.safetensors"), "{err}");
    // Garbage weights: named, no panic.
    std::fs::write(d.path().join("model.safetensors"), b"not safetensors").unwrap();
    let err = BertEmbedder::load(d.path()).unwrap_err().to_string();
    assert!(
        err.contains("model.safetensors") && err.contains("invalid safetensors"),
        "{err}"
    );
    // A config that disagrees with the weights' shapes names the tensor.
    std::fs::copy(
        src.join("model.safetensors"),
        d.path().join("model.safetensors"),
    )
    .unwrap();
    let cfg = std::fs::read_to_string(src.join("config.json"))
        .unwrap()
        .replace("\"intermediate_size\": 1536", "\"intermediate_size\": 1024");
    std::fs::write(d.path().join("config.json"), cfg).unwrap();
    let err = BertEmbedder::load(d.path()).unwrap_err().to_string();
    assert!(
        err.contains("intermediate.dense.weight") && err.contains("shape"),
        "{err}"
    );
}

#[test]
fn cls_and_max_pooling_agree_between_forward_paths() {
    // The model directory with another 1_Pooling/config.json: both forward paths must agree.
    let src = common::model_dir();
    let texts = [
        "The cat sat on the mat.",
        "",
        "Cosmology is the study of the universe as a whole.",
    ];
    for (field, mode) in [
        ("pooling_mode_cls_token", Pooling::Cls),
        ("pooling_mode_max_tokens", Pooling::Max),
    ] {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("1_Pooling")).unwrap();
        for f in [
            "config.json",
            "tokenizer.json",
            "modules.json",
            "sentence_bert_config.json",
            "model.safetensors",
        ] {
            if std::fs::hard_link(src.join(f), d.path().join(f)).is_err() {
                std::fs::copy(src.join(f), d.path().join(f)).unwrap();
            }
        }
        std::fs::write(
            d.path().join("1_Pooling/config.json"),
            format!(r#"{{"word_embedding_dimension": 384, "{field}": true}}"#),
        )
        .unwrap();
        let fused = BertEmbedder::load(d.path()).unwrap();
        assert_eq!(fused.info().sentence_transformers.pooling, mode);
        assert!(fused
            .identity()
            .contains(&format!("pool={}", mode.as_str())));
        let reference = BertEmbedder::load_with(
            d.path(),
            BertOptions {
                forward: ForwardImpl::CandleReference,
                ..BertOptions::default()
            },
        )
        .unwrap();
        let a = fused.embed(&texts).unwrap();
        let b = reference.embed(&texts).unwrap();
        let mean = BertEmbedder::load(&src).unwrap().embed(&texts).unwrap();
        for i in 0..texts.len() {
            assert!(cosine(&a[i], &b[i]) > 0.99999, "{field}: text {i}");
            assert!(
                cosine(&a[i], &mean[i]) < 0.99999,
                "{field} differs from mean pooling"
            );
        }
    }
}

#[test]
fn second_run_over_a_corpus_reads_every_vector_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let texts = [
        "Paris is the capital of France.",
        "The Moon is the only other world human beings have ever visited.",
        "",
        "Paris is the capital of France.",
    ];
    let first =
        embed::CachedEmbedder::new(BertEmbedder::load(common::model_dir()).unwrap(), dir.path())
            .unwrap();
    let a = first.embed(&texts).unwrap();
    let s = first.stats();
    assert_eq!((s.cache_hits, s.cache_misses, s.texts), (0, 4, 3));
    let second =
        embed::CachedEmbedder::new(BertEmbedder::load(common::model_dir()).unwrap(), dir.path())
            .unwrap();
    let b = second.embed(&texts).unwrap();
    let s = second.stats();
    assert_eq!(
        (s.cache_hits, s.cache_misses, s.texts, s.tokens),
        (4, 0, 0, 0)
    );
    assert_eq!(a, b);
}
