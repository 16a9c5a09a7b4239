//! The simulated machine: logical CPUs, SMT siblings, sockets and NUMA nodes, last-level-cache
//! (LLC) domains, and the scheduling domains Linux builds over them with their balance intervals.
//!
//! CPU numbering follows Linux on Intel servers: with SMT on, CPUs `0..cores` are the first
//! hardware thread of each core and `cores..2*cores` their siblings (CPU `c` and `c + cores` share
//! a core). Cores are numbered node by node; each NUMA node is one LLC (one die with its L3, as on
//! the Xeon E5 v3 and on each Magny-Cours die).

use std::fmt;

/// A logical CPU number, `0..Machine::cpus()`.
pub type CpuId = usize;

/// The largest machine the simulator builds (logical CPUs); [`CpuSet`] is a fixed-size bitset.
pub const MAX_CPUS: usize = 256;

/// A set of logical CPUs (an affinity mask, a domain's span). Iterates in CPU order.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CpuSet {
    words: [u64; MAX_CPUS / 64],
}

impl CpuSet {
    /// The empty set.
    pub fn empty() -> Self {
        Self::default()
    }

    /// CPUs `0..n`.
    pub fn first(n: usize) -> Self {
        let mut set = Self::empty();
        for cpu in 0..n.min(MAX_CPUS) {
            set.insert(cpu);
        }
        set
    }

    /// The set holding one CPU.
    pub fn single(cpu: CpuId) -> Self {
        let mut set = Self::empty();
        set.insert(cpu);
        set
    }

    /// Adds `cpu` (ignored if `cpu >= MAX_CPUS`).
    pub fn insert(&mut self, cpu: CpuId) {
        if cpu < MAX_CPUS {
            self.words[cpu / 64] |= 1 << (cpu % 64);
        }
    }

    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: CpuId) -> bool {
        cpu < MAX_CPUS && self.words[cpu / 64] & (1 << (cpu % 64)) != 0
    }

    /// Number of CPUs in the set.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// CPUs in both sets.
    pub fn and(&self, other: &CpuSet) -> CpuSet {
        let mut out = *self;
        for (w, o) in out.words.iter_mut().zip(other.words.iter()) {
            *w &= o;
        }
        out
    }

    /// Whether every CPU of `self` is in `other`.
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.and(other) == *self
    }

    /// The CPUs in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = CpuId> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &word)| {
            let mut bits = word;
            std::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let bit = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    i * 64 + bit
                })
            })
        })
    }

    /// The CPUs in increasing order starting at `start` and wrapping around (the kernel's
    /// `for_each_cpu_wrap`).
    pub fn iter_wrap(&self, start: CpuId) -> impl Iterator<Item = CpuId> + '_ {
        self.iter()
            .skip_while(move |&cpu| cpu < start)
            .chain(self.iter().take_while(move |&cpu| cpu < start))
    }

    /// The lowest CPU in the set.
    pub fn lowest(&self) -> Option<CpuId> {
        self.iter().next()
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

/// The level of a scheduling domain, lowest first (Linux `SMT`, `MC`, `NUMA` topology levels).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DomainKind {
    /// Hardware threads of one core.
    Smt,
    /// Cores sharing the last-level cache (one die / NUMA node).
    Mc,
    /// NUMA nodes; `0` is the nearest NUMA level (the nodes of one socket when a socket has
    /// several), higher values span farther nodes.
    Numa(u8),
}

/// Load-balance interval of a domain, milliseconds, for a CPU that is *not* idle: 64 ms between
/// hyperthreads, doubling with each step of distance (000 §2.5 and §5.8: 64 ms with SMT, 128 ms
/// without). This is `min_interval × busy_factor` with busy_factor 32, so the idle interval is
/// this divided by [`BUSY_FACTOR`].
///
/// The kernel derives `min_interval` from the domain's weight (2 for an SMT pair, which gives the
/// paper's 64 ms; 10 for a 10-core MC domain, which would give 320 ms). We follow the paper's
/// doubling rule so that every machine shape gets the same per-level intervals.
pub fn busy_balance_interval_ms(kind: DomainKind) -> u64 {
    match kind {
        DomainKind::Smt => 64,
        DomainKind::Mc => 128,
        DomainKind::Numa(level) => 256 << level.min(8),
    }
}

