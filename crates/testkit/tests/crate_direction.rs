//! The crate-direction rule of ARCHITECTURE.md ("Crates depend only downward"), checked over
//! every workspace member's Cargo.toml: the layers are read from ARCHITECTURE.md itself (the
//! lines between `<!-- layers -->` and `<!-- /layers -->`), so the document is the rule and
//! this test keeps the code to it. A crate may depend (`[dependencies]`, `[build-dependencies]`)
//! only on workspace crates of a lower layer; dev-dependencies are free (tests may use any
//! crate). Every member must be in exactly one layer.

use std::collections::BTreeMap;

/// Layer number per package name, from ARCHITECTURE.md.
fn layers() -> BTreeMap<String, usize> {
    let doc = std::fs::read_to_string(testkit::workspace().join("ARCHITECTURE.md")).unwrap();
    let block = doc
        .split("<!-- layers -->")
        .nth(1)
        .and_then(|b| b.split("<!-- /layers -->").next())
        .expect("ARCHITECTURE.md has a <!-- layers --> block");
    let mut out = BTreeMap::new();
    for (layer, line) in block.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        // `N. `a`, `b` — what they hold`: the crates are the names before the dash.
        let crates = line.split(" — ").next().unwrap_or(line);
        let names: Vec<&str> = crates.split('`').skip(1).step_by(2).collect();
        assert!(!names.is_empty(), "a layer line without crates: {line:?}");
        for n in names {
            assert!(
                out.insert(n.to_string(), layer).is_none(),
                "{n} is in two layers"
            );
        }
    }
    out
}

/// (package name, workspace crates it depends on outside tests) per workspace member.
fn members() -> Vec<(String, Vec<String>)> {
    let root = testkit::workspace();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let list = manifest
        .split("members = [")
        .nth(1)
        .and_then(|m| m.split(']').next())
        .unwrap();
    let names_by_dir: BTreeMap<String, String> = list
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .map(|dir| {
            (
                dir.to_string(),
                package_name(&root.join(dir).join("Cargo.toml")),
            )
        })
        .collect();
    // Workspace crates by the name a dependency line uses (the key of
    // [workspace.dependencies] or a path dependency's key).
    let workspace: Vec<&String> = names_by_dir.values().collect();
    names_by_dir
        .keys()
        .map(|dir| {
            let text = std::fs::read_to_string(root.join(dir).join("Cargo.toml")).unwrap();
            let mut section = String::new();
            let mut deps = Vec::new();
            for line in text.lines().map(str::trim) {
                if line.starts_with('[') {
                    section = line.to_string();
                    continue;
                }
                if section != "[dependencies]" && section != "[build-dependencies]" {
                    continue;
                }
                let key = line
                    .split(['=', '.', ' '])
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_string();
                if workspace.contains(&&key) {
                    deps.push(key);
                }
            }
            (names_by_dir[dir].clone(), deps)
        })
        .collect()
}

fn package_name(manifest: &std::path::Path) -> String {
    std::fs::read_to_string(manifest)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("name = "))
        .map(|n| n.trim_matches('"').to_string())
        .unwrap()
}

#[test]
fn crates_depend_only_on_lower_layers() {
    let layers = layers();
    let members = members();
    assert!(members.len() >= 17, "{members:?}");
    let mut wrong = Vec::new();
    for (name, deps) in &members {
        let Some(&mine) = layers.get(name) else {
            wrong.push(format!("{name} is in no layer of ARCHITECTURE.md"));
            continue;
        };
        for d in deps {
            match layers.get(d) {
                Some(&theirs) if theirs < mine => {}
                Some(&theirs) => wrong.push(format!(
                    "{name} (layer {mine}) depends on {d} (layer {theirs}): a crate depends \
                     only on lower layers"
                )),
                None => wrong.push(format!("{d} is in no layer of ARCHITECTURE.md")),
            }
        }
    }
    for n in layers.keys() {
        if !members.iter().any(|(m, _)| m == n) {
            wrong.push(format!(
                "ARCHITECTURE.md lists {n}, which is not a workspace member"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
