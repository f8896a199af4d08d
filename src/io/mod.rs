//! `[io]` Edges that touch the OS: the clock, DMA helpers, zero-copy socket
//! writes, host facts.
//! Only [`clock`] reads time; pure cores receive `now_ms` as an argument.

pub mod clock;
pub mod dma;
pub mod host;
pub mod zerocopy;