/// Linux's `sd->busy_factor`: a busy CPU balances this many times less often than an idle one.
pub const BUSY_FACTOR: u64 = 32;

/// One scheduling domain as seen from one CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Domain {
    pub kind: DomainKind,
    /// The CPUs this domain spans (always includes the CPU it belongs to).
    pub span: CpuSet,
    /// The domain's groups: the child domain's spans (single CPUs for the lowest level).
    pub groups: Vec<CpuSet>,
    /// `sd->imbalance_pct`: SMT 110, MC 117, NUMA 125.
    pub imbalance_pct: u64,
    /// `sd->cache_nice_tries`: failed balances before a cache-hot task may move (SMT 0, MC 1,
    /// NUMA 2).
    pub cache_nice_tries: u32,
    /// Minimum balance interval for an idle CPU (ms); busy CPUs multiply by [`BUSY_FACTOR`].
    pub min_interval_ms: u64,
}

impl Domain {
    /// Interval between periodic balances of this domain, ms, before the kernel's doubling on a
    /// balanced domain (see `sched`).
    pub fn interval_ms(&self, cpu_idle: bool) -> u64 {
        if cpu_idle {
            self.min_interval_ms
        } else {
            self.min_interval_ms * BUSY_FACTOR
        }
    }
}

/// A simulated machine. Built by [`Machine::named`], [`Machine::from_flags`] or [`Machine::new`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    name: String,
    sockets: usize,
    nodes_per_socket: usize,
    cores_per_node: usize,
    smt: bool,
    /// `domains[cpu]`: that CPU's scheduling domains, lowest level first.
    domains: Vec<Vec<Domain>>,
}

/// The named machine shapes `--machine` accepts.
pub const MACHINE_NAMES: &[&str] = &["xeon-2x10", "magny-cours-48"];

/// The names of the flags that give the machine, for messages: `concord sim`'s `--machine` and
/// `--cpus`, or the experiment commands' `--sim-machine` and `--sim-cpus`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MachineFlags {
    /// The flag of a named machine.
    pub machine: &'static str,
    /// The flag of the logical CPU count.
    pub cpus: &'static str,
}

impl MachineFlags {
    /// `concord sim`'s.
    pub const SIM: MachineFlags = MachineFlags {
        machine: "--machine",
        cpus: "--cpus",
    };
    /// The experiment commands'.
    pub const EXPERIMENT: MachineFlags = MachineFlags {
        machine: "--sim-machine",
        cpus: "--sim-cpus",
    };
}

/// A bad machine description, with a message naming what was wrong and what is allowed (the CLI
/// prints it and exits 2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineError(pub String);

impl fmt::Display for MachineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MachineError {}

impl Machine {
    /// A machine of `sockets × nodes_per_socket` NUMA nodes of `cores_per_node` cores each, with
    /// two hardware threads per core when `smt`.
    pub fn new(
        name: &str,
        sockets: usize,
        nodes_per_socket: usize,
        cores_per_node: usize,
        smt: bool,
    ) -> Result<Machine, MachineError> {
        if sockets == 0 || nodes_per_socket == 0 || cores_per_node == 0 {
            return Err(MachineError(format!(
                "machine `{name}`: sockets, nodes per socket and cores per node must be at least 1"
            )));
        }
        let cores = sockets * nodes_per_socket * cores_per_node;
        let cpus = cores * if smt { 2 } else { 1 };
        if cpus > MAX_CPUS {
            return Err(MachineError(format!(
                "machine `{name}` has {cpus} logical CPUs; at most {MAX_CPUS} are allowed"
            )));
        }
        let mut machine = Machine {
            name: name.to_string(),
            sockets,
            nodes_per_socket,
            cores_per_node,
            smt,
            domains: Vec::new(),
        };
        machine.domains = (0..cpus).map(|cpu| machine.build_domains(cpu)).collect();
        Ok(machine)
    }

