//! The follower's side of a fetch session with its leader (KIP-227), as Kafka's
//! `FetchSessionHandler`: the first request is full (epoch 0) and asks for a session; once the
//! leader answers with one, each request names only the partitions added or changed since the
//! previous one and forgets the ones left out; any error on the session, or on the connection,
//! makes the next request full again.

use std::collections::BTreeMap;

use sluice_protocol::messages::fetch::{FetchPartition, FetchResponse, FetchTopic, ForgottenTopic};
use sluice_protocol::ErrorCode;
use sluice_replica::TopicIdPartition;

use crate::fetch_session::{next_epoch, INITIAL_EPOCH, INVALID_SESSION_ID};

/// One fetcher's session with its leader.
#[derive(Debug, Default)]
pub struct SessionHandler {
    /// The leader's session id (0: none).
    session_id: i32,
    /// The epoch of the next request: 0 makes it full.
    epoch: i32,
    /// The partitions the leader's session holds, as last sent.
    partitions: BTreeMap<TopicIdPartition, FetchPartition>,
    /// Whether the request in flight is full.
    in_flight_full: bool,
}

/// What one request carries for the session.
#[derive(Debug, PartialEq, Eq)]
pub struct SessionRequest {
    /// The session id.
    pub session_id: i32,
    /// The session epoch.
    pub epoch: i32,
    /// The partitions to name: every one when full, else the added and changed ones.
    pub topics: Vec<FetchTopic>,
    /// The partitions the session must drop.
    pub forgotten: Vec<ForgottenTopic>,
}

impl SessionHandler {
    /// The session id (0 when there is none).
    pub fn session_id(&self) -> i32 {
        self.session_id
    }

    /// The request for `topics`, every partition due now (grouped by topic id, in order).
    pub fn build(&mut self, topics: Vec<FetchTopic>) -> SessionRequest {
        let mut next = BTreeMap::new();
        for topic in &topics {
            for p in &topic.partitions {
                next.insert(
                    TopicIdPartition {
                        topic_id: topic.topic_id,
                        partition: p.partition,
                    },
                    p.clone(),
                );
            }
        }
        let previous = std::mem::replace(&mut self.partitions, next);
        self.in_flight_full = self.epoch == INITIAL_EPOCH;
        if self.in_flight_full {
            return SessionRequest {
                session_id: self.session_id,
                epoch: INITIAL_EPOCH,
                topics,
                forgotten: Vec::new(),
            };
        }
        let mut changed: Vec<FetchTopic> = Vec::new();
        for topic in topics {
            let partitions: Vec<FetchPartition> = topic
                .partitions
                .into_iter()
                .filter(|p| {
                    let tp = TopicIdPartition {
                        topic_id: topic.topic_id,
                        partition: p.partition,
                    };
                    previous.get(&tp) != Some(p)
                })
                .collect();
            if !partitions.is_empty() {
                changed.push(FetchTopic {
                    partitions,
                    ..topic
                });
            }
        }
        let mut forgotten: Vec<ForgottenTopic> = Vec::new();
        for tp in previous
            .keys()
            .filter(|tp| !self.partitions.contains_key(tp))
        {
            match forgotten.last_mut() {
                Some(t) if t.topic_id == tp.topic_id => t.partitions.push(tp.partition),
                _ => forgotten.push(ForgottenTopic {
                    topic: String::new(),
                    topic_id: tp.topic_id,
                    partitions: vec![tp.partition],
                }),
            }
        }
        SessionRequest {
            session_id: self.session_id,
            epoch: self.epoch,
            topics: changed,
            forgotten,
        }
    }

    /// Takes the leader's answer: false when it is a session error (nothing in it to apply; the
    /// next request is full).
    pub fn handle_response(&mut self, response: &FetchResponse) -> bool {
        if response.error_code != ErrorCode::NONE.0 {
            if response.error_code == ErrorCode::FETCH_SESSION_ID_NOT_FOUND.0 {
                self.session_id = INVALID_SESSION_ID;
            }
            // Kafka's `nextCloseExisting`: a full request that closes the session it names.
            self.epoch = INITIAL_EPOCH;
            return false;
        }
        if response.session_id == INVALID_SESSION_ID {
            // No session (the leader's cache is full, or it closed ours): full again.
            self.session_id = INVALID_SESSION_ID;
            self.epoch = INITIAL_EPOCH;
        } else if self.in_flight_full {
            self.session_id = response.session_id;
            self.epoch = next_epoch(INITIAL_EPOCH);
        } else {
            self.epoch = next_epoch(self.epoch);
        }
        true
    }

    /// The request failed (connection lost, timeout): the next one is full and closes the
    /// session (a new connection may reach another shard of the leader).
    pub fn on_error(&mut self) {
        self.epoch = INITIAL_EPOCH;
    }
}
