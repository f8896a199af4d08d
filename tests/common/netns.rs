//! Real network partitions between broker processes with Linux network
//! namespaces (`ip netns`): one namespace per broker, joined to a bridge in
//! the root namespace by a veth pair, on a private 10.a.b.0/24 of its own.
//! The bridge has 10.a.b.1 (the root namespace's address on it: ZooKeeper
//! and the test's clients are reached there); broker `i` has 10.a.b.(10+i).
//!
//! Faults, all in the kernel's network stack (what a broker sees is what a
//! switch failure or a firewall shows it: packets that never arrive, no
//! reset):
//! - [`NetnsSet::isolate`]: the broker's veth taken down in the root
//!   namespace (no carrier: cut from everyone, ZooKeeper and clients too);
//! - [`NetnsSet::cut`]: nftables drop rules between two brokers (in both
//!   namespaces, both directions);
//! - [`NetnsSet::cut_from_zookeeper`]: drop rules for ZooKeeper's port on
//!   the bridge address (the test's clients, also on 10.a.b.1, still reach
//!   the broker);
//! - [`NetnsSet::loss`]: an nftables `numgen random` rule dropping that
//!   share of the packets in and out of the namespace;
//! - [`NetnsSet::delay`]: `tc qdisc … netem delay` on the veth when the
//!   kernel has `sch_netem`; without it (CONFIG_NET_SCH_NETEM unset) it says
//!   so and returns false: nothing is delayed.
//! - [`NetnsSet::heal`] / [`NetnsSet::heal_all`]: links up, rules and
//!   qdiscs removed.
//!
//! Names derive from the test process's pid and a per-process counter
//! (`sn<pid>x<k>`: the bridge `…b`, namespaces `…n<i>`, veth ends `…h<i>`
//! and `…p<i>`), so parallel tests and concurrent runs never collide;
//! [`NetnsSet::new`] first removes the sets a killed earlier run left
//! (names of this form whose pid is dead), killing what still runs in
//! them. The [`Drop`] guard removes everything, also when the test panics.
//!
//! Needs root (CAP_NET_ADMIN), `ip` (iproute2) and `nft` (Debian's
//! `nftables`); `bash tests/run.sh` installs both.

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

/// The port every broker listens on inside its own namespace.
pub const BROKER_PORT: u16 = 9092;

/// The nftables table each namespace gets (chains `input`, `output`).
const TABLE: &str = "shardlog_netns";

static SETS: AtomicU32 = AtomicU32::new(0);

/// One namespace per broker and the bridge joining them.
pub struct NetnsSet {
    tag: String,
    /// `10.a.b`: the set's /24.
    pub net: String,
    bridge: String,
    pub ids: Vec<i32>,
    /// Active rules: (broker id whose namespace holds it, chain, rule).
    rules: Mutex<Vec<(i32, &'static str, String)>>,
}

/// Fails naming what is missing: root, `ip`, `nft`.
pub fn require() {
    // SAFETY: geteuid(2) has no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(
        euid, 0,
        "network namespace tests need root (CAP_NET_ADMIN for `ip netns`, veth, nft): \
         run them as root, as CI does"
    );
    let has = |cmd: &str| {
        Command::new(cmd)
            .arg("-V")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok()
    };
    assert!(
        has("ip"),
        "`ip` (iproute2) missing: run `bash tests/run.sh` (apt-get install iproute2)"
    );
    assert!(
        has("nft"),
        "`nft` missing: run `bash tests/run.sh` (it installs Debian's nftables: \
         apt-get install nftables)"
    );
}

/// Run a command; its output, or a panic naming it and what it printed.
fn run(args: &[&str]) -> String {
    try_run(args).unwrap_or_else(|e| panic!("{e}"))
}

fn try_run(args: &[&str]) -> Result<String, String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{args:?}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "{args:?} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn pid_alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// The pid in a name `sn<pid>x<k>…`, when it has that form.
fn owner_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("sn")?;
    let (pid, _) = rest.split_once('x')?;
    pid.parse().ok()
}

/// Remove the namespaces and links of earlier runs whose process is dead.
fn remove_stale() {
    for line in run(&["ip", "netns", "list"]).lines() {
        let name = line.split_whitespace().next().unwrap_or_default();
        if owner_pid(name).is_some_and(|p| !pid_alive(p)) {
            eprintln!("[netns: removing {name}, left by a dead run]");
            kill_inside(name);
            let _ = try_run(&["ip", "netns", "delete", name]);
        }
    }
    for line in run(&["ip", "-o", "link", "show"]).lines() {
        // "7: sn123x0b: <...>" or "8: sn123x0h1@if2: <...>"
        let Some(name) = line.split(": ").nth(1) else {
            continue;
        };
        let name = name.split('@').next().unwrap_or_default();
        if owner_pid(name).is_some_and(|p| !pid_alive(p)) {
            eprintln!("[netns: removing link {name}, left by a dead run]");
            let _ = try_run(&["ip", "link", "delete", name]);
        }
    }
}

