//! The channels between executors, typed by receiver. A broker process builds three glommio
//! meshes of bounded channels before its executors start:
//!
//! - data shard ↔ data shard (a full mesh), carrying [`ShardMessage`];
//! - controller executor → data shards (a partial mesh, the controller the only producer),
//!   carrying [`ShardMessage`];
//! - data shards → controller executor (a partial mesh, the controller the only consumer),
//!   carrying [`ControllerMessage`].
//!
//! So a data shard holds a [`ShardMesh`] (`send_to_shard`, `send_to_controller`), the controller
//! executor holds [`ShardSenders`] only, and neither can put a message on a channel whose
//! receiver does not serve it: no receiver has a "wrong kind" arm. Each message is still stamped
//! with its target and origin, and the receiver asserts the target (a wrongly wired mesh is a
//! bug, not an input).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use glommio::channels::channel_mesh::{Full, MeshBuilder, Partial, Receivers, Role, Senders};
use glommio::channels::shared_channel::ConnectedReceiver;

use crate::{ControllerMessage, ShardId, ShardMessage};

/// A message stamped with its sender and its target; the receiver asserts the target.
pub struct Envelope<M> {
    /// The executor that must handle it.
    pub target: ShardId,
    /// The executor that sent it.
    pub origin: ShardId,
    /// The work.
    pub message: M,
}

/// What a data shard receives.
pub type ShardEnvelope = Envelope<ShardMessage>;
/// What the controller executor receives.
pub type ControllerEnvelope = Envelope<ControllerMessage>;

/// Why a message could not be sent, or a mesh not joined.
#[derive(Debug, thiserror::Error)]
pub enum MeshError {
    /// The target's channel is closed (it is shutting down).
    #[error("{0} is not reachable")]
    Unreachable(ShardId),
    /// No such data shard in the mesh.
    #[error("{0} is not in the mesh")]
    NoSuchShard(ShardId),
    /// The mesh could not be joined (another executor failed to start).
    #[error("cannot join the {0} mesh")]
    Join(&'static str),
}

/// The meshes of one broker process, before any executor joins them. Cloned into every
/// executor; each joins with `join_shard` (data shard `i`, started `i`-th) or
/// `join_controller` (the controller executor, started after the last data shard: glommio
/// orders a mesh's peers by executor id, so peer `i` is shard `i`).
#[derive(Clone)]
pub struct MeshBuilders {
    shard_count: usize,
    /// Shared by every shard: the round-robin cursor of new connections.
    next_connection: Arc<AtomicUsize>,
    shards: MeshBuilder<ShardEnvelope, Full>,
    from_controller: MeshBuilder<ShardEnvelope, Partial>,
    to_controller: MeshBuilder<ControllerEnvelope, Partial>,
}

impl MeshBuilders {
    /// The meshes of `shard_count` data shards and the controller executor, each channel
    /// holding up to `capacity` messages (a full channel makes its sender wait).
    pub fn new(shard_count: usize, capacity: usize) -> MeshBuilders {
        MeshBuilders {
            shard_count,
            next_connection: Arc::new(AtomicUsize::new(0)),
            shards: MeshBuilder::full(shard_count, capacity),
            from_controller: MeshBuilder::partial(shard_count + 1, capacity),
            to_controller: MeshBuilder::partial(shard_count + 1, capacity),
        }
    }

    /// Joins as data shard `shard_id`. Every executor joins the meshes in the same order
    /// (shards, from the controller, to the controller), so no join waits on another.
    pub async fn join_shard(
        self,
        shard_id: ShardId,
    ) -> Result<(ShardMesh, ShardReceivers), MeshError> {
        let (shard_senders, peers) = self
            .shards
            .join()
            .await
            .map_err(|_| MeshError::Join("shard"))?;
        let (_, from_controller) = self
            .from_controller
            .join(Role::Consumer)
            .await
            .map_err(|_| MeshError::Join("controller-to-shard"))?;
        let (to_controller, _) = self
            .to_controller
            .join(Role::Producer)
            .await
            .map_err(|_| MeshError::Join("shard-to-controller"))?;
        assert_eq!(
            shard_senders.peer_id(),
            shard_id.index(),
            "mesh peer index is the shard id"
        );
        assert_eq!(to_controller.nr_consumers(), 1, "one controller executor");
        let mesh = ShardMesh {
            shards: ShardSenders {
                origin: shard_id,
                shard_count: self.shard_count,
                senders: shard_senders,
            },
            controller: ShardId(self.shard_count as u16),
            to_controller,
            next_connection: self.next_connection,
        };
        Ok((
            mesh,
            ShardReceivers {
                peers,
                from_controller,
            },
        ))
    }

    /// Joins as the controller executor.
    pub async fn join_controller(self) -> Result<(ShardSenders, ControllerReceivers), MeshError> {
        let (to_shards, _) = self
            .from_controller
            .join(Role::Producer)
            .await
            .map_err(|_| MeshError::Join("controller-to-shard"))?;
        let (_, from_shards) = self
            .to_controller
            .join(Role::Consumer)
            .await
            .map_err(|_| MeshError::Join("shard-to-controller"))?;
        assert_eq!(
            to_shards.nr_consumers(),
            self.shard_count,
            "the controller reaches every data shard"
        );
        let senders = ShardSenders {
            origin: ShardId(self.shard_count as u16),
            shard_count: self.shard_count,
            senders: to_shards,
        };
        Ok((
            senders,
            ControllerReceivers {
                controller: ShardId(self.shard_count as u16),
                receivers: from_shards,
            },
        ))
    }
}

/// An executor's sending side to the data shards; index `i` is shard `i`.
pub struct ShardSenders {
    origin: ShardId,
    shard_count: usize,
    senders: Senders<ShardEnvelope>,
}

impl ShardSenders {
    /// The executor sending (the controller's executor is `ShardId(shard_count)`).
    pub fn origin(&self) -> ShardId {
        self.origin
    }

