//! `[drv]` UpdateFeatures (key 57), v0–v1 (Kafka 3.9's range; v2 is
//! Kafka 4's), answered as a Kafka 3.9 broker in ZooKeeper mode does.
//!
//! A ZooKeeper-mode Kafka 3.9 broker supports no feature
//! (`KafkaServer` builds `BrokerFeatures.createEmpty()`) and its `/feature`
//! znode finalizes none, so `KafkaController.processFeatureUpdates`
//! refuses every update per feature with INVALID_REQUEST: a deletion of a
//! feature that is not finalized ("Can not delete non-existing finalized
//! feature."), any other update because the feature is not supported.
//! `KafkaApis.handleUpdateFeatures` first checks ALTER on the cluster
//! (CLUSTER_AUTHORIZATION_FAILED) and that this broker is the active
//! controller (NOT_CONTROLLER, which the admin client retries against the
//! controller Metadata names).

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::update_features_request::{FeatureUpdateKey, UpdateFeaturesRequest};
use kafka_protocol::messages::update_features_response::{
    UpdatableFeatureResult, UpdateFeaturesResponse,
};
use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::StrBytes;

use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema, BOOL, INT16, INT32, INT8};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::UpdateFeatures, 0, 1);

/// UpdateFeaturesRequest.json, flexible from v0: timeout_ms,
/// feature_updates [feature, max_version_level, allow_downgrade (v0 only),
/// upgrade_type (v1+)], validate_only (v1+).
fn schema(version: i16) -> &'static [Field] {
    if version == 0 {
        &[INT32, Field::Structs(&[Field::Str, INT16, BOOL])]
    } else {
        &[INT32, Field::Structs(&[Field::Str, INT16, INT8]), BOOL]
    }
}

pub const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: 0,
    schema: Schema::PerVersion(schema),
};

