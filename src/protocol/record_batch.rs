//! `[pure]` Record batch (magic v2) view: validate, read header fields, patch offsets.
