//! Timestamp lookups (ListOffsets by time and `MAX_TIMESTAMP`): segments' largest timestamps,
//! then the time index, the offset index and a short scan of the `.log`.

use std::rc::Rc;

use super::read::ReadPlan;
use super::{readable_size, Log, LogState};
use crate::error::LogError;
use crate::segment::LogSegment;

impl Log {
    /// Kafka's `fetchOffsetByTimestamp` for a real timestamp, at batch
    /// granularity: the first readable batch (at or after the log start)
    /// whose max timestamp is at least `timestamp`, as (its base offset, but
    /// not below the log start offset; its max timestamp). Goes through the
    /// segments' largest timestamps, then the time index, the offset index
    /// and a short scan of the `.log`.
    pub async fn offset_for_timestamp(
        &self,
        timestamp: i64,
    ) -> Result<Option<(i64, i64)>, LogError> {
        let (log_start, plans) = {
            let st = self.state.borrow();
            let plans: Vec<ReadPlan> = self
                .segments_from_log_start(&st)
                .into_iter()
                .filter(|s| s.time_index.borrow().max_timestamp >= timestamp)
                .map(|s| {
                    let from = s.base_offset + i64::from(s.time_index.borrow().lookup(timestamp));
                    self.plan_in(&st, &s, from.max(st.log_start_offset))
                })
                .collect();
            (st.log_start_offset, plans)
        };
        for plan in plans {
            let file = plan.segment.file().await?;
            let found = self
                .locate(&file, &plan.segment.path, &plan, 0, |h| {
                    h.max_timestamp >= timestamp && h.last_offset() >= log_start
                })
                .await?;
            if let Some(found) = found {
                let h = found.header;
                return Ok(Some((h.base_offset.max(log_start), h.max_timestamp)));
            }
        }
        Ok(None)
    }

    /// Kafka's `MAX_TIMESTAMP` lookup, at batch granularity: the largest
    /// timestamp in the log and the base offset (not below the log start) of
    /// the first readable batch holding it; `None` if no batch has a
    /// timestamp.
    pub async fn max_timestamp_offset(&self) -> Result<Option<(i64, i64)>, LogError> {
        let (log_start, timestamp, last_offset, plan) = {
            let st = self.state.borrow();
            let mut best: Option<Rc<LogSegment>> = None;
            for s in self.segments_from_log_start(&st) {
                let max = s.time_index.borrow().max_timestamp;
                let better = match &best {
                    None => true,
                    Some(b) => max > b.time_index.borrow().max_timestamp,
                };
                if better {
                    best = Some(s);
                }
            }
            let Some(seg) = best else { return Ok(None) };
            let (timestamp, relative) = {
                let t = seg.time_index.borrow();
                (t.max_timestamp, t.offset_of_max_timestamp)
            };
            if timestamp < 0 {
                return Ok(None);
            }
            let last_offset = seg.base_offset + i64::from(relative);
            let plan = self.plan_in(&st, &seg, last_offset);
            (st.log_start_offset, timestamp, last_offset, plan)
        };
        let file = plan.segment.file().await?;
        let found = self
            .locate(&file, &plan.segment.path, &plan, 0, |h| {
                h.last_offset() >= last_offset
            })
            .await?;
        Ok(found.map(|f| (f.header.base_offset.max(log_start), timestamp)))
    }

    /// The segments holding offsets from the log start on, oldest first.
    fn segments_from_log_start(&self, st: &LogState) -> Vec<Rc<LogSegment>> {
        let from = st
            .segments
            .range(..=st.log_start_offset)
            .next_back()
            .map_or(st.log_start_offset, |(&b, _)| b);
        st.segments.range(from..).map(|(_, s)| s.clone()).collect()
    }

    /// Read plan within `segment` from the index position for `offset`.
    fn plan_in(&self, st: &LogState, segment: &Rc<LogSegment>, offset: i64) -> ReadPlan {
        ReadPlan {
            scan_from: segment.index_lookup(offset),
            readable_size: readable_size(st, segment),
            segment: segment.clone(),
            next_segment_base: None,
        }
    }
}
