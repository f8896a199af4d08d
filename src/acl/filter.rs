//! `[pure]` `AclBindingFilter`: which bindings DescribeAcls lists and
//! DeleteAcls removes (`clients/.../resource/ResourcePatternFilter.java`,
//! `clients/.../acl/AccessControlEntryFilter.java`), and how DeleteAcls
//! attributes each removed binding to a filter (`AclAuthorizer.deleteAcls`).

use std::collections::{BTreeMap, BTreeSet};

use super::authorizer::AclCache;
use super::{
    AccessControlEntry, AclBinding, Operation, PatternType, Permission, ResourcePattern,
    ResourceType, WILDCARD_RESOURCE,
};

/// A pattern filter: type ANY matches every type; pattern type ANY the
/// exact name in any pattern type, MATCH every pattern that would apply to
/// the name; a `None` name matches every name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternFilter {
    pub resource_type: ResourceType,
    pub name: Option<String>,
    pub pattern_type: PatternType,
}

/// An entry filter: `None` principal/host and ANY operation/permission
/// match everything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryFilter {
    pub principal: Option<String>,
    pub host: Option<String>,
    pub operation: Operation,
    pub permission: Permission,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindingFilter {
    pub pattern: PatternFilter,
    pub entry: EntryFilter,
}

impl PatternFilter {
    /// `ResourcePatternFilter.matches`.
    pub fn matches(&self, p: &ResourcePattern) -> bool {
        if self.resource_type != ResourceType::Any && self.resource_type != p.resource_type {
            return false;
        }
        if !matches!(self.pattern_type, PatternType::Any | PatternType::Match)
            && self.pattern_type != p.pattern_type
        {
            return false;
        }
        let Some(name) = &self.name else {
            return true;
        };
        if self.pattern_type == PatternType::Any || self.pattern_type == p.pattern_type {
            return *name == p.name;
        }
        match p.pattern_type {
            PatternType::Literal => *name == p.name || p.name == WILDCARD_RESOURCE,
            PatternType::Prefixed => name.starts_with(p.name.as_str()),
            _ => false,
        }
    }

    /// `ResourcePatternFilter.matchesAtMostOne` turned into its pattern:
    /// a concrete type, a name and LITERAL or PREFIXED.
    pub fn exact_pattern(&self) -> Option<ResourcePattern> {
        let concrete_type = !matches!(
            self.resource_type,
            ResourceType::Any | ResourceType::Unknown
        );
        let concrete_pattern = matches!(
            self.pattern_type,
            PatternType::Literal | PatternType::Prefixed
        );
        match &self.name {
            Some(name) if concrete_type && concrete_pattern => Some(ResourcePattern {
                resource_type: self.resource_type,
                name: name.clone(),
                pattern_type: self.pattern_type,
            }),
            _ => None,
        }
    }
}

impl EntryFilter {
    /// `AccessControlEntryFilter.matches`.
    pub fn matches(&self, e: &AccessControlEntry) -> bool {
        self.principal.as_ref().is_none_or(|p| *p == e.principal)
            && self.host.as_ref().is_none_or(|h| *h == e.host)
            && (self.operation == Operation::Any || self.operation == e.operation)
            && (self.permission == Permission::Any || self.permission == e.permission)
    }
}

impl BindingFilter {
    pub fn matches(&self, b: &AclBinding) -> bool {
        self.pattern.matches(&b.pattern) && self.entry.matches(&b.entry)
    }
}

/// DescribeAcls (`AclAuthorizer.acls`): the cached bindings `filter`
/// matches, grouped by pattern (`DescribeAclsResponse.aclsResources`).
pub fn describe(
    cache: &AclCache,
    filter: &BindingFilter,
) -> Vec<(ResourcePattern, Vec<AccessControlEntry>)> {
    cache
        .patterns()
        .filter(|(p, _)| filter.pattern.matches(p))
        .filter_map(|(p, entries)| {
            let kept: Vec<AccessControlEntry> = entries
                .iter()
                .filter(|e| filter.entry.matches(e))
                .cloned()
                .collect();
            (!kept.is_empty()).then(|| (p.clone(), kept))
        })
        .collect()
}

/// DeleteAcls' plan for one pattern: its entries after the deletion and
/// the removed bindings with the index of the filter each is reported
/// under (the first filter, in request order, that matches it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removal {
    pub remaining: BTreeSet<AccessControlEntry>,
    pub removed: Vec<(usize, AccessControlEntry)>,
}

/// `AclAuthorizer.deleteAcls`' selection on one pattern's current
/// entries: every entry some filter matching the pattern matches goes.
pub fn removal(
    pattern: &ResourcePattern,
    current: &BTreeSet<AccessControlEntry>,
    filters: &[BindingFilter],
) -> Removal {
    let matching: Vec<(usize, &BindingFilter)> = filters
        .iter()
        .enumerate()
        .filter(|(_, f)| f.pattern.matches(pattern))
        .collect();
    let mut remaining = BTreeSet::new();
    let mut removed = Vec::new();
    for e in current {
        match matching.iter().find(|(_, f)| f.entry.matches(e)) {
            Some((i, _)) => removed.push((*i, e.clone())),
            None => {
                remaining.insert(e.clone());
            }
        }
    }
    Removal { remaining, removed }
}

