//! Generates the protocol types of every supported codex version from `schema/<version>/`.
//!
//! Input: per version, the vendored JSON Schema bundle plus the facts the bundle lacks
//! (`schema/<version>/facts/`). Output (`$OUT_DIR/protocol.rs`): per version, serde types whose
//! *serde shape* mirrors the real server's, so that `serde_json::from_value` produces the real
//! server's error text, a `Track` impl per type that walks a `Value` the way serde dispatches it
//! and reports the keys serde drops, and one `Protocol` table; types identical across versions
//! are generated once.
//!
//! typify is not used: for this bundle it turns internally tagged enums into untagged ones and
//! loses declaration order (both change error text), so every type goes through one generator.

#[path = "build/emit.rs"]
mod emit;
#[path = "build/model.rs"]
mod model;
#[path = "../runtime/src/names.rs"]
mod names;
#[path = "../runtime/src/segment.rs"]
mod segment;
#[path = "../runtime/src/version.rs"]
mod version;

use std::path::Path;

fn main() {
    // The schema lives at the workspace root, next to this crate.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let schema = root.parent().unwrap_or(root).join("schema");
    println!("cargo:rerun-if-changed={}", schema.display());
    println!("cargo:rerun-if-changed=build");
    // Modules of the crate the build script includes too.
    println!("cargo:rerun-if-changed=../runtime/src/names.rs");
    println!("cargo:rerun-if-changed=../runtime/src/segment.rs");
    println!("cargo:rerun-if-changed=../runtime/src/version.rs");
    let versions =
        version::version_dirs(&schema).unwrap_or_else(|e| panic!("{}: {e}", schema.display()));
    assert!(
        !versions.is_empty(),
        "no schema/<version>/ in {}",
        schema.display()
    );
    let corpus = root.parent().unwrap_or(root).join("tests/corpus");
    let models: Vec<(String, String, emit::Embeds, model::Model)> = versions
        .into_iter()
        .map(|v| {
            let dir = schema.join(&v);
            println!("cargo:rerun-if-changed={}", dir.display());
            let model = model::Model::load(&dir).unwrap_or_else(|e| panic!("schema/{v}/: {e}"));
            let bundle = dir.join("json/codex_app_server_protocol.schemas.json");
            let session = corpus.join(&v).join("real_session.jsonl");
            println!("cargo:rerun-if-changed={}", session.display());
            let turn_facts = dir.join("facts/turns.json");
            let models = dir.join("facts/models.json");
            let features = dir.join("facts/features.json");
            let config = dir.join("facts/config.json");
            let present = |p: &Path| p.is_file().then(|| p.display().to_string());
            let embeds = emit::Embeds {
                session: present(&session),
                turn_facts: present(&turn_facts),
                models: present(&models),
                features: present(&features),
                config: present(&config),
            };
            (v, bundle.display().to_string(), embeds, model)
        })
        .collect();
    let file = emit::emit_all(&models);
    let out = Path::new(&std::env::var("OUT_DIR").unwrap()).join("protocol.rs");
    std::fs::write(&out, file).unwrap();
}
