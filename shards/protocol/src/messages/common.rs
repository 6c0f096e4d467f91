//! Pieces shared by several message modules: the flexible-version tagged-field
//! terminators and the structures Kafka's schemas define identically in more
//! than one API (re-exported from those APIs' modules).

use crate::codec::{Decoder, Encoder, TaggedFields};
use crate::error::Result;

/// Writes the empty tagged-field section that ends a structure in flexible
/// versions.
pub(crate) fn put_end(e: &mut Encoder, flex: bool) {
    if flex {
        e.put_empty_tagged_fields();
    }
}

/// Reads (and skips) the tagged-field section that ends a structure in
/// flexible versions.
pub(crate) fn read_end(d: &mut Decoder, flex: bool) -> Result<()> {
    if flex {
        d.tagged_fields()?;
    }
    Ok(())
}

/// Leader id and epoch; (-1, -1) when unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaderIdAndEpoch {
    /// Leader broker id.
    pub leader_id: i32,
    /// Leader epoch.
    pub leader_epoch: i32,
}

impl Default for LeaderIdAndEpoch {
    fn default() -> Self {
        LeaderIdAndEpoch {
            leader_id: -1,
            leader_epoch: -1,
        }
    }
}

/// Reads a `LeaderIdAndEpoch` tagged-field value (always flexible), including
/// its own tagged-field section.
pub(crate) fn decode_leader_id_and_epoch(d: &mut Decoder) -> Result<LeaderIdAndEpoch> {
    let l = LeaderIdAndEpoch {
        leader_id: d.i32()?,
        leader_epoch: d.i32()?,
    };
    d.tagged_fields()?;
    Ok(l)
}

/// Writes a `LeaderIdAndEpoch` tagged-field value (always flexible).
pub(crate) fn encode_leader_id_and_epoch(e: &mut Encoder, l: &LeaderIdAndEpoch) {
    e.put_i32(l.leader_id);
    e.put_i32(l.leader_epoch);
    e.put_empty_tagged_fields();
}

/// A broker endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodeEndpoint {
    /// Broker id.
    pub node_id: i32,
    /// Host.
    pub host: String,
    /// Port.
    pub port: i32,
    /// Rack.
    pub rack: Option<String>,
}

/// Reads one `NodeEndpoint` (only ever in flexible versions' tagged fields).
fn decode_node_endpoint(d: &mut Decoder) -> Result<NodeEndpoint> {
    let n = NodeEndpoint {
        node_id: d.i32()?,
        host: d.string(true)?,
        port: d.i32()?,
        rack: d.nullable_string(true)?,
    };
    d.tagged_fields()?;
    Ok(n)
}

/// Writes one `NodeEndpoint` (only ever in flexible versions' tagged fields).
fn encode_node_endpoint(e: &mut Encoder, n: &NodeEndpoint) {
    e.put_i32(n.node_id);
    e.put_string(&n.host, true);
    e.put_i32(n.port);
    e.put_nullable_string(n.rack.as_deref(), true);
    e.put_empty_tagged_fields();
}

/// Reads the top-level tagged fields of a Produce or Fetch response, whose
/// only known tag is 0, `NodeEndpoints` (when `has_endpoints`: Produce v10+,
/// Fetch v16+); other tags are skipped.
pub(crate) fn read_node_endpoints_tags(
    d: &mut Decoder,
    has_endpoints: bool,
) -> Result<Vec<NodeEndpoint>> {
    let mut endpoints = Vec::new();
    d.read_tagged_fields(|tag, f| {
        if tag == 0 && has_endpoints {
            endpoints = f.array(true, decode_node_endpoint)?;
        }
        Ok(())
    })?;
    Ok(endpoints)
}

/// Writes the top-level tagged fields of a Produce or Fetch response: tag 0,
/// `NodeEndpoints`, when `has_endpoints` and there are any.
pub(crate) fn put_node_endpoints_tags(
    e: &mut Encoder,
    endpoints: &[NodeEndpoint],
    has_endpoints: bool,
) {
    let mut tags = TaggedFields::new();
    if has_endpoints && !endpoints.is_empty() {
        tags.add(0, |e| e.put_array(endpoints, true, encode_node_endpoint));
    }
    e.put_tagged_fields(tags);
}