    /// A named shape: `xeon-2x10` (000's 2×10-core Xeon E5 v3: 2 sockets, one node each, SMT
    /// off → 20 CPUs; `smt` on gives 40) or `magny-cours-48` (004's 4-socket Opteron 6172: 8
    /// nodes of 6 cores, two nodes per socket, no SMT). `smt` overrides the shape's default.
    pub fn named(name: &str, smt: Option<bool>) -> Result<Machine, MachineError> {
        match name {
            "xeon-2x10" => Machine::new(name, 2, 1, 10, smt.unwrap_or(false)),
            "magny-cours-48" => {
                if smt == Some(true) {
                    return Err(MachineError(
                        "machine `magny-cours-48` has no SMT (Opteron 6172); allowed: --smt off"
                            .to_string(),
                    ));
                }
                Machine::new(name, 4, 2, 6, false)
            }
            _ => Err(MachineError(format!(
                "unknown machine `{name}`; allowed: {}",
                MACHINE_NAMES.join(", ")
            ))),
        }
    }

    /// The machine the CLI flags describe: `--machine NAME` or `--cpus N` (logical CPUs), with
    /// `--smt on|off` (default off) and `--nodes K` (default 1, one socket per node). `--machine`
    /// takes `--smt` but not `--cpus`/`--nodes`.
    pub fn from_flags(
        machine: Option<&str>,
        cpus: Option<&str>,
        smt: Option<&str>,
        nodes: Option<&str>,
    ) -> Result<Machine, MachineError> {
        Machine::from_flags_named(MachineFlags::SIM, machine, cpus, smt, nodes)
    }

    /// [`Machine::from_flags`] for a command whose machine and CPU flags have other names
    /// (`names`), which its messages use.
    pub fn from_flags_named(
        names: MachineFlags,
        machine: Option<&str>,
        cpus: Option<&str>,
        smt: Option<&str>,
        nodes: Option<&str>,
    ) -> Result<Machine, MachineError> {
        let MachineFlags {
            machine: machine_flag,
            cpus: cpus_flag,
        } = names;
        let smt = match smt {
            None => None,
            Some("on") => Some(true),
            Some("off") => Some(false),
            Some(other) => {
                return Err(MachineError(format!(
                    "--smt `{other}` is not allowed; allowed: on, off"
                )))
            }
        };
        if let Some(name) = machine {
            if cpus.is_some() || nodes.is_some() {
                return Err(MachineError(format!(
                    "{machine_flag} {name} fixes the CPUs and nodes; give either {machine_flag} \
                     (with --smt) or {cpus_flag}/--nodes, not both"
                )));
            }
            return Machine::named(name, smt);
        }
        let Some(cpus_text) = cpus else {
            return Err(MachineError(format!(
                "no machine given; use {cpus_flag} N (with --smt on|off, --nodes K) or \
                 {machine_flag} NAME (allowed: {})",
                MACHINE_NAMES.join(", ")
            )));
        };
        let cpus = parse_count(cpus_flag, cpus_text)?;
        let nodes = match nodes {
            Some(text) => parse_count("--nodes", text)?,
            None => 1,
        };
        let smt = smt.unwrap_or(false);
        let threads = if smt { 2 } else { 1 };
        if cpus > MAX_CPUS {
            return Err(MachineError(format!(
                "{cpus_flag} {cpus} is too many; allowed: 1 to {MAX_CPUS}"
            )));
        }
        if cpus % (threads * nodes) != 0 {
            return Err(MachineError(format!(
                "{cpus_flag} {cpus} cannot be split into {nodes} node(s){}; {cpus_flag} must be a \
                 multiple of {}",
                if smt { " of 2-thread cores" } else { "" },
                threads * nodes
            )));
        }
        let shape = format!(
            "{cpus}cpu-{nodes}node-smt-{}",
            if smt { "on" } else { "off" }
        );
        Machine::new(&shape, nodes, 1, cpus / threads / nodes, smt)
    }

