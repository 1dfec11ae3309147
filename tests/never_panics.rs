//! The engine never panics on any bytes: a bounded mutation-fuzz run over the corpus lines.
//! (`cargo run --release --example fuzz -- --seconds N` runs the same fuzzer for longer.)

fn seeds() -> Vec<Vec<u8>> {
    let corpus = std::fs::read_to_string(format!(
        "{}/tests/corpus/{}/conformance.jsonl",
        env!("CARGO_MANIFEST_DIR"),
        codex_wire::newest().version
    ))
    .expect("corpus");
    let mut seeds = Vec::new();
    for (n, line) in corpus.lines().enumerate() {
        if n % 7 != 0 {
            continue;
        }
        let case: serde_json::Value = serde_json::from_str(line).unwrap();
        for l in case["lines"].as_array().into_iter().flatten() {
            seeds.push(l.as_str().unwrap_or_default().as_bytes().to_vec());
        }
    }
    assert!(seeds.len() > 100, "too few seeds: {}", seeds.len());
    seeds
}

#[test]
fn mutated_lines_never_panic() {
    let seeds = seeds();
    let fed = codex_wire::fuzz::run(0x5eed, 30_000, &seeds);
    assert_eq!(fed, 30_000);
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = codex_wire::fuzz::Rng::new(7);
    // Every version's generated code: each has its own types and tables.
    for p in codex_wire::versions() {
        let mut s = codex_wire::Session::with_protocol(p);
        for _ in 0..5_000 {
            let len = rng.below(200);
            let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            let v = s.feed(&bytes);
            assert!(v.error().is_none() || v.kind == codex_wire::Kind::Request);
        }
    }
    let mut s = codex_wire::Session::new();
    for _ in 0..20_000 {
        let len = rng.below(200);
        let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        let v = s.feed(&bytes);
        assert!(v.error().is_none() || v.kind == codex_wire::Kind::Request);
    }
}
