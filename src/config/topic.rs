//! `[pure]` Topic-level configs (Kafka names: cleanup.policy, retention.ms, ...) with broker defaults.