    /// Number of data shards.
    pub fn shard_count(&self) -> usize {
        self.shard_count
    }

    /// Sends `message` to data shard `target`, waiting while its channel is full
    /// (backpressure).
    pub async fn send(&self, target: ShardId, message: ShardMessage) -> Result<(), MeshError> {
        assert_ne!(
            target, self.origin,
            "local work is done in place, never sent to oneself"
        );
        if target.index() >= self.shard_count {
            return Err(MeshError::NoSuchShard(target));
        }
        let envelope = Envelope {
            target,
            origin: self.origin,
            message,
        };
        self.senders
            .send_to(target.index(), envelope)
            .await
            .map_err(|_| MeshError::Unreachable(target))
    }

    /// Closes this sending side (shutdown).
    pub fn close(&self) {
        self.senders.close();
    }
}

/// A data shard's sending side: to the other data shards and to the controller executor.
///
/// Each receiver's messages go only to it:
///
/// ```no_run
/// # use sluice_shard::{ControllerMessage, CreateTopicsWork, ShardMesh};
/// # async fn f(mesh: &ShardMesh, work: CreateTopicsWork) {
/// let _ = mesh.send_to_controller(ControllerMessage::CreateTopics(work)).await;
/// # }
/// ```
///
/// and sending a controller message to a data shard does not compile:
///
/// ```compile_fail
/// # use sluice_shard::{ControllerMessage, CreateTopicsWork, ShardId, ShardMesh};
/// # async fn f(mesh: &ShardMesh, work: CreateTopicsWork) {
/// let _ = mesh.send_to_shard(ShardId(0), ControllerMessage::CreateTopics(work)).await;
/// # }
/// ```
pub struct ShardMesh {
    shards: ShardSenders,
    controller: ShardId,
    to_controller: Senders<ControllerEnvelope>,
    next_connection: Arc<AtomicUsize>,
}

impl ShardMesh {
    /// This shard.
    pub fn self_id(&self) -> ShardId {
        self.shards.origin
    }

    /// Number of data shards.
    pub fn shard_count(&self) -> usize {
        self.shards.shard_count
    }

    /// The shard that serves the next accepted connection, whichever shard's listener the
    /// kernel gave it to: the shards in turn, as Kafka's `Acceptor` hands new connections to
    /// its network processors round-robin. (SO_REUSEPORT alone spreads connections by a hash
    /// of their addresses: two consumers land on one shard half the time, and that shard then
    /// carries both while the other idles.)
    pub fn next_connection_shard(&self) -> ShardId {
        let turn = self.next_connection.fetch_add(1, Ordering::Relaxed);
        ShardId((turn % self.shards.shard_count.max(1)) as u16)
    }

    /// Sends `message` to data shard `target` (never this one), waiting while its channel is
    /// full (backpressure).
    pub async fn send_to_shard(
        &self,
        target: ShardId,
        message: ShardMessage,
    ) -> Result<(), MeshError> {
        self.shards.send(target, message).await
    }

    /// Sends `message` to the controller executor, waiting while the channel is full.
    pub async fn send_to_controller(&self, message: ControllerMessage) -> Result<(), MeshError> {
        let envelope = Envelope {
            target: self.controller,
            origin: self.shards.origin,
            message,
        };
        self.to_controller
            .send_to(0, envelope)
            .await
            .map_err(|_| MeshError::Unreachable(self.controller))
    }

    /// Closes this shard's sending sides (shutdown).
    pub fn close(&self) {
        self.shards.close();
        self.to_controller.close();
    }
}

/// A data shard's receiving side: from every other data shard and from the controller.
pub struct ShardReceivers {
    peers: Receivers<ShardEnvelope>,
    from_controller: Receivers<ShardEnvelope>,
}

impl ShardReceivers {
    /// One stream per sender; each ends when its sender closes.
    pub fn streams(&mut self) -> Vec<ConnectedReceiver<ShardEnvelope>> {
        let peers = self.peers.streams().into_iter();
        let controller = self.from_controller.streams().into_iter();
        peers.chain(controller).map(|(_, stream)| stream).collect()
    }
}

/// The controller executor's receiving side: one stream per data shard.
pub struct ControllerReceivers {
    controller: ShardId,
    receivers: Receivers<ControllerEnvelope>,
}

impl ControllerReceivers {
    /// The controller executor's place in the envelopes' `target`.
    pub fn controller(&self) -> ShardId {
        self.controller
    }

    /// One stream per data shard; each ends when its shard closes its side.
    pub fn streams(&mut self) -> Vec<ConnectedReceiver<ControllerEnvelope>> {
        let streams = self.receivers.streams().into_iter();
        streams.map(|(_, stream)| stream).collect()
    }
}
