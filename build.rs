//! Generates the protocol types from `schema/`.
//!
//! Input: the vendored JSON Schema bundle plus the facts the bundle lacks (`schema/facts/`).
//! Output (`$OUT_DIR/protocol.rs`): serde types whose *serde shape* mirrors the real server's,
//! so that `serde_json::from_value` produces the real server's error text, and a `Track` impl per
//! type that walks a `Value` the way serde dispatches it and reports the keys serde drops.
//!
//! typify is not used: for this bundle it turns internally tagged enums into untagged ones and
//! loses declaration order (both change error text), so every type goes through one generator.

#[path = "build/emit.rs"]
mod emit;
#[path = "build/model.rs"]
mod model;

use std::path::Path;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let schema_dir = root.join("schema");
    println!("cargo:rerun-if-changed=schema");
    println!("cargo:rerun-if-changed=build");
    let model = model::Model::load(&schema_dir).unwrap_or_else(|e| panic!("schema/: {e}"));
    let file = emit::emit(&model);
    let out = Path::new(&std::env::var("OUT_DIR").unwrap()).join("protocol.rs");
    std::fs::write(&out, file).unwrap();
}
