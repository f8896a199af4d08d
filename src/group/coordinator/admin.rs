//! `[pure]` DescribeGroups, ListGroups, DeleteGroups (Kafka 3.9's
//! `GroupCoordinator.handleDescribeGroup` / `handleListGroups` /
//! `handleDeleteGroups`, `GroupMetadata.summary`).

use super::{
    offset_key, Action, Answer, Coordinator, DescribedGroup, DescribedMember, ListedGroup,
    PartitionLoad, PendingAppend, Records, WaiterId,
};
use crate::group::records::encode_group_metadata_key;
use crate::group::state::GroupState;
use crate::protocol::ErrorCode;

impl Coordinator {
    /// One group's summary. Kafka describes an unknown group as `Dead`
    /// with no error; members carry their metadata and assignment only
    /// while the group is `Stable`.
    pub fn describe(&self, group_id: &str) -> DescribedGroup {
        let mut d = DescribedGroup {
            group_id: group_id.to_owned(),
            error: ErrorCode::NONE,
            state: GroupState::Dead.name().to_owned(),
            protocol_type: String::new(),
            protocol: String::new(),
            members: Vec::new(),
        };
        if let Err(e) = self.check_coordinator(group_id) {
            d.error = e;
            return d;
        }
        let Some(entry) = self.groups.get(group_id) else {
            return d;
        };
        let g = &entry.group;
        let stable = g.state() == GroupState::Stable;
        let protocol = g.protocol.clone().unwrap_or_default();
        d.state = g.state().name().to_owned();
        d.protocol_type = g.protocol_type.clone().unwrap_or_default();
        d.protocol = if stable {
            protocol.clone()
        } else {
            String::new()
        };
        d.members = g
            .members()
            .map(|m| DescribedMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                metadata: if stable {
                    m.metadata_for(&protocol)
                        .map(<[u8]>::to_vec)
                        .unwrap_or_default()
                } else {
                    Vec::new()
                },
                assignment: if stable {
                    m.assignment.clone()
                } else {
                    Vec::new()
                },
            })
            .collect();
        d
    }

    /// DescribeGroups for one group.
    pub fn on_describe(&self, waiter: WaiterId, group_id: &str) -> Vec<Action> {
        vec![Action::Reply(
            waiter,
            Answer::Describe(self.describe(group_id)),
        )]
    }

    /// ListGroups: the groups of loaded partitions, optionally only those in
    /// `states` (v4+, names compared without case as Kafka does), and
    /// COORDINATOR_LOAD_IN_PROGRESS while a partition loads.
    pub fn list(&self, states: &[String]) -> (ErrorCode, Vec<ListedGroup>) {
        let loading = self
            .partitions
            .values()
            .any(|l| *l == PartitionLoad::Loading);
        let wanted = |s: GroupState| {
            states.is_empty() || states.iter().any(|w| w.eq_ignore_ascii_case(s.name()))
        };
        let groups = self
            .groups
            .values()
            .filter(|e| self.partitions.get(&e.partition) == Some(&PartitionLoad::Loaded))
            .filter(|e| e.group.state() != GroupState::Dead && wanted(e.group.state()))
            .map(|e| ListedGroup {
                group_id: e.group.group_id.clone(),
                protocol_type: e.group.protocol_type.clone().unwrap_or_default(),
                state: e.group.state().name().to_owned(),
            })
            .collect();
        let error = if loading {
            ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
        } else {
            ErrorCode::NONE
        };
        (error, groups)
    }

    /// DeleteGroups: only empty groups go (NON_EMPTY_GROUP otherwise),
    /// with tombstones for their offsets and metadata.
    pub fn on_delete_groups(
        &mut self,
        waiter: WaiterId,
        group_ids: Vec<String>,
        now_ms: i64,
    ) -> Vec<Action> {
        let mut out = Vec::new();
        let mut results = Vec::with_capacity(group_ids.len());
        let mut by_partition: std::collections::BTreeMap<i32, Records> = Default::default();
        for group_id in group_ids {
            let error = match self.check_coordinator(&group_id) {
                Err(e) => e,
                Ok(_) if group_id.is_empty() => ErrorCode::INVALID_GROUP_ID,
                Ok(partition) => match self.groups.get_mut(&group_id) {
                    None => ErrorCode::GROUP_ID_NOT_FOUND,
                    Some(e) => match e.group.state() {
                        GroupState::Dead => ErrorCode::GROUP_ID_NOT_FOUND,
                        GroupState::Empty if !e.pending.is_empty() => ErrorCode::NON_EMPTY_GROUP,
                        GroupState::Empty => {
                            let _ = e.group.transition_to(GroupState::Dead, now_ms);
                            let records = by_partition.entry(partition).or_default();
                            for (t, p) in e.offsets.keys() {
                                records.push((offset_key(&group_id, t, *p), None));
                            }
                            records.push((encode_group_metadata_key(&group_id), None));
                            self.groups.remove(&group_id);
                            ErrorCode::NONE
                        }
                        _ => ErrorCode::NON_EMPTY_GROUP,
                    },
                },
            };
            results.push((group_id, error));
        }
        if by_partition.is_empty() {
            out.push(Action::Reply(waiter, Answer::DeleteGroups(results)));
            return out;
        }
        let n = by_partition.len();
        for (i, (partition, records)) in by_partition.into_iter().enumerate() {
            // The answer goes with the last append (one shard appends in
            // order, so the earlier ones are done by then).
            let pending = if i + 1 == n {
                PendingAppend::DeleteGroups {
                    waiter,
                    results: results.clone(),
                }
            } else {
                PendingAppend::Quiet
            };
            self.append(partition, records, pending, &mut out);
        }
        out
    }
}