    /// The shape's name (`xeon-2x10`, or `20cpu-2node-smt-off` for a flag-built machine).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of logical CPUs.
    pub fn cpus(&self) -> usize {
        self.cores() * if self.smt { 2 } else { 1 }
    }

    /// Number of physical cores.
    pub fn cores(&self) -> usize {
        self.sockets * self.nodes_per_socket * self.cores_per_node
    }

    /// Whether cores have two hardware threads.
    pub fn smt(&self) -> bool {
        self.smt
    }

    /// Number of NUMA nodes.
    pub fn nodes(&self) -> usize {
        self.sockets * self.nodes_per_socket
    }

    /// Number of sockets.
    pub fn sockets(&self) -> usize {
        self.sockets
    }

    /// All CPUs.
    pub fn all_cpus(&self) -> CpuSet {
        CpuSet::first(self.cpus())
    }

    /// The physical core of `cpu`.
    pub fn core_of(&self, cpu: CpuId) -> usize {
        cpu % self.cores()
    }

    /// The NUMA node of `cpu` (also its LLC domain).
    pub fn node_of(&self, cpu: CpuId) -> usize {
        self.core_of(cpu) / self.cores_per_node
    }

    /// The socket of `cpu`.
    pub fn socket_of(&self, cpu: CpuId) -> usize {
        self.node_of(cpu) / self.nodes_per_socket
    }

    /// The hardware threads of `cpu`'s core (just `cpu` without SMT).
    pub fn core_siblings(&self, cpu: CpuId) -> CpuSet {
        self.cpus_where(|c| self.core_of(c) == self.core_of(cpu))
    }

    /// The CPUs sharing `cpu`'s last-level cache (its NUMA node).
    pub fn llc_cpus(&self, cpu: CpuId) -> CpuSet {
        self.cpus_where(|c| self.node_of(c) == self.node_of(cpu))
    }

    /// Whether two CPUs share a last-level cache (`cpus_share_cache`).
    pub fn share_cache(&self, a: CpuId, b: CpuId) -> bool {
        self.node_of(a) == self.node_of(b)
    }

    /// `cpu`'s scheduling domains, lowest level first (degenerate levels removed, as Linux does).
    pub fn domains(&self, cpu: CpuId) -> &[Domain] {
        &self.domains[cpu]
    }

    fn cpus_where(&self, keep: impl Fn(CpuId) -> bool) -> CpuSet {
        let mut set = CpuSet::empty();
        for cpu in (0..self.cpus()).filter(|&c| keep(c)) {
            set.insert(cpu);
        }
        set
    }

    /// Candidate levels SMT, MC, NUMA-socket, NUMA-all; a level whose span equals its child's
    /// is degenerate and dropped (`sd_parent_degenerate`), as is a one-CPU level.
    fn build_domains(&self, cpu: CpuId) -> Vec<Domain> {
        let all = self.all_cpus();
        let socket = self.cpus_where(|c| self.socket_of(c) == self.socket_of(cpu));
        let mut levels = vec![
            (DomainKind::Smt, self.core_siblings(cpu)),
            (DomainKind::Mc, self.llc_cpus(cpu)),
        ];
        levels.push((DomainKind::Numa(0), socket));
        levels.push((DomainKind::Numa(1), all));
        let mut domains: Vec<Domain> = Vec::new();
        let mut child_span = CpuSet::single(cpu);
        for (kind, span) in levels {
            if span == child_span || span.len() <= 1 {
                continue;
            }
            let kind = match kind {
                // Renumber the NUMA levels that survived so the nearest is always Numa(0).
                DomainKind::Numa(_) => DomainKind::Numa(
                    domains
                        .iter()
                        .filter(|d| matches!(d.kind, DomainKind::Numa(_)))
                        .count() as u8,
                ),
                other => other,
            };
            let groups = self.groups_of(span, domains.last().map(|d| d.kind));
            let (imbalance_pct, cache_nice_tries) = match kind {
                DomainKind::Smt => (110, 0),
                DomainKind::Mc => (117, 1),
                DomainKind::Numa(_) => (125, 2),
            };
            domains.push(Domain {
                kind,
                span,
                groups,
                imbalance_pct,
                cache_nice_tries,
                min_interval_ms: busy_balance_interval_ms(kind) / BUSY_FACTOR,
            });
            child_span = span;
        }
        domains
    }

