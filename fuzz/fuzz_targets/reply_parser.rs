//! The reply parser: any reply text against any options gives a choice among the options or
//! none (invalid), never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // The first line names the options (`|`-separated, 2 to 26), the rest is the reply.
    let (head, reply) = text.split_once('\n').unwrap_or(("A|B|C|D", &text));
    let mut options: Vec<String> = head.split('|').map(str::to_string).take(26).collect();
    while options.len() < 2 {
        options.push(format!("option {}", options.len()));
    }
    let parsed = reader::parse_answer(reply, &options);
    if let Some(i) = parsed.index() {
        assert!(
            i < options.len(),
            "{i} of {} options: {reply:?}",
            options.len()
        );
    }
    if let reader::ParsedAnswer::Ambiguous(v) = &parsed {
        assert!(v.len() >= 2 && v.windows(2).all(|w| w[0] < w[1]), "{v:?}");
        assert!(v.iter().all(|&i| i < options.len()));
    }
});
