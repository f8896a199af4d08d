//! `[io]` Zero-copy socket writes: raw sendmsg of `Bytes` iovecs and sendfile of file regions.
