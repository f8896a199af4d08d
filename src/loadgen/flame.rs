//! `[io]` `--flamegraph-pid`: a CPU flamegraph of the broker process(es)
//! during each run's measured window (after its warm-up), written as
//! `<out>/flamegraphs/<NN>-<run label>.svg`. Sampling is the kernel's
//! software `cpu-clock` (these hosts have no hardware counters) with DWARF
//! call graphs, as `perf/flamegraph.sh` records by default: frame-pointer
//! stacks end in `[unknown]` below glommio because Rust's release code
//! keeps no frame pointers. `perf` (Debian's linux-perf) records,
//! `inferno` renders.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

use crate::io::host::find_on_path;

/// Samples per second per CPU: with DWARF stacks (16 KiB copied per
/// sample) 499 Hz keeps a 10 s run's perf.data near 100 MB.
pub const FREQ_HZ: u32 = 499;
/// Whether perf resolves inlined frames. A release build inlines the
/// broker's async fns into glommio's task poll: without them 36% of samples
/// named a shardlog function, with them 62% (perf/RESULTS.md), for 12-25 s
/// of addr2line per flamegraph. A debug build inlines little (75% without)
/// and resolving it took 3 minutes for 467 samples. bench records the
/// broker it starts, which is this same executable by default.
pub const INLINE_FRAMES: bool = !cfg!(debug_assertions);
/// Bytes of user stack perf copies per sample for DWARF unwinding: deep
/// enough for a request's path below the executor.
pub const DWARF_STACK_BYTES: u32 = 16_384;

/// The file name of a run's flamegraph: its sequence number and its label
/// with everything but ASCII letters, digits, `.`, `=` and `-` turned into
/// `_` (labels carry spaces, `@`, `%`, `/`).
pub fn svg_name(seq: usize, label: &str) -> String {
    let slug: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '=' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let slug = slug.trim_matches('_');
    format!("{seq:02}-{slug}.svg")
}

/// `perf record`'s arguments for `pids` over `secs` seconds into `data`.
pub fn record_args(pids: &[u32], secs: f64, data: &Path) -> Vec<String> {
    let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
    [
        "record",
        "-e",
        "cpu-clock",
        "-F",
        &FREQ_HZ.to_string(),
        "--call-graph",
        &format!("dwarf,{DWARF_STACK_BYTES}"),
        "-p",
        &pids.join(","),
        "-o",
        &data.display().to_string(),
        "--",
        "sleep",
        &format!("{secs:.3}"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Records one flamegraph per run of the processes `pids`.
pub struct Recorder {
    pids: Vec<u32>,
    dir: PathBuf,
    seq: AtomicUsize,
}

/// A recording under way (perf runs in its own thread).
pub struct Recording {
    thread: JoinHandle<Result<()>>,
    data: PathBuf,
    svg: PathBuf,
    title: String,
}

impl Recorder {
    /// Checks the tools now, so a missing one fails before the first run.
    pub fn new(pids: Vec<u32>, out: &Path) -> Result<Self> {
        for (tool, install) in [
            ("perf", "apt-get install -y linux-perf"),
            ("inferno-collapse-perf", "cargo install inferno --locked"),
            ("inferno-flamegraph", "cargo install inferno --locked"),
        ] {
            if find_on_path(tool).is_none() {
                bail!("--flamegraph needs `{tool}` on PATH: {install}");
            }
        }
        let dir = out.join("flamegraphs");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(Self {
            pids,
            dir,
            seq: AtomicUsize::new(1),
        })
    }

    /// Starts sampling after `warmup`, for `duration`.
    pub fn start(&self, label: &str, warmup: Duration, duration: Duration) -> Result<Recording> {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let svg = self.dir.join(svg_name(seq, label));
        let data = self.dir.join(format!("{seq:02}.perf.data"));
        let args = record_args(&self.pids, duration.as_secs_f64(), &data);
        let thread = std::thread::Builder::new()
            .name("loadgen-perf".into())
            .spawn(move || {
                std::thread::sleep(warmup);
                let out = Command::new("perf")
                    .args(&args)
                    .stdin(Stdio::null())
                    .output()
                    .context("running perf record")?;
                if !out.status.success() {
                    bail!(
                        "perf record failed ({}): {}",
                        out.status,
                        String::from_utf8_lossy(&out.stderr).trim()
                    );
                }
                Ok(())
            })?;
        Ok(Recording {
            thread,
            data,
            svg,
            title: format!("{label} (pids {:?}, cpu-clock {FREQ_HZ} Hz)", self.pids),
        })
    }
}

impl Recording {
    /// Waits for perf, renders the SVG and removes perf.data.
    pub fn finish(self) -> Result<PathBuf> {
        self.thread
            .join()
            .map_err(|_| anyhow!("the perf thread panicked"))??;
        // perf script's text (hundreds of MB with DWARF stacks) streams
        // straight into the collapser.
        let mut script = Command::new("perf")
            .arg("script")
            .arg(if INLINE_FRAMES {
                "--inline"
            } else {
                "--no-inline"
            })
            .arg("-i")
            .arg(&self.data)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("running perf script")?;
        let text = script.stdout.take().context("perf script's stdout")?;
        let collapse = Command::new("inferno-collapse-perf")
            .stdin(Stdio::from(text))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .context("running inferno-collapse-perf")?;
        let status = script.wait()?;
        if !status.success() || !collapse.status.success() {
            bail!(
                "perf script ({status}) | inferno-collapse-perf ({}) failed: {}",
                collapse.status,
                String::from_utf8_lossy(&collapse.stderr).trim()
            );
        }
        let collapsed = collapse.stdout;
        if collapsed.is_empty() {
            bail!("perf recorded no samples of {}", self.svg.display());
        }
        let svg = pipe("inferno-flamegraph", &["--title", &self.title], &collapsed)?;
        std::fs::write(&self.svg, svg)
            .with_context(|| format!("writing {}", self.svg.display()))?;
        let _ = std::fs::remove_file(&self.data);
        Ok(self.svg)
    }
}

/// Runs `program args` with `input` on stdin; its stdout.
fn pipe(program: &str, args: &[&str], input: &[u8]) -> Result<Vec<u8>> {
    use std::io::Write;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {program}"))?;
    let mut stdin = child.stdin.take().context("stdin")?;
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output()?;
    let _ = writer.join();
    if !out.status.success() {
        bail!(
            "{program} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(out.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn svg_names_keep_the_setting_readable_and_the_path_safe() {
        assert_eq!(
            svg_name(3, "acks=all linger.ms=5 @50% 12000/s"),
            "03-acks=all_linger.ms=5__50__12000_s.svg"
        );
        assert_eq!(
            svg_name(12, "kafka: acks=1 @max"),
            "12-kafka__acks=1__max.svg"
        );
    }

    #[test]
    fn perf_samples_every_pid_with_dwarf_stacks_for_the_window() {
        let a = record_args(&[10, 20], 2.0, Path::new("/o/01.perf.data"));
        let s = a.join(" ");
        assert!(
            s.starts_with("record -e cpu-clock -F 499 --call-graph dwarf,16384"),
            "{s}"
        );
        assert!(
            s.contains("-p 10,20 -o /o/01.perf.data -- sleep 2.000"),
            "{s}"
        );
    }
}
