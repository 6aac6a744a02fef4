//! The model-reply parsers of issue 56: `data generate`'s (a JSON question, answer, excerpts
//! and distractors, fenced or not), Chroma's `split_after:` lines and LumberChunker's
//! `Answer: ID k` (the LLM chunking kinds). Any reply gives a draft, a list of numbers or an
//! error — never a panic — and what they return holds together.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for (cut, mcq) in [(false, false), (false, true), (true, true)] {
        if let Ok(d) = generate::reply::parse_reply(&text, cut, mcq) {
            assert!(
                !d.question.trim().is_empty(),
                "an empty question was accepted: {text:?}"
            );
            assert!(
                !d.answer.trim().is_empty(),
                "an empty answer was accepted: {text:?}"
            );
        }
    }
    if let Some(numbers) = evaluator::strategies::llm_boundaries::chroma_numbers(&text) {
        assert!(numbers.len() <= text.len(), "{numbers:?}");
    }
    if let Some(k) = evaluator::strategies::llm_boundaries::lumber_answer(&text) {
        assert!(text.contains("Answer: ID"), "{k} from {text:?}");
    }
});
