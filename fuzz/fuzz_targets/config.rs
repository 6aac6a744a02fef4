//! The config loader: any bytes as a run config (YAML) must give a config or an error, never a
//! panic, a hang or unbounded memory; a config that parses expands into cells.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(cfg) = evaluator::RunConfig::parse(text, "fuzz.yaml") {
        let cells = cfg.cells();
        for c in &cells {
            assert_eq!(c.key().id(), c.id());
        }
        // The resolved config reads back as itself (config.json).
        let json = serde_json::to_vec(&cfg).unwrap();
        let back: evaluator::RunConfig = serde_json::from_slice(&json).unwrap();
        assert_eq!(back.cells().len(), cells.len());
    }
});