    /// The groups of a domain spanning `span`: the spans of the child level (as seen from each
    /// CPU of `span`), in order of their lowest CPU.
    fn groups_of(&self, span: CpuSet, child: Option<DomainKind>) -> Vec<CpuSet> {
        let mut groups: Vec<CpuSet> = Vec::new();
        for cpu in span.iter() {
            let group = match child {
                None => CpuSet::single(cpu),
                Some(DomainKind::Smt) => self.core_siblings(cpu),
                Some(DomainKind::Mc) => self.llc_cpus(cpu),
                Some(DomainKind::Numa(_)) => {
                    self.cpus_where(|c| self.socket_of(c) == self.socket_of(cpu))
                }
            };
            if !groups.contains(&group) {
                groups.push(group);
            }
        }
        groups
    }
}

fn parse_count(flag: &str, text: &str) -> Result<usize, MachineError> {
    match text.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(MachineError(format!(
            "{flag} `{text}` is not allowed; allowed: a whole number from 1 to {MAX_CPUS}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xeon_2x10_has_20_cpus_two_sockets_and_mc_numa_domains() {
        let m = Machine::named("xeon-2x10", None).unwrap();
        assert_eq!((m.cpus(), m.nodes(), m.smt()), (20, 2, false));
        let kinds: Vec<_> = m.domains(3).iter().map(|d| d.kind).collect();
        assert_eq!(kinds, vec![DomainKind::Mc, DomainKind::Numa(0)]);
        assert_eq!(m.domains(3)[0].span, CpuSet::first(10));
        assert_eq!(m.domains(3)[0].groups.len(), 10);
        assert_eq!(
            m.domains(3)[1].groups,
            vec![CpuSet::first(10), {
                let mut s = CpuSet::empty();
                (10..20).for_each(|c| s.insert(c));
                s
            }]
        );
        // 000 §5.8: 128 ms between cores of a socket with SMT off.
        assert_eq!(m.domains(3)[0].interval_ms(false), 128);
        assert_eq!(m.domains(3)[1].interval_ms(false), 256);
        assert_eq!(m.domains(3)[0].interval_ms(true), 4);
    }

    #[test]
    fn xeon_with_smt_numbers_siblings_like_linux_and_balances_them_every_64_ms() {
        let m = Machine::named("xeon-2x10", Some(true)).unwrap();
        assert_eq!(m.cpus(), 40);
        assert_eq!(m.core_siblings(3).iter().collect::<Vec<_>>(), vec![3, 23]);
        assert_eq!(m.node_of(23), 0);
        assert_eq!(m.node_of(33), 1);
        let d = m.domains(23);
        assert_eq!(d[0].kind, DomainKind::Smt);
        assert_eq!(d[0].interval_ms(false), 64);
        assert_eq!(d[1].kind, DomainKind::Mc);
        assert_eq!(d[1].span.len(), 20);
        assert_eq!(d[1].groups.len(), 10, "MC groups are the cores");
        assert_eq!(d[2].kind, DomainKind::Numa(0));
    }

    #[test]
    fn magny_cours_has_eight_nodes_of_six_and_two_numa_levels() {
        let m = Machine::named("magny-cours-48", None).unwrap();
        assert_eq!((m.cpus(), m.nodes(), m.sockets()), (48, 8, 4));
        let d = m.domains(7);
        let kinds: Vec<_> = d.iter().map(|d| d.kind).collect();
        assert_eq!(
            kinds,
            vec![DomainKind::Mc, DomainKind::Numa(0), DomainKind::Numa(1)]
        );
        assert_eq!(
            d[0].span.iter().collect::<Vec<_>>(),
            (6..12).collect::<Vec<_>>()
        );
        assert_eq!(d[1].span.len(), 12, "the two nodes of socket 0");
        assert_eq!(d[1].groups.len(), 2);
        assert_eq!(
            d[2].groups.len(),
            4,
            "the top level's groups are the sockets"
        );
        assert_eq!(
            d.iter().map(|d| d.interval_ms(false)).collect::<Vec<_>>(),
            vec![128, 256, 512]
        );
    }

    #[test]
    fn flags_build_a_machine_and_bad_flags_name_what_is_allowed() {
        let m = Machine::from_flags(None, Some("20"), Some("off"), Some("2")).unwrap();
        assert_eq!((m.cpus(), m.nodes(), m.smt()), (20, 2, false));
        let m = Machine::from_flags(None, Some("8"), Some("on"), None).unwrap();
        assert_eq!((m.cpus(), m.cores(), m.nodes()), (8, 4, 1));
        let m = Machine::from_flags(Some("xeon-2x10"), None, Some("on"), None).unwrap();
        assert_eq!(m.cpus(), 40);

        let err = |r: Result<Machine, MachineError>| r.unwrap_err().to_string();
        assert!(err(Machine::from_flags(None, Some("0"), None, None)).contains("allowed: a whole"));
        assert!(err(Machine::from_flags(None, Some("x"), None, None)).contains("--cpus `x`"));
        assert!(
            err(Machine::from_flags(None, Some("20"), Some("yes"), None))
                .contains("allowed: on, off")
        );
        assert!(
            err(Machine::from_flags(None, Some("20"), None, Some("3"))).contains("multiple of 3")
        );
        assert!(
            err(Machine::from_flags(None, Some("7"), Some("on"), None)).contains("multiple of 2")
        );
        assert!(err(Machine::from_flags(None, Some("300"), None, None)).contains("1 to 256"));
        assert!(err(Machine::from_flags(Some("vax"), None, None, None))
            .contains("allowed: xeon-2x10, magny-cours-48"));
        assert!(err(Machine::from_flags(
            Some("xeon-2x10"),
            Some("20"),
            None,
            None
        ))
        .contains("not both"));
        assert!(err(Machine::from_flags(None, None, None, None)).contains("--cpus N"));
        assert!(err(Machine::from_flags(
            Some("magny-cours-48"),
            None,
            Some("on"),
            None
        ))
        .contains("no SMT"));
    }

    #[test]
    fn messages_name_the_flags_the_command_has() {
        let named = |machine, cpus| {
            Machine::from_flags_named(MachineFlags::EXPERIMENT, machine, cpus, None, Some("2"))
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            named(None, Some("0")),
            "--sim-cpus `0` is not allowed; allowed: a whole number from 1 to 256"
        );
        assert_eq!(
            named(None, Some("5")),
            "--sim-cpus 5 cannot be split into 2 node(s); --sim-cpus must be a multiple of 2"
        );
        assert_eq!(
            named(Some("xeon-2x10"), None),
            "--sim-machine xeon-2x10 fixes the CPUs and nodes; give either --sim-machine (with \
             --smt) or --sim-cpus/--nodes, not both"
        );
        assert!(named(None, None)
            .contains("use --sim-cpus N (with --smt on|off, --nodes K) or --sim-machine NAME"));
    }

    #[test]
    fn one_cpu_machine_has_no_domains() {
        let m = Machine::from_flags(None, Some("1"), None, None).unwrap();
        assert!(m.domains(0).is_empty());
    }

    #[test]
    fn cpuset_wraps_from_start() {
        let set = CpuSet::first(5);
        assert_eq!(set.iter_wrap(3).collect::<Vec<_>>(), vec![3, 4, 0, 1, 2]);
        let mut sparse = CpuSet::empty();
        [1, 63, 64, 200].iter().for_each(|&c| sparse.insert(c));
        assert_eq!(sparse.iter().collect::<Vec<_>>(), vec![1, 63, 64, 200]);
        assert_eq!(
            sparse.iter_wrap(64).collect::<Vec<_>>(),
            vec![64, 200, 1, 63]
        );
        assert_eq!(sparse.len(), 4);
    }
}