/// SIGKILL whatever runs in namespace `ns` (brokers, clients).
fn kill_inside(ns: &str) {
    if let Ok(pids) = try_run(&["ip", "netns", "pids", ns]) {
        for pid in pids
            .split_whitespace()
            .filter_map(|p| p.parse::<i32>().ok())
        {
            // SAFETY: kill(2) on a process of this test's namespace.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

impl NetnsSet {
    /// Namespaces for brokers `ids`, each with its veth on a new bridge.
    pub fn new(ids: &[i32]) -> NetnsSet {
        require();
        remove_stale();
        let k = SETS.fetch_add(1, Ordering::SeqCst);
        let pid = std::process::id();
        let tag = format!("sn{pid}x{k}");
        // One set at a time picks its /24 and takes it (parallel tests).
        static CREATE: Mutex<()> = Mutex::new(());
        let _creating = CREATE.lock().unwrap_or_else(|e| e.into_inner());
        let net = Self::free_net(pid, k);
        let set = NetnsSet {
            bridge: format!("{tag}b"),
            tag,
            net,
            ids: ids.to_vec(),
            rules: Mutex::new(Vec::new()),
        };
        // From here on the guard removes whatever was made, if a step fails.
        run(&["ip", "link", "add", &set.bridge, "type", "bridge"]);
        run(&[
            "ip",
            "addr",
            "add",
            &format!("{}/24", set.bridge_ip()),
            "dev",
            &set.bridge,
        ]);
        run(&["ip", "link", "set", &set.bridge, "up"]);
        for &id in ids {
            let ns = set.ns(id);
            let (host, peer) = (set.veth_host(id), set.veth_peer(id));
            run(&["ip", "netns", "add", &ns]);
            run(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
            run(&[
                "ip", "link", "add", &host, "type", "veth", "peer", "name", &peer, "netns", &ns,
            ]);
            run(&["ip", "link", "set", &host, "master", &set.bridge]);
            run(&["ip", "link", "set", &host, "up"]);
            run(&[
                "ip",
                "-n",
                &ns,
                "addr",
                "add",
                &format!("{}/24", set.ip(id)),
                "dev",
                &peer,
            ]);
            run(&["ip", "-n", &ns, "link", "set", &peer, "up"]);
            set.nft(
                id,
                &format!(
                    "add table inet {TABLE}\n\
                     add chain inet {TABLE} input {{ type filter hook input priority 0; policy accept; }}\n\
                     add chain inet {TABLE} output {{ type filter hook output priority 0; policy accept; }}\n"
                ),
            );
        }
        eprintln!(
            "[netns: set {} on {}.0/24: brokers {:?} in namespaces {}]",
            set.tag,
            set.net,
            ids,
            ids.iter()
                .map(|&i| set.ns(i))
                .collect::<Vec<_>>()
                .join(", ")
        );
        set
    }

    /// A 10.a.b.0/24 no interface of the host has yet.
    fn free_net(pid: u32, k: u32) -> String {
        let used = run(&["ip", "-4", "-o", "addr", "show"]);
        let start = (pid.wrapping_mul(8).wrapping_add(k)) % (100 * 256);
        for i in 0..(100 * 256) {
            let idx = (start + i) % (100 * 256);
            let net = format!("10.{}.{}", 100 + idx / 256, idx % 256);
            if !used.contains(&format!(" {net}.")) {
                return net;
            }
        }
        panic!("netns: no free 10.x.y.0/24 among 10.100-199.*")
    }

    /// The root namespace's address on the bridge (ZooKeeper, clients).
    pub fn bridge_ip(&self) -> String {
        format!("{}.1", self.net)
    }

    /// Broker `id`'s address in its namespace.
    pub fn ip(&self, id: i32) -> String {
        format!("{}.{}", self.net, 10 + id)
    }

    /// Broker `id`'s listener, `ip:9092`.
    pub fn broker_address(&self, id: i32) -> String {
        format!("{}:{BROKER_PORT}", self.ip(id))
    }

    /// Broker `id`'s namespace name.
    pub fn ns(&self, id: i32) -> String {
        format!("{}n{id}", self.tag)
    }

    fn veth_host(&self, id: i32) -> String {
        format!("{}h{id}", self.tag)
    }

    /// The veth end inside broker `id`'s namespace.
    fn veth_peer(&self, id: i32) -> String {
        format!("{}p{id}", self.tag)
    }

    /// The command prefix that runs a program in broker `id`'s namespace
    /// (a client on a broker's side of a partition).
    pub fn exec_prefix(&self, id: i32) -> Vec<String> {
        vec!["ip".into(), "netns".into(), "exec".into(), self.ns(id)]
    }

    fn nft(&self, id: i32, script: &str) {
        let ns = self.ns(id);
        let out = super::clients::output_with_stdin(
            Command::new("ip").args(["netns", "exec", &ns, "nft", "-f", "-"]),
            script.as_bytes(),
            "nft (install nftables: bash tests/run.sh)",
        );
        assert!(
            out.status.success(),
            "nft in {ns} failed ({}):\n{script}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Rewrite broker `id`'s chains with the active rules.
    fn apply(&self, id: i32) {
        let rules = self.rules.lock().expect("rules");
        let mut script =
            format!("flush chain inet {TABLE} input\nflush chain inet {TABLE} output\n");
        for (_, chain, rule) in rules.iter().filter(|(i, _, _)| *i == id) {
            script.push_str(&format!("add rule inet {TABLE} {chain} {rule}\n"));
        }
        drop(rules);
        self.nft(id, &script);
    }

    fn add_rules(&self, id: i32, rules: &[(&'static str, String)]) {
        self.rules
            .lock()
            .expect("rules")
            .extend(rules.iter().map(|(c, r)| (id, *c, r.clone())));
        self.apply(id);
    }

    /// Broker `id` cut from everyone (its veth down: ZooKeeper, the other
    /// brokers and the clients).
    pub fn isolate(&self, id: i32) {
        run(&["ip", "link", "set", &self.veth_host(id), "down"]);
        eprintln!("[netns: broker {id} isolated (veth down)]");
    }

    /// Brokers `a` and `b` cannot reach each other (both directions,
    /// dropped in both namespaces); everything else still flows.
    pub fn cut(&self, a: i32, b: i32) {
        for (x, y) in [(a, b), (b, a)] {
            let peer = self.ip(y);
            self.add_rules(
                x,
                &[
                    ("input", format!("ip saddr {peer} drop")),
                    ("output", format!("ip daddr {peer} drop")),
                ],
            );
        }
        eprintln!("[netns: brokers {a} and {b} cut from each other]");
    }

    /// Broker `id` cannot reach ZooKeeper (`zk_port` on the bridge
    /// address); clients on the same address still reach it.
    pub fn cut_from_zookeeper(&self, id: i32, zk_port: u16) {
        let zk = self.bridge_ip();
        self.add_rules(
            id,
            &[
                ("input", format!("ip saddr {zk} tcp sport {zk_port} drop")),
                ("output", format!("ip daddr {zk} tcp dport {zk_port} drop")),
            ],
        );
        eprintln!("[netns: broker {id} cut from ZooKeeper]");
    }

    /// `percent` % of the packets into and out of broker `id`'s namespace
    /// dropped (each direction on its own).
    pub fn loss(&self, id: i32, percent: u32) {
        // On the veth only: the namespace's loopback keeps every packet.
        let (veth, drop) = (
            self.veth_peer(id),
            format!("numgen random mod 100 < {percent} drop"),
        );
        self.add_rules(
            id,
            &[
                ("input", format!("iifname \"{veth}\" {drop}")),
                ("output", format!("oifname \"{veth}\" {drop}")),
            ],
        );
        eprintln!("[netns: broker {id} loses {percent}% of its packets each way]");
    }

    /// `ms` of delay on broker `id`'s veth with netem. False, saying so,
    /// when the kernel lacks `sch_netem`: nothing is delayed then.
    pub fn delay(&self, id: i32, ms: u32) -> bool {
        match try_run(&[
            "tc",
            "qdisc",
            "replace",
            "dev",
            &self.veth_host(id),
            "root",
            "netem",
            "delay",
            &format!("{ms}ms"),
        ]) {
            Ok(_) => {
                eprintln!("[netns: broker {id}'s link delayed {ms} ms (netem)]");
                true
            }
            Err(e) => {
                eprintln!(
                    "[netns: no delay for broker {id}: this kernel has no netem qdisc \
                     (CONFIG_NET_SCH_NETEM): {}]",
                    e.trim()
                );
                false
            }
        }
    }

    /// Broker `id` whole again: veth up, its rules (and the rules naming
    /// it elsewhere) and any qdisc removed.
    pub fn heal(&self, id: i32) {
        run(&["ip", "link", "set", &self.veth_host(id), "up"]);
        let _ = try_run(&["tc", "qdisc", "del", "dev", &self.veth_host(id), "root"]);
        let peer = self.ip(id);
        let touched: Vec<i32> = {
            let mut rules = self.rules.lock().expect("rules");
            let touched = rules
                .iter()
                .filter(|(i, _, r)| *i == id || r.contains(&format!("{peer} ")))
                .map(|(i, _, _)| *i)
                .collect();
            rules.retain(|(i, _, r)| *i != id && !r.contains(&format!("{peer} ")));
            touched
        };
        self.apply(id);
        for i in touched {
            self.apply(i);
        }
    }

    /// Every broker whole again.
    pub fn heal_all(&self) {
        self.rules.lock().expect("rules").clear();
        for &id in &self.ids {
            self.heal(id);
        }
        eprintln!("[netns: healed]");
    }
}

impl Drop for NetnsSet {
    fn drop(&mut self) {
        for &id in &self.ids {
            let ns = self.ns(id);
            kill_inside(&ns);
            // Both veth ends go with one (a namespace itself is destroyed
            // by the kernel later, asynchronously).
            let _ = try_run(&["ip", "link", "delete", &self.veth_host(id)]);
            if let Err(e) = try_run(&["ip", "netns", "delete", &ns]) {
                eprintln!("[netns: {e}]");
            }
        }
        if let Err(e) = try_run(&["ip", "link", "delete", &self.bridge]) {
            eprintln!("[netns: {e}]");
        }
    }
}
