//! Seeded mutation test: hostile variants of valid frames must decode to `Ok`
//! or `Err`, never panic, and never trigger a large allocation.
//!
//! Replay a failure with `SLUICE_SEED=<seed> cargo test -p sluice-protocol --test mutation`.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use bytes::{Bytes, BytesMut};
use common::{all_versions, request, response};
use sluice_protocol::frame::{split_frame, DEFAULT_MAX_REQUEST_SIZE};
use sluice_protocol::{
    decode_request, decode_request_owned, decode_response, encode_request, encode_response,
    validate_batch, RecordBatches, RequestBody, RequestHeader,
};

/// Records the largest single allocation made while `TRACKING` is set.
struct CountingAlloc;

static TRACKING: AtomicBool = AtomicBool::new(false);
static MAX_ALLOC: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        System.alloc_zeroed(layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        System.realloc(ptr, layout, new_size)
    }
}

fn note(size: usize) {
    if TRACKING.load(Ordering::Relaxed) {
        MAX_ALLOC.fetch_max(size, Ordering::Relaxed);
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// Allowed single allocation beyond the frame's own length.
const ALLOC_SLACK: usize = 64 * 1024;
const DEFAULT_SEED: u64 = 0x5eed_0051_1ce0_0001;

/// xorshift64* — tiny, seedable, good enough to drive mutations.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Values that stress length handling, spliced over or into a frame.
const SPLICES: &[&[u8]] = &[
    &[0x7f, 0xff, 0xff, 0xff],
    &[0xff, 0xff, 0xff, 0xff],
    &[0x80, 0x00, 0x00, 0x00],
    &[0x7f, 0xff],
    &[0xff, 0xff],
    &[0xff, 0xfe],
    &[0xff, 0xff, 0xff, 0xff, 0x0f],
    &[0xff, 0xff, 0xff, 0xff, 0x7f],
    &[0x80, 0x80, 0x80, 0x80, 0x80, 0x80],
    &[0xfe, 0xff, 0xff, 0xff, 0x07],
    &[0x00],
    &[0x01],
];

fn mutate(rng: &mut Rng, base: &[u8]) -> Vec<u8> {
    let mut m = base.to_vec();
    match rng.below(6) {
        0 => {
            for _ in 0..=rng.below(4) {
                let bit = rng.below(m.len() * 8);
                if let Some(b) = m.get_mut(bit / 8) {
                    *b ^= 1 << (bit % 8);
                }
            }
        }
        1 => {
            for _ in 0..=rng.below(4) {
                let i = rng.below(m.len());
                if let Some(b) = m.get_mut(i) {
                    *b = rng.next() as u8;
                }
            }
        }
        2 | 3 => {
            let splice = SPLICES[rng.below(SPLICES.len())];
            let at = rng.below(m.len() + 1);
            if rng.below(2) == 0 {
                m.splice(at..(at + splice.len()).min(m.len()), splice.iter().copied());
            } else {
                m.splice(at..at, splice.iter().copied());
            }
        }
        4 => {
            // Keep the header (first 8 bytes), replace the rest with garbage.
            m.truncate(8.min(m.len()));
            for _ in 0..rng.below(300) {
                m.push(rng.next() as u8);
            }
        }
        _ => {
            m = (0..rng.below(512)).map(|_| rng.next() as u8).collect();
        }
    }
    if rng.below(4) == 0 {
        m.truncate(rng.below(m.len() + 1));
    }
    m
}

struct Corpus {
    requests: Vec<Vec<u8>>,
    responses: Vec<(i16, i16, Vec<u8>)>,
}

fn corpus() -> Corpus {
    let mut requests = Vec::new();
    let mut responses = Vec::new();
    for (key, v) in all_versions() {
        let header = RequestHeader {
            api_key: key.as_i16(),
            api_version: v,
            correlation_id: 11,
            client_id: Some("mutant".into()),
        };
        requests.push(encode_request(&header, &request(key, v))[4..].to_vec());
        let resp = encode_response(11, key.as_i16(), v, &response(key, v));
        responses.push((key.as_i16(), v, resp[4..].to_vec()));
    }
    Corpus {
        requests,
        responses,
    }
}

static DECODED_OK: AtomicUsize = AtomicUsize::new(0);

/// Decodes one request mutant, also walking any record batches it carries.
fn exercise_request(frame: Bytes) {
    // The broker decodes the frames it owns: that decode must fail exactly as the shared one.
    let owned = decode_request_owned(BytesMut::from(&frame[..]));
    let decoded = decode_request(frame);
    assert_eq!(owned.err(), decoded.as_ref().err().cloned());
    if decoded.is_ok() {
        DECODED_OK.fetch_add(1, Ordering::Relaxed);
    }
    if let Ok((_, RequestBody::Produce(p))) = decoded {
        for t in &p.topic_data {
            for part in &t.partition_data {
                let records = Bytes::copy_from_slice(part.records.as_deref().unwrap_or_default());
                for batch in RecordBatches::new(records) {
                    let Ok((_, b)) = batch else { break };
                    let _ = validate_batch(&b);
                }
            }
        }
    }
}

/// Runs `f` on `input` with allocation tracking; panics (with replay info) on
/// a panic inside the decoder or an oversized allocation.
fn check(seed: u64, case: usize, input: &[u8], f: impl FnOnce(Bytes)) {
    let frame = Bytes::copy_from_slice(input);
    MAX_ALLOC.store(0, Ordering::Relaxed);
    TRACKING.store(true, Ordering::Relaxed);
    let outcome = catch_unwind(AssertUnwindSafe(|| f(frame)));
    TRACKING.store(false, Ordering::Relaxed);
    let biggest = MAX_ALLOC.load(Ordering::Relaxed);
    let replay = format!("SLUICE_SEED={seed} case {case}, input {input:02x?}");
    assert!(outcome.is_ok(), "decoder panicked; replay with {replay}");
    assert!(
        biggest <= ALLOC_SLACK + input.len(),
        "allocation of {biggest} bytes for a {}-byte frame; replay with {replay}",
        input.len()
    );
}

/// The bound is only meaningful if the tracker sees allocations.
fn tracker_works() {
    MAX_ALLOC.store(0, Ordering::Relaxed);
    TRACKING.store(true, Ordering::Relaxed);
    let big = std::hint::black_box(vec![0u8; 1 << 20]);
    TRACKING.store(false, Ordering::Relaxed);
    drop(big);
    assert!(MAX_ALLOC.load(Ordering::Relaxed) >= 1 << 20);
}

#[test]
fn hostile_frames_never_panic_or_over_allocate() {
    let seed = std::env::var("SLUICE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SEED);
    eprintln!("mutation seed: {seed} (override with SLUICE_SEED)");
    tracker_works();
    let corpus = corpus();
    let mut case = 0usize;

    // Unmutated frames must decode.
    for f in &corpus.requests {
        decode_request(Bytes::copy_from_slice(f)).expect("valid corpus frame");
    }

    // Every truncation of every request frame.
    for f in &corpus.requests {
        for len in 0..f.len() {
            check(seed, case, &f[..len], exercise_request);
            case += 1;
        }
    }
    let truncations = case;

    // Random mutants of requests, then of responses.
    let mut rng = Rng::new(seed);
    for _ in 0..100_000 {
        let base = &corpus.requests[rng.below(corpus.requests.len())];
        let m = mutate(&mut rng, base);
        check(seed, case, &m, exercise_request);
        case += 1;
    }
    for _ in 0..20_000 {
        let (key, v, base) = &corpus.responses[rng.below(corpus.responses.len())];
        let m = mutate(&mut rng, base);
        check(seed, case, &m, |b| {
            let _ = decode_response(b, *key, *v);
        });
        case += 1;
    }

    // Size prefixes: split_frame must reject hostile sizes without allocating.
    for _ in 0..5_000 {
        let base = &corpus.requests[rng.below(corpus.requests.len())];
        let mut prefixed = (base.len() as i32).to_be_bytes().to_vec();
        prefixed.extend_from_slice(base);
        let m = mutate(&mut rng, &prefixed);
        check(seed, case, &m, |b| {
            let mut buf = BytesMut::from(&b[..]);
            while let Ok(Some(frame)) = split_frame(&mut buf, DEFAULT_MAX_REQUEST_SIZE) {
                exercise_request(frame);
            }
        });
        case += 1;
    }
    eprintln!(
        "mutation cases: {case} ({truncations} truncations, {} request mutants still decoded)",
        DECODED_OK.load(Ordering::Relaxed)
    );
    assert!(case >= 100_000);
}
