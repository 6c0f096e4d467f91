//! The shard's page-cache window end to end (`sluice.shard.page.cache.window.bytes`,
//! `shards/log/src/page_cache.rs`): a partition written well past the window keeps at most
//! the window's worth of its segment in the page cache, and every record, the dropped ones
//! too, reads back intact from the disk; after a restart, what a consumer reads back from the
//! segments loaded at start leaves the page cache again.

#![allow(clippy::unwrap_used)] // test code
mod support;

use std::os::fd::AsRawFd;

use sluice_protocol::record_batch::{validate_batch, RecordBatchBuilder};
use support::{fetch, produce, Broker};

const WINDOW_BYTES: u64 = 16 << 20;
const BATCHES: i64 = 96;
const RECORDS_PER_BATCH: i64 = 1000;

/// Bytes of `path` the page cache holds (`cachestat(2)`, Linux 6.5+).
fn cached_bytes(path: &std::path::Path) -> u64 {
    let file = std::fs::File::open(path).unwrap();
    let range = [0u64, 0]; // len 0: to the end of the file
    let mut stat = [0u64; 5];
    // SAFETY: cachestat reads `range` and writes `stat` (struct cachestat); flags must be 0.
    let rc = unsafe {
        libc::syscall(
            451,
            file.as_raw_fd(),
            range.as_ptr(),
            stat.as_mut_ptr(),
            0u32,
        )
    };
    assert_eq!(rc, 0, "cachestat: {}", std::io::Error::last_os_error());
    stat[0] * 4096
}

fn on_tmpfs(dir: &std::path::Path) -> bool {
    let path = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: statfs writes into the zeroed struct we own; `path` is a valid C string.
    unsafe {
        let mut stat: libc::statfs = std::mem::zeroed();
        libc::statfs(path.as_ptr(), &mut stat) == 0 && stat.f_type == libc::TMPFS_MAGIC
    }
}

/// Bytes the page cache holds of `path`, once it is at most `bound` or 10 s have passed (the
/// shard's file worker runs the drops queued by the last appends or reads).
fn cached_bytes_settled(path: &std::path::Path, bound: u64) -> u64 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut cached = cached_bytes(path);
    while cached > bound && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
        cached = cached_bytes(path);
    }
    cached
}

fn window_overrides() -> Vec<String> {
    vec![
        format!("sluice.shard.page.cache.window.bytes={WINDOW_BYTES}"),
        "sluice.shards=1".to_string(),
    ]
}

/// Writes `BATCHES` batches of ~1 MB to partition 0 of a new topic `windowed`; returns the
/// log end offset and the segment's path.
fn write_past_the_window(broker: &Broker) -> (i64, std::path::PathBuf) {
    let mut client = broker.client();
    support::create_topic(&mut client, "windowed", 1);
    let mut next = 0;
    for batch in 0..BATCHES {
        let mut builder = RecordBatchBuilder::new(support::now_ms());
        for record in 0..RECORDS_PER_BATCH {
            let value = format!("{batch:05}-{record:05}-").repeat(84);
            builder = builder.record(None, Some(value.as_bytes()));
        }
        assert_eq!(
            produce(&mut client, "windowed", 0, builder.build()),
            (0, next)
        );
        next += RECORDS_PER_BATCH;
    }
    let segment = broker
        .dir
        .join("data")
        .join("windowed-0")
        .join("00000000000000000000.log");
    let size = std::fs::metadata(&segment).unwrap().len();
    assert!(size > 4 * WINDOW_BYTES, "the partition holds {size} bytes");
    (next, segment)
}

/// Fetches every record of partition 0 of `windowed` (ending at `next`), checking each batch.
fn read_all_back(broker: &Broker, next: i64) {
    let mut client = broker.client();
    let mut offset = 0;
    while offset < next {
        let (error, high_watermark, records) = fetch(&mut client, "windowed", 0, offset);
        assert_eq!((error, high_watermark), (0, next));
        let mut rest = &records[..];
        // A response may end inside a batch (as Kafka's): that one is read again next time.
        while let Ok(header) = sluice_protocol::record_batch::parse_header(rest) {
            if rest.len() < header.size_bytes() {
                break;
            }
            let header = validate_batch(rest).unwrap();
            assert_eq!(header.base_offset, offset);
            assert_eq!(header.records_count as i64, RECORDS_PER_BATCH);
            offset += header.last_offset_delta as i64 + 1;
            rest = &rest[header.size_bytes()..];
        }
    }
    assert_eq!(offset, next);
}