/// `FeatureUpdate.UpgradeType`: 1 UPGRADE, 2 SAFE_DOWNGRADE,
/// 3 UNSAFE_DOWNGRADE; any other code is UNKNOWN.
const UPGRADE: i8 = 1;
const UNSAFE_DOWNGRADE: i8 = 3;

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let request: UpdateFeaturesRequest = API.decode(req.body.clone(), version)?;
        let authz = Authz::new(&ctx, &req);
        let top = if !authz.cluster(Operation::Alter) {
            Some(ErrorCode::CLUSTER_AUTHORIZATION_FAILED)
        } else if ctx.snapshot().controller_id.0 != ctx.config.broker_id {
            Some(ErrorCode::NOT_CONTROLLER)
        } else {
            None
        };
        let response = answer(&request, version, top);
        let body = encode(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

/// The answer for `request`: the top-level error alone, or every update
/// refused as `KafkaController.validateFeatureUpdate` refuses it when no
/// feature is supported or finalized.
pub fn answer(
    request: &UpdateFeaturesRequest,
    version: i16,
    top: Option<ErrorCode>,
) -> UpdateFeaturesResponse {
    // Kafka's `UpdateFeaturesResponse.createWithErrors`: the top-level
    // message is null unless there is a top-level error, which
    // `handleUpdateFeatures` builds as `new ApiError(error)`: the error's
    // default message.
    let mut response = UpdateFeaturesResponse::default().with_error_message(None);
    if let Some(code) = top {
        let message = if code == ErrorCode::NOT_CONTROLLER {
            "This is not the correct controller for this cluster."
        } else {
            "Cluster authorization failed."
        };
        response.error_code = code.0;
        response.error_message = Some(StrBytes::from_static_str(message));
        return response;
    }
    response.results = request
        .feature_updates
        .iter()
        .map(|u| {
            UpdatableFeatureResult::default()
                .with_feature(u.feature.clone())
                .with_error_code(ErrorCode::INVALID_REQUEST.0)
                .with_error_message(Some(StrBytes::from_string(refusal(u, version))))
        })
        .collect();
    response
}

/// Why Kafka 3.9's ZooKeeper controller refuses `update`
/// (`KafkaController.validateFeatureUpdate`, in its order).
fn refusal(update: &FeatureUpdateKey, version: i16) -> String {
    // UpdateFeaturesRequest.FeatureUpdateItem: v0's allow_downgrade maps
    // to SAFE_DOWNGRADE, else UPGRADE.
    let upgrade_type = if version == 0 {
        if update.allow_downgrade {
            2
        } else {
            UPGRADE
        }
    } else {
        update.upgrade_type
    };
    let level = update.max_version_level;
    if update.feature.is_empty() {
        "Feature name can not be empty.".to_owned()
    } else if !(UPGRADE..=UNSAFE_DOWNGRADE).contains(&upgrade_type) {
        "Received unknown upgrade type.".to_owned()
    } else if level < 1 && upgrade_type != UPGRADE {
        // `isDeleteRequest`: nothing is finalized, so nothing to delete.
        "Can not delete non-existing finalized feature.".to_owned()
    } else if level < 1 {
        format!(
            "Can not provide versionLevel: {level} less than 1 without setting the SAFE \
             downgradeType in the request."
        )
    } else {
        // `newFinalizedVersionRangeOrIncompatibilityError`: the broker's
        // supported features are empty.
        "Could not apply finalized feature update because the provided feature is not supported."
            .to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;

    fn update(name: &'static str, level: i16, upgrade_type: i8) -> FeatureUpdateKey {
        FeatureUpdateKey::default()
            .with_feature(StrBytes::from_static_str(name))
            .with_max_version_level(level)
            .with_allow_downgrade(upgrade_type != UPGRADE)
            .with_upgrade_type(upgrade_type)
    }

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|v| {
            let key = FeatureUpdateKey::default()
                .with_feature(StrBytes::from_static_str("group.version"))
                .with_max_version_level(1);
            let (key, validate_only) = if v == 0 {
                (key.with_allow_downgrade(true), false)
            } else {
                (key.with_upgrade_type(2), true)
            };
            UpdateFeaturesRequest::default()
                .with_timeout_ms(60_000)
                .with_feature_updates(vec![key])
                .with_validate_only(validate_only)
        });
    }

    #[test]
    fn every_update_is_refused_as_a_zookeeper_mode_broker_refuses_it() {
        let request = UpdateFeaturesRequest::default().with_feature_updates(vec![
            update("group.version", 1, UPGRADE),
            update("metadata.version", 0, 2),
            update("", 1, UPGRADE),
            update("x", 1, 9),
            update("y", 0, UPGRADE),
        ]);
        let r = answer(&request, 1, None);
        assert_eq!(r.error_code, 0);
        let got: Vec<(i16, String)> = r
            .results
            .iter()
            .map(|x| {
                (
                    x.error_code,
                    x.error_message.as_deref().unwrap_or("").to_owned(),
                )
            })
            .collect();
        assert!(got.iter().all(|(c, _)| *c == ErrorCode::INVALID_REQUEST.0));
        assert!(got[0].1.contains("not supported"));
        assert!(got[1].1.contains("non-existing"));
        assert!(got[2].1.contains("can not be empty"));
        assert!(got[3].1.contains("unknown upgrade type"));
        assert_eq!(
            got[4].1,
            "Can not provide versionLevel: 0 less than 1 without setting the SAFE downgradeType \
             in the request."
        );
        // v0: allow_downgrade with level 0 is a deletion.
        let v0 = answer(&request, 0, None);
        assert!(v0.results[1]
            .error_message
            .as_deref()
            .unwrap_or("")
            .contains("non-existing"));
        let denied = answer(&request, 1, Some(ErrorCode::CLUSTER_AUTHORIZATION_FAILED));
        assert_eq!(denied.error_code, 31);
        assert!(denied.error_message.is_some());
        assert!(denied.results.is_empty());
        assert!(r.error_message.is_none());
    }

    schema_fuzz_test!(API, UpdateFeaturesRequest);
}
