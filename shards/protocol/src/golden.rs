//! Golden-byte helpers for the tests of Sluice's own binary formats (metadata records, the
//! controller RPC, `__consumer_offsets` records, producer snapshots, the quorum log): each crate
//! keeps its captured bytes as hex lines in `src/golden/` and checks its encoder against them.
//! Test support only; nothing on a request or disk path calls it.

/// `bytes` as lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of a hex line of a golden file (panics on a malformed line: the files are fixed).
pub fn unhex(line: &str) -> Vec<u8> {
    (0..line.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&line[i..i + 2], 16).expect("a golden file holds hex"))
        .collect()
}

/// Compares `actual` (one hex line per sample) with the golden file `name`, whose bytes were
/// captured once and must not change.
pub fn check_golden(name: &str, golden: &str, actual: &[String]) {
    let golden: Vec<&str> = golden.lines().collect();
    assert_eq!(actual, golden.as_slice(), "{name}: the bytes changed");
}
