//! The floor of `cargo bench --bench validate_process`: a whole process that reads FILE and
//! parses each line into `serde::de::IgnoredAny` (the JSON scanned, nothing built, nothing
//! written), on THREADS threads (default 1), each taking its own contiguous part of the file:
//! what any checker run as a process pays at least. Read as the floor of `cargo bench --bench
//! validate` reads (a `BufReader`, line by line). Prints the lines that parsed.
//! `cargo run --release --example validate_floor FILE [THREADS]`.

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom};

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: validate_floor FILE [THREADS]");
    let threads: u64 = args
        .next()
        .map_or(1, |t| t.parse().expect("THREADS"))
        .max(1);
    let len = std::fs::metadata(&path).expect("FILE").len();
    // Part k starts at the first line beginning at or after k * len / threads: the parts share
    // nothing, as two cores given independent work.
    let part = |k: u64| -> u64 {
        let (from, to) = (k * len / threads, (k + 1) * len / threads);
        let mut r = BufReader::new(File::open(&path).expect("FILE"));
        let mut at = from;
        let mut buf = Vec::new();
        if from > 0 {
            // Back one byte: a line starting exactly at `from` is this part's.
            r.seek(SeekFrom::Start(from - 1)).expect("seek");
            at = from - 1 + r.read_until(b'\n', &mut buf).expect("read") as u64;
        }
        let mut ok = 0;
        while at < to {
            buf.clear();
            let n = r.read_until(b'\n', &mut buf).expect("read");
            if n == 0 {
                break;
            }
            at += n as u64;
            ok += serde_json::from_slice::<serde::de::IgnoredAny>(&buf).is_ok() as u64;
        }
        ok
    };
    let part = &part;
    let ok: u64 = std::thread::scope(|s| {
        let others: Vec<_> = (1..threads).map(|k| s.spawn(move || part(k))).collect();
        part(0) + others.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
    });
    println!("{ok}");
}