/// The patterns DeleteAcls visits: every cached pattern and each filter's
/// exact pattern (re-read from the store even when not cached), those some
/// filter matches.
pub fn patterns_to_visit(cache: &AclCache, filters: &[BindingFilter]) -> Vec<ResourcePattern> {
    let mut out: BTreeMap<ResourcePattern, ()> = BTreeMap::new();
    for (p, _) in cache.patterns() {
        out.insert(p.clone(), ());
    }
    for f in filters {
        if let Some(p) = f.pattern.exact_pattern() {
            out.insert(p, ());
        }
    }
    out.into_keys()
        .filter(|p| filters.iter().any(|f| f.pattern.matches(p)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ace(principal: &str, op: Operation, permission: Permission) -> AccessControlEntry {
        AccessControlEntry {
            principal: principal.into(),
            host: "*".into(),
            operation: op,
            permission,
        }
    }

    fn any_entry() -> EntryFilter {
        EntryFilter {
            principal: None,
            host: None,
            operation: Operation::Any,
            permission: Permission::Any,
        }
    }

    fn pattern_filter(t: ResourceType, name: Option<&str>, pt: PatternType) -> PatternFilter {
        PatternFilter {
            resource_type: t,
            name: name.map(str::to_owned),
            pattern_type: pt,
        }
    }

    #[test]
    fn pattern_filters_match_as_resource_pattern_filter() {
        let lit = ResourcePattern::literal(ResourceType::Topic, "orders");
        let star = ResourcePattern::literal(ResourceType::Topic, "*");
        let pre = ResourcePattern::prefixed(ResourceType::Topic, "ord");
        let m = pattern_filter(ResourceType::Topic, Some("orders"), PatternType::Match);
        assert!(m.matches(&lit) && m.matches(&star) && m.matches(&pre));
        let any = pattern_filter(ResourceType::Any, Some("orders"), PatternType::Any);
        assert!(any.matches(&lit) && !any.matches(&star) && !any.matches(&pre));
        let l = pattern_filter(ResourceType::Topic, Some("orders"), PatternType::Literal);
        assert!(l.matches(&lit) && !l.matches(&star) && !l.matches(&pre));
        let p = pattern_filter(ResourceType::Topic, Some("ord"), PatternType::Prefixed);
        assert!(p.matches(&pre) && !p.matches(&lit));
        let all = pattern_filter(ResourceType::Any, None, PatternType::Any);
        assert!(all.matches(&lit) && all.matches(&pre));
        let groups = pattern_filter(ResourceType::Group, None, PatternType::Any);
        assert!(!groups.matches(&lit));
        assert_eq!(l.exact_pattern(), Some(lit));
        assert_eq!(m.exact_pattern(), None);
    }

    #[test]
    fn entry_filters_match_as_access_control_entry_filter() {
        let e = ace("User:alice", Operation::Read, Permission::Allow);
        assert!(any_entry().matches(&e));
        let f = EntryFilter {
            principal: Some("User:bob".into()),
            ..any_entry()
        };
        assert!(!f.matches(&e));
        let f = EntryFilter {
            operation: Operation::Write,
            ..any_entry()
        };
        assert!(!f.matches(&e));
        let f = EntryFilter {
            permission: Permission::Allow,
            host: Some("*".into()),
            ..any_entry()
        };
        assert!(f.matches(&e));
    }

    #[test]
    fn a_removed_binding_is_reported_under_the_first_matching_filter() {
        let p = ResourcePattern::literal(ResourceType::Topic, "t");
        let a = ace("User:alice", Operation::Read, Permission::Allow);
        let b = ace("User:bob", Operation::Read, Permission::Allow);
        let current = BTreeSet::from([a.clone(), b.clone()]);
        let filters = vec![
            BindingFilter {
                pattern: pattern_filter(ResourceType::Group, None, PatternType::Any),
                entry: any_entry(),
            },
            BindingFilter {
                pattern: pattern_filter(ResourceType::Topic, Some("t"), PatternType::Literal),
                entry: EntryFilter {
                    principal: Some("User:bob".into()),
                    ..any_entry()
                },
            },
            BindingFilter {
                pattern: pattern_filter(ResourceType::Any, None, PatternType::Any),
                entry: any_entry(),
            },
        ];
        let r = removal(&p, &current, &filters);
        assert!(r.remaining.is_empty());
        assert_eq!(r.removed, vec![(2, a), (1, b)]);
        let r = removal(&p, &current, &filters[..2]);
        assert_eq!(r.remaining.len(), 1);
    }
}
