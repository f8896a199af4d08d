//! Running Apache Kafka 3.9's Java client and command-line tools from the
//! integration tests: the jar folder `tests/java/fetch_jars.sh` fills
//! (`bash tests/run.sh` calls it), the small programs under
//! `tests/java/src/` compiled once per test binary with `javac`, and a
//! `java` command line with the jars on the class path.
//!
//! A missing JDK or jar folder fails the test with the install step; it
//! never passes silently.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// The jar folder: `$SHARDLOG_KAFKA_JARS`, else fetch_jars.sh's default.
pub fn kafka_jars() -> PathBuf {
    let dir = std::env::var_os("SHARDLOG_KAFKA_JARS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").expect("HOME or SHARDLOG_KAFKA_JARS");
            PathBuf::from(home).join(format!(".cache/shardlog/kafka-jars-{}", kafka_version()))
        });
    assert!(
        dir.join(".complete").is_file(),
        "Kafka {} jars missing at {}: run `bash tests/run.sh` (or `bash tests/java/fetch_jars.sh`; \
         it needs `apt-get install -y --no-install-recommends openjdk-17-jdk-headless maven`)",
        kafka_version(),
        dir.display()
    );
    dir
}

/// `<kafka.version>` of tests/java/pom.xml.
pub fn kafka_version() -> String {
    let pom = std::fs::read_to_string(java_dir().join("pom.xml")).expect("read tests/java/pom.xml");
    let start = pom.find("<kafka.version>").expect("kafka.version") + "<kafka.version>".len();
    let end = pom[start..].find('<').expect("end of kafka.version") + start;
    pom[start..end].to_owned()
}

pub fn java_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/java")
}

fn assert_tool(tool: &str) {
    let ok = Command::new(tool)
        .arg("-version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        ok,
        "{tool} missing: run `bash tests/run.sh` \
         (apt-get install -y --no-install-recommends openjdk-17-jdk-headless)"
    );
}

/// `<jars>/*`: java expands the wildcard itself.
pub fn jar_class_path() -> String {
    format!("{}/*", kafka_jars().display())
}

/// The compiled `tests/java/src` classes (javac runs once per test binary,
/// into a fresh folder under cargo's target tmp dir).
pub fn classes() -> &'static Path {
    static CLASSES: OnceLock<PathBuf> = OnceLock::new();
    CLASSES.get_or_init(|| {
        assert_tool("javac");
        let exe = std::env::current_exe().expect("test binary");
        let name = exe
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("java-classes-{name}"));
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(&out).expect("classes dir");
        let src = java_dir().join("src/shardlog");
        let mut sources: Vec<PathBuf> = std::fs::read_dir(&src)
            .expect("tests/java/src/shardlog")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "java"))
            .collect();
        sources.sort();
        let result = Command::new("javac")
            .arg("-d")
            .arg(&out)
            .args(["-cp", &jar_class_path()])
            .args(&sources)
            .output()
            .expect("run javac");
        assert!(
            result.status.success(),
            "javac failed:\n{}",
            String::from_utf8_lossy(&result.stderr)
        );
        out
    })
}

/// `java` with short-lived-JVM settings (serial GC, C1 only: these programs
/// run seconds), reload4j logging warnings to stderr, and `class_path`.
fn java_with(class_path: String, main_class: &str) -> Command {
    assert_tool("java");
    let mut cmd = Command::new("java");
    cmd.args([
        "-Xmx512m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        "-Djava.awt.headless=true",
    ])
    .arg(format!(
        "-Dlog4j.configuration=file:{}",
        java_dir().join("log4j.properties").display()
    ))
    .args(["-cp", &class_path, main_class])
    .stdin(Stdio::null());
    cmd
}

/// A Kafka class (a command-line tool) with only the jars on the class path.
pub fn kafka_tool(main_class: &str) -> Command {
    java_with(jar_class_path(), main_class)
}

/// One of our programs (`shardlog.<Name>` from tests/java/src).
pub fn program(name: &str) -> Command {
    let cp = format!("{}:{}", classes().display(), jar_class_path());
    java_with(cp, &format!("shardlog.{name}"))
}

/// Run, and fail the test with both outputs unless the exit status is 0.
pub fn run_ok(cmd: &mut Command, what: &str) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Run one of our programs and parse the JSON report on its last stdout line.
pub fn run_program(name: &str, args: &[&str]) -> serde_json::Value {
    let out = run_ok(program(name).args(args), name);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| {
        panic!(
            "{name}: last line is not JSON ({e}):\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}
