//! DescribeLogDirs (key 35): this broker's log directory (`log.dirs`, one directory in Sluice)
//! with the partitions whose logs it holds, as Kafka's `ReplicaManager.describeLogDirs`: each
//! partition's size is its log's segment bytes and its offset lag `max(HW - LEO, 0)`, read on
//! the shard that owns it; the volume's total and usable bytes (v4+) come from statvfs, as
//! Java's `FileStore`. A log that failed takes the directory offline (KAFKA_STORAGE_ERROR),
//! as Kafka's log-dir failure handling does; no topics are listed then.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::describe_log_dirs::{
    self as msg, DescribeLogDirsPartition, DescribeLogDirsRequest, DescribeLogDirsResponse,
    DescribeLogDirsResult, DescribeLogDirsTopic,
};
use sluice_replica::TopicIdPartition;
use sluice_shard::{MetadataImage, ShardId};
use tracing::warn;

use crate::context::ShardContext;
use crate::router;

/// Answers DescribeLogDirs.
pub async fn handle(
    ctx: &ShardContext,
    _version: i16,
    request: DescribeLogDirsRequest,
) -> DescribeLogDirsResponse {
    let image = ctx.image();
    let items = hosted(&image, ctx.mesh.shard_count(), request.topics.as_deref());
    let results = router::describe_log_dirs(ctx, items).await;
    let log_dir = ctx.config.log_dirs.display().to_string();
    let mut offline = false;
    let mut topics: BTreeMap<String, Vec<DescribeLogDirsPartition>> = BTreeMap::new();
    for result in results {
        match result {
            Ok(info) => topics
                .entry(info.topic)
                .or_default()
                .push(DescribeLogDirsPartition {
                    partition_index: info.partition,
                    partition_size: i64::try_from(info.size_bytes).unwrap_or(i64::MAX),
                    offset_lag: info.offset_lag,
                    is_future_key: false,
                }),
            Err(error) if error.error_code() == ErrorCode::KAFKA_STORAGE_ERROR => offline = true,
            // Opened or dropped while the image changed: not a log of this directory now.
            Err(_) => {}
        }
    }
    let result = if offline {
        DescribeLogDirsResult {
            error_code: ErrorCode::KAFKA_STORAGE_ERROR.0,
            log_dir,
            ..DescribeLogDirsResult::default()
        }
    } else {
        match volume_bytes(&ctx.config.log_dirs) {
            Ok((total_bytes, usable_bytes)) => DescribeLogDirsResult {
                error_code: ErrorCode::NONE.0,
                log_dir,
                topics: topics
                    .into_iter()
                    .map(|(name, mut partitions)| {
                        partitions.sort_unstable_by_key(|p| p.partition_index);
                        DescribeLogDirsTopic { name, partitions }
                    })
                    .collect(),
                total_bytes,
                usable_bytes,
                is_cordoned: false,
            },
            Err(error) => {
                warn!(log_dir, %error, "cannot read the log directory's volume size");
                DescribeLogDirsResult {
                    error_code: ErrorCode::UNKNOWN_SERVER_ERROR.0,
                    log_dir,
                    ..DescribeLogDirsResult::default()
                }
            }
        }
    };
    DescribeLogDirsResponse {
        throttle_time_ms: 0,
        error_code: ErrorCode::NONE.0,
        results: vec![result],
    }
}

/// The partitions hosted on this broker that the request names (every one for `None`), each
/// with its owner shard. Named partitions that are not hosted here, or do not exist, are left
/// out: Kafka lists only the logs it has.
fn hosted(
    image: &MetadataImage,
    shard_count: usize,
    topics: Option<&[msg::DescribableLogDirTopic]>,
) -> Vec<(ShardId, TopicIdPartition)> {
    let Some(topics) = topics else {
        let mut all: Vec<(ShardId, TopicIdPartition)> = (0..shard_count)
            .filter_map(|i| u16::try_from(i).ok().map(ShardId))
            .flat_map(|shard| {
                image
                    .shard_table
                    .partitions_of(shard)
                    .map(move |tp| (shard, tp))
            })
            .collect();
        all.sort_unstable();
        return all;
    };
    let wanted: BTreeSet<TopicIdPartition> = topics
        .iter()
        .filter_map(|t| image.topic(&t.topic).map(|topic| (topic, t)))
        .flat_map(|(topic, t)| {
            t.partitions.iter().map(|p| TopicIdPartition {
                topic_id: topic.topic_id,
                partition: *p,
            })
        })
        .collect();
    wanted
        .into_iter()
        .filter_map(|tp| image.shard_table.shard_of(&tp).map(|shard| (shard, tp)))
        .collect()
}

/// The total and usable bytes of the volume holding `dir`, as Java's `FileStore` reports them
/// (`f_blocks` and `f_bavail` times `f_frsize`); sizes beyond `i64` are `i64::MAX`, as Kafka
/// adjusts them for large file systems.
fn volume_bytes(dir: &Path) -> std::io::Result<(i64, i64)> {
    let path = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "NUL in path"))?;
    // SAFETY: `statvfs` is plain old data, valid when zeroed; the call writes it through a
    // pointer to this local and reads the NUL-terminated path, which outlives the call.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let frsize = st.f_frsize;
    let bytes = |blocks: u64| i64::try_from(blocks.saturating_mul(frsize)).unwrap_or(i64::MAX);
    Ok((bytes(st.f_blocks), bytes(st.f_bavail)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leadership::tests::cluster_image;

    #[test]
    fn only_partitions_hosted_here_are_described() {
        let image = cluster_image();
        let all = hosted(&image, 2, None);
        assert!(!all.is_empty());
        for (shard, tp) in &all {
            assert_eq!(image.shard_table.shard_of(tp), Some(*shard));
        }
        let topic = image.topic("t").map(|t| t.topic_id);
        let named = hosted(
            &image,
            2,
            Some(&[
                msg::DescribableLogDirTopic {
                    topic: "t".into(),
                    partitions: vec![0, 0, 1, 2, 3, 99, -1],
                },
                msg::DescribableLogDirTopic {
                    topic: "missing".into(),
                    partitions: vec![0],
                },
            ]),
        );
        let expected: Vec<(ShardId, TopicIdPartition)> = all
            .iter()
            .copied()
            .filter(|(_, tp)| Some(tp.topic_id) == topic && (0..=3).contains(&tp.partition))
            .collect();
        assert_eq!(named, expected);
    }

    #[test]
    fn the_volume_of_a_directory_is_measured() {
        let dir = std::env::temp_dir();
        let (total, usable) = volume_bytes(&dir).unwrap();
        assert!(
            total > 0 && usable >= 0 && usable <= total,
            "{total} {usable}"
        );
        assert!(volume_bytes(Path::new("/no/such/dir/anywhere")).is_err());
    }
}
