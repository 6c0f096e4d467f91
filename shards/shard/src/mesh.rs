//! The mesh of bounded channels between every pair of executors (data shards and controller).

use glommio::channels::channel_mesh::Senders;

use crate::{ShardId, ShardMessage};

/// A message stamped with its sender and its target; the receiver checks the target.
pub struct Envelope {
    /// The shard that must handle it.
    pub target: ShardId,
    /// The shard that sent it.
    pub origin: ShardId,
    /// The work.
    pub message: ShardMessage,
}

/// Why a message could not be sent.
#[derive(Debug, thiserror::Error)]
pub enum MeshError {
    /// The target's channel is closed (it is shutting down).
    #[error("{0} is not reachable")]
    Unreachable(ShardId),
    /// No such shard in the mesh.
    #[error("{0} is not in the mesh")]
    NoSuchShard(ShardId),
}

/// This executor's sending side of the mesh.
pub struct ShardMesh {
    self_id: ShardId,
    shard_count: usize,
    controller: ShardId,
    senders: Senders<Envelope>,
}

impl ShardMesh {
    /// Wraps the senders of a joined mesh whose peer `i` is `ShardId(i)`; the controller is the
    /// last peer.
    pub fn new(senders: Senders<Envelope>, shard_count: usize) -> ShardMesh {
        let self_id = ShardId(senders.peer_id() as u16);
        let controller = ShardId(shard_count as u16);
        assert_eq!(
            senders.nr_consumers(),
            shard_count + 1,
            "mesh holds every shard and the controller"
        );
        ShardMesh {
            self_id,
            shard_count,
            controller,
            senders,
        }
    }

    /// This executor.
    pub fn self_id(&self) -> ShardId {
        self.self_id
    }

    /// Number of data shards.
    pub fn shard_count(&self) -> usize {
        self.shard_count
    }

    /// The controller's place in the mesh.
    pub fn controller(&self) -> ShardId {
        self.controller
    }

    /// Sends `message` to `target`, waiting while its channel is full (backpressure).
    pub async fn send(&self, target: ShardId, message: ShardMessage) -> Result<(), MeshError> {
        assert_ne!(
            target, self.self_id,
            "local work is done in place, never sent to oneself"
        );
        if target.index() > self.shard_count {
            return Err(MeshError::NoSuchShard(target));
        }
        let envelope = Envelope {
            target,
            origin: self.self_id,
            message,
        };
        self.senders
            .send_to(target.index(), envelope)
            .await
            .map_err(|_| MeshError::Unreachable(target))
    }

    /// Closes this executor's sending side (shutdown).
    pub fn close(&self) {
        self.senders.close();
    }
}
