//! `[io]` glommio DMA helpers.
//!
//! `prime_iopoll_probe` works around glommio 0.9's polled-I/O probe bug
//! (PLATFORM.md; DataDog/glommio #605, #670): the first DMA open on an executor
//! thread probes polled reads against that very file; on an empty or
//! preallocated file ext4 answers without touching the disk, glommio concludes
//! the device supports IOPOLL and every later read fails with EOPNOTSUPP.
//! Opening a small file holding real, synced data first makes the probe hit
//! the disk, fail, and mark the device non-pollable for this thread.

use std::io::Write;
use std::path::Path;

/// Run in every executor, before any segment is opened with DMA.
/// `dir` must be on the same device as the log dirs.
pub async fn prime_iopoll_probe(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let name = format!(
        ".iopoll-probe-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    )
    .replace(['(', ')'], "");
    let path = dir.join(name);
    {
        let mut f = std::fs::File::create(&path)?;
        f.write_all(&[0x5a; 4096])?;
        f.sync_all()?;
    }
    let result = match glommio::io::DmaFile::open(&path).await {
        Ok(file) => file.close().await.map_err(std::io::Error::from),
        Err(e) => Err(std::io::Error::from(e)),
    };
    let _ = std::fs::remove_file(&path);
    result
}