/// The value of `series` (name and labels) in a scrape.
fn scraped(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("{series} missing from the scrape"))
}

#[test]
fn a_partition_written_past_the_window_leaves_only_the_window_cached() {
    let metrics_port = support::free_port();
    let mut overrides = window_overrides();
    overrides.push(format!("sluice.metrics.listener=127.0.0.1:{metrics_port}"));
    let overrides: Vec<&str> = overrides.iter().map(String::as_str).collect();
    let broker = Broker::start("page-cache-window", &overrides);
    if on_tmpfs(&broker.dir) {
        // tmpfs pages are the files themselves: nothing to drop. CI's checkout is on a disk.
        eprintln!("skipped: {} is on tmpfs", broker.dir.display());
        return;
    }
    let (next, segment) = write_past_the_window(&broker);
    let size = std::fs::metadata(&segment).unwrap().len();
    // The window, one appended range (up to 4 MiB) and one file step (1 MiB) still to drop,
    // once the shard's file worker has run the drops queued by the last appends.
    let bound = WINDOW_BYTES + (5 << 20) + 4096;
    let cached = cached_bytes_settled(&segment, bound);
    assert!(
        cached <= bound,
        "{cached} of {size} bytes cached with a {WINDOW_BYTES}-byte window"
    );
    // An operator sees the same in the shard's metrics: the window holds at most its bound,
    // and what was appended past it was written back and dropped.
    let text = support::scrape(metrics_port);
    let shard = |name: &str| scraped(&text, &format!("{name}{{shard=\"0\"}}"));
    let held = shard("sluice_page_cache_window_held_bytes");
    assert!(
        held > 0.0 && held <= WINDOW_BYTES as f64,
        "window holds {held}"
    );
    assert!(shard("sluice_page_cache_writeback_calls_total") > 0.0);
    assert!(shard("sluice_page_cache_drop_calls_total") > 0.0);
    let dropped = shard("sluice_page_cache_dropped_bytes_total");
    assert!(
        dropped >= (size - WINDOW_BYTES - (5 << 20)) as f64,
        "{dropped} of {size} bytes dropped"
    );
    // Every record reads back, in order and intact, most of them from the disk.
    read_all_back(&broker, next);
}

#[test]
fn a_segment_loaded_at_start_and_read_back_leaves_the_page_cache_again() {
    let overrides = window_overrides();
    let overrides: Vec<&str> = overrides.iter().map(String::as_str).collect();
    let dir = support::temp_dir("page-cache-read-back");
    let port = support::free_port();
    let broker = Broker::start_in(&dir, port, &overrides);
    if on_tmpfs(&broker.dir) {
        eprintln!("skipped: {} is on tmpfs", broker.dir.display());
        return;
    }
    let (next, segment) = write_past_the_window(&broker);
    let size = std::fs::metadata(&segment).unwrap().len();
    assert!(broker.stop().success());
    // Nothing of the segment cached before the restart, as after a host's reboot: every byte
    // the consumer below reads comes back from the disk.
    {
        let file = std::fs::File::open(&segment).unwrap();
        file.sync_all().unwrap();
        // SAFETY: fadvise on a descriptor we own; it only drops clean cached pages.
        let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        assert_eq!(rc, 0);
    }
    let broker = Broker::start_in(&dir, port, &overrides);
    let loaded = cached_bytes(&segment);
    read_all_back(&broker, next);
    // The read-back window (a quarter of the window), the 2 MiB block each end of it leaves
    // for the next drop, and the kernel's read-ahead past the last read (up to a 2 MiB folio).
    // Before segments loaded at start had marks, all `size` bytes stayed cached.
    let bound = loaded + WINDOW_BYTES / 4 + (6 << 20);
    let cached = cached_bytes_settled(&segment, bound);
    assert!(
        cached <= bound,
        "{cached} of {size} bytes cached after reading them back ({loaded} cached at the start)"
    );
}
