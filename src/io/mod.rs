//! `[io]` Edges that touch the OS: the clock, DMA helpers, socket reads
//! into spare capacity ([`recv`]), zero-copy socket writes of response
//! parts ([`zerocopy::write_parts`]; the part type, a read result travels
//! in from the log to the socket, is `protocol::out_part::OutPart`, which
//! [`zerocopy`] re-exports for its callers), host facts, thread CPU
//! affinity ([`affinity`]), the broker's own stderr lines ([`console`]), the blocking HTTP(S) client of the OAUTHBEARER
//! endpoints ([`http_client`]), plus the
//! executor-local synchronisation primitives every layer shares.
//! Only [`clock`] reads time; pure cores receive `now_ms` as an argument.

pub mod affinity;
pub mod broker_stream;
pub mod clock;
pub mod console;
pub mod dma;
pub mod host;
pub mod http_client;
pub mod ktls;
pub mod local_sync;
pub mod parts;
pub mod process;
pub mod recv;
pub mod zerocopy;
