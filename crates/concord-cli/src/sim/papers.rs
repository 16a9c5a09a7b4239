//! `concord sim validate --tier 3`: the papers' figures at the papers' scale. Traces recorded
//! here (several recordings of each workload and preset) are simulated on the papers'
//! machines under several seeds; each figure's value is computed per recording and seed, its
//! range reported, and the figure passes only if every value meets the target written in
//! docs/simulator.md before tier 3 was first measured.
//!
//! Nothing here is timed on this machine except the simulator itself (its wall time per
//! simulation is reported as its speed): the recordings are untimed runs, and the simulations
//! run `--jobs` at a time. `--shard K/N` takes every N-th recording from the K-th, so that
//! `--merge` joins the shards' figures into the whole.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use concord_sim::replay::driver::SchedModel;
use serde::{Deserialize, Serialize};

use super::stats::median;
use super::tiers::{check_shards, in_parallel, read_collections, Collection, Shard};
use super::validate::{concord, path_arg, Workload};
use crate::console::{errln, outln};

/// Trace recordings per workload and preset (`--recordings`).
pub const RECORDINGS: usize = 5;

/// Seeds every recording is simulated under.
pub const SEEDS: [u64; 3] = [1, 2, 3];

/// One paper's setting: the workload standing in for its applications, its machine, the two
/// presets its figures compare and the GC thread counts they sweep.
#[derive(Debug)]
struct Study {
    paper: &'static str,
    workload: Workload,
    /// Flags of the recording and of every simulation besides the workload's.
    args: &'static [&'static str],
    /// GC threads the traces are recorded with (each is replayed at every count of
    /// `threads`).
    record_threads: usize,
    machine: &'static str,
    /// The baseline preset and the paper's collector.
    presets: [&'static str; 2],
    threads: &'static [usize],
}

/// 000 (Suo et al.): lusearch with 16 mutators on the 2×10-core Xeon; its JVM is `suo18`.
const SUO: Study = Study {
    paper: "000",
    workload: Workload {
        name: "search",
        size: None,
    },
    args: &["--rounds", "3", "--mutators", "16"],
    record_threads: REFERENCE_THREADS,
    machine: "xeon-2x10",
    presets: ["vanilla", "suo18"],
    threads: &[1, 2, 4, 8, 12, 15, 20],
};

/// 004 (NAPS): XML Transform on the 48-core Opteron; its collector is `naps`.
const NAPS: Study = Study {
    paper: "004",
    workload: Workload {
        name: "transform",
        size: None,
    },
    args: &[],
    record_threads: 8,
    machine: "magny-cours-48",
    presets: ["vanilla", "naps"],
    threads: &[1, 2, 4, 8, 16, 24, 32, 48],
};

/// `--quick`: the same figures on small inputs and few thread counts, for tests of the
/// plumbing, not for conclusions.
const SUO_QUICK: Study = Study {
    args: &["--mutators", "16"],
    threads: &[1, REFERENCE_THREADS],
    ..SUO
};
const NAPS_QUICK: Study = Study {
    workload: Workload {
        name: "binary-trees",
        size: Some("14"),
    },
    threads: &[1, 8, 48],
    ..NAPS
};

/// 000's GC thread count: HotSpot's default on its 20 CPUs, the count of Fig. 4, 15 and 16.
const REFERENCE_THREADS: usize = 15;

/// 004 Fig. 7's first-touch curve is judged past this many GC threads.
const FLAT_PAST: usize = 8;

fn studies(quick: bool) -> [&'static Study; 2] {
    if quick {
        [&SUO_QUICK, &NAPS_QUICK]
    } else {
        [&SUO, &NAPS]
    }
}

/// What a simulation changes of its study's plain setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Variant {
    Plain,
    /// Ten busy loops on the simulated machine (000 Fig. 15).
    TenBusyLoops,
    /// SMT on: two hardware threads per core (000 Fig. 16).
    SmtOn,
}

/// One simulated setting; every recording of its preset is simulated in it under every seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct SimKey {
    /// 0 for 000, 1 for 004 (the index into [`studies`]).
    study: usize,
    preset: &'static str,
    gc_threads: usize,
    variant: Variant,
}

/// Every setting the figures need.
fn settings(quick: bool) -> Vec<SimKey> {
    let mut keys = Vec::new();
    for (study, s) in studies(quick).iter().enumerate() {
        for preset in s.presets {
            for &gc_threads in s.threads {
                keys.push(SimKey {
                    study,
                    preset,
                    gc_threads,
                    variant: Variant::Plain,
                });
            }
        }
    }
    let suo = |preset, variant| SimKey {
        study: 0,
        preset,
        gc_threads: REFERENCE_THREADS,
        variant,
    };
    keys.push(suo(SUO.presets[0], Variant::TenBusyLoops));
    keys.push(suo(SUO.presets[1], Variant::TenBusyLoops));
    keys.push(suo(SUO.presets[0], Variant::SmtOn));
    keys
}

/// A figure's target.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    AtLeast(f64),
    AtMost(f64),
    Between(f64, f64),
    Below(f64),
}

impl Target {
    pub fn met(self, value: f64) -> bool {
        match self {
            Target::AtLeast(t) => value >= t,
            Target::AtMost(t) => value <= t,
            Target::Between(lo, hi) => (lo..=hi).contains(&value),
            Target::Below(t) => value < t,
        }
    }

    fn describe(self) -> String {
        match self {
            Target::AtLeast(t) => format!(">= {t}"),
            Target::AtMost(t) => format!("<= {t}"),
            Target::Between(lo, hi) => format!("{lo}-{hi}"),
            Target::Below(t) => format!("< {t}"),
        }
    }
}

/// A figure of tier 3: what it is, its target and what the paper found.
struct FigureSpec {
    id: &'static str,
    paper: &'static str,
    what: &'static str,
    target: Target,
    paper_value: &'static str,
}

const FIGURES: [FigureSpec; 8] = [
    FigureSpec {
        id: "000-fig3c-vanilla",
        paper: "000 Fig. 3(c)",
        what: "vanilla: GC time at 15 GC threads / its minimum over the thread counts",
        target: Target::AtLeast(1.2),
        paper_value: "GC time grows with more GC threads",
    },
    FigureSpec {
        id: "000-fig3c-suo18",
        paper: "000 Fig. 3(c)",
        what: "suo18: GC time at 15 GC threads / its minimum over the thread counts",
        target: Target::AtMost(1.1),
        paper_value: "000's JVM scales",
    },
    FigureSpec {
        id: "000-fig4b-vanilla",
        paper: "000 Fig. 4(b)",
        what: "vanilla, 15 GC threads: median over young collections of the distinct CPUs \
               the workers ran on",
        target: Target::AtMost(8.0),
        paper_value: "most of 15 workers stacked on a few CPUs",
    },
    FigureSpec {
        id: "000-fig4b-suo18",
        paper: "000 Fig. 4(b)",
        what: "suo18, 15 GC threads: median over young collections of the distinct CPUs the \
               workers ran on",
        target: Target::AtLeast(13.0),
        paper_value: "the workers spread",
    },
    FigureSpec {
        id: "000-fig15",
        paper: "000 Fig. 15",
        what: "ten busy loops, 15 GC threads: suo18's GC time / vanilla's",
        target: Target::Between(0.13, 0.33),
        paper_value: "0.23 (77.2 % less GC time)",
    },
    FigureSpec {
        id: "000-fig16",
        paper: "000 Fig. 16",
        what: "vanilla, 15 GC threads: GC time with SMT on (40 CPUs) / with SMT off",
        target: Target::Below(1.0),
        paper_value: "SMT on lowers vanilla's time",
    },
    FigureSpec {
        id: "004-fig7-naps",
        paper: "004 Fig. 7",
        what: "naps: GC throughput at the most GC threads (48) / at 1",
        target: Target::AtLeast(20.0),
        paper_value: "NAPS scales to 48 cores",
    },
    FigureSpec {
        id: "004-fig7-first-touch",
        paper: "004 Fig. 7",
        what: "vanilla (first touch): the largest GC throughput past 8 GC threads / at 8",
        target: Target::AtMost(1.25),
        paper_value: "Parallel Scavenge stops scaling",
    },
];

/// A figure of the papers that tier 3 does not count, and why.
const INPUTS: [(&str, &str); 1] = [(
    "004 Fig. 3",
    "the bandwidth of local and remote accesses is read off this figure into the simulator's \
     NUMA model: an input, not a result",
)];

/// One value of a figure.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// The recording (from 1) and the seed it was simulated under.
    pub recording: usize,
    pub seed: u64,
    pub value: f64,
}

/// A figure's values and verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    pub id: String,
    pub paper: String,
    pub what: String,
    pub target: Target,
    pub target_text: String,
    pub paper_value: String,
    pub results: Vec<Point>,
    /// The smallest and largest value (`None` without values).
    pub range: Option<[f64; 2]>,
    /// Values that miss the target.
    pub missed: usize,
    /// Every value meets the target (and there is at least one).
    pub pass: bool,
}

impl Figure {
    /// The figure of `spec` with `results`, its range and verdict computed.
    fn of(
        id: String,
        paper: String,
        what: String,
        target: Target,
        paper_value: String,
        mut results: Vec<Point>,
    ) -> Figure {
        results.sort_by_key(|p| (p.recording, p.seed));
        let values: Vec<f64> = results.iter().map(|p| p.value).collect();
        let range = (!values.is_empty()).then(|| {
            [
                values.iter().copied().fold(f64::INFINITY, f64::min),
                values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            ]
        });
        let missed = values.iter().filter(|&&v| !target.met(v)).count();
        Figure {
            id,
            paper,
            what,
            target,
            target_text: target.describe(),
            paper_value,
            pass: !results.is_empty() && missed == 0,
            results,
            range,
            missed,
        }
    }
}

/// The simulator's speed on one machine size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Speed {
    pub machine: String,
    pub cpus: usize,
    pub simulations: usize,
    pub most_gc_threads: usize,
    /// Median wall time of a simulation (loading the trace included), and per simulated
    /// collection.
    pub median_wall_s: f64,
    pub median_ms_per_collection: f64,
    /// Every simulation's wall seconds and collections (kept so that a merge gives the same
    /// medians).
    pub samples: Vec<(f64, usize)>,
}

impl Speed {
    fn of(
        machine: String,
        cpus: usize,
        most_gc_threads: usize,
        samples: Vec<(f64, usize)>,
    ) -> Speed {
        let walls: Vec<f64> = samples.iter().map(|s| s.0).collect();
        let per: Vec<f64> = samples
            .iter()
            .map(|&(w, c)| w * 1e3 / c.max(1) as f64)
            .collect();
        Speed {
            machine,
            cpus,
            simulations: samples.len(),
            most_gc_threads,
            median_wall_s: median(&walls),
            median_ms_per_collection: median(&per),
            samples,
        }
    }
}

/// Tier 3's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PapersResult {
    pub tier: u32,
    pub figures: Vec<Figure>,
    /// Figures of the papers used as inputs, not counted: (figure, why).
    pub inputs: Vec<(String, String)>,
    pub passed: usize,
    pub pass_fraction: f64,
    /// Every figure passes.
    pub pass: bool,
    /// Recordings of the whole run, and the ones (from 1) this result holds.
    pub recordings: usize,
    pub recorded: Vec<usize>,
    pub seeds: Vec<u64>,
    pub sched: String,
    pub costs: Option<String>,
    pub quick: bool,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub shard: Option<Shard>,
    pub speed: Vec<Speed>,
}

/// What `--tier 3` was asked.
pub struct PapersRun<'a> {
    pub exe: &'a Path,
    pub quick: bool,
    pub recordings: usize,
    pub costs: Option<&'a Path>,
    pub sched: SchedModel,
    pub dir: &'a Path,
    pub jobs: usize,
    pub shard: Option<Shard>,
}

/// A recording: study, preset and its number (from 0).
type RecKey = (usize, &'static str, usize);

impl PapersRun<'_> {
    fn seeds(&self) -> Vec<u64> {
        if self.quick {
            SEEDS[..1].to_vec()
        } else {
            SEEDS.to_vec()
        }
    }

    /// The recordings (from 0) this run's shard holds.
    fn mine(&self) -> Vec<usize> {
        (0..self.recordings)
            .filter(|r| self.shard.is_none_or(|s| r % s.count == s.index))
            .collect()
    }

    fn trace(&self, (study, preset, r): RecKey) -> PathBuf {
        let paper = studies(self.quick)[study].paper;
        self.dir
            .join(format!("tier3-{paper}-{preset}-rec{}.trace", r + 1))
    }

    /// The workload's flags and the study's, shared by the recording and the simulations.
    fn study_args(&self, study: usize, preset: &str, gc_threads: usize) -> Vec<String> {
        let s = studies(self.quick)[study];
        let mut args = s.workload.args();
        args.extend(s.args.iter().map(|a| a.to_string()));
        args.extend([
            "--preset".into(),
            preset.into(),
            "--gc-threads".into(),
            gc_threads.to_string(),
        ]);
        args
    }

    fn sim_args(&self, key: SimKey, r: usize, seed: u64, records: &Path) -> Vec<String> {
        let s = studies(self.quick)[key.study];
        let mut args = vec!["sim".to_string()];
        args.extend(self.study_args(key.study, key.preset, key.gc_threads));
        args.extend(["--machine".into(), s.machine.into()]);
        match key.variant {
            Variant::Plain => {}
            Variant::TenBusyLoops => args.extend(["--load".into(), "busy:10".into()]),
            Variant::SmtOn => args.extend(["--smt".into(), "on".into()]),
        }
        args.extend([
            "--sched".into(),
            self.sched.to_string(),
            "--seed".into(),
            seed.to_string(),
            "--trace".into(),
            path_arg(&self.trace((key.study, key.preset, r))),
            "--gc-records".into(),
            path_arg(records),
        ]);
        if let Some(costs) = self.costs {
            args.extend(["--costs".into(), path_arg(costs)]);
        }
        args
    }

    /// Records the traces of this shard's recordings and simulates every setting of them.
    pub fn measure(&self) -> Result<PapersResult> {
        let label = "concord sim validate: tier 3";
        let mine = self.mine();
        let seeds = self.seeds();
        let recs: Vec<RecKey> = studies(self.quick)
            .iter()
            .enumerate()
            .flat_map(|(study, s)| {
                let mine = &mine;
                s.presets
                    .into_iter()
                    .flat_map(move |p| mine.iter().map(move |&r| (study, p, r)))
            })
            .collect();
        // The recordings: untimed runs, so they run `jobs` at a time too.
        in_parallel(self.jobs, recs.len(), |n| {
            let rec = recs[n];
            let s = studies(self.quick)[rec.0];
            errln!(
                "{label}: [{}/{}] recording {} {} ({}), recording {}",
                n + 1,
                recs.len(),
                s.workload.label(),
                rec.1,
                s.paper,
                rec.2 + 1
            );
            let mut args = vec!["run".to_string()];
            args.extend(self.study_args(rec.0, rec.1, s.record_threads));
            args.extend(["--gc-trace".into(), path_arg(&self.trace(rec))]);
            concord(self.exe, &args)
        })?;
        let keys = settings(self.quick);
        let jobs: Vec<(SimKey, usize, u64)> = keys
            .iter()
            .flat_map(|&k| {
                let seeds = &seeds;
                mine.iter()
                    .flat_map(move |&r| seeds.iter().map(move |&seed| (k, r, seed)))
            })
            .collect();
        let outcomes = in_parallel(self.jobs, jobs.len(), |n| {
            let (key, r, seed) = jobs[n];
            let s = studies(self.quick)[key.study];
            errln!(
                "{label}: [{}/{}] simulating {} {} {} GC threads{} on {}, recording {}, seed {seed}",
                n + 1,
                jobs.len(),
                s.workload.label(),
                key.preset,
                key.gc_threads,
                match key.variant {
                    Variant::Plain => "",
                    Variant::TenBusyLoops => ", ten busy loops",
                    Variant::SmtOn => ", SMT on",
                },
                s.machine,
                r + 1
            );
            let records = self.dir.join(format!(
                "tier3-{}-{}-{}t-{:?}-rec{}-seed{seed}.jsonl",
                s.paper,
                key.preset,
                key.gc_threads,
                key.variant,
                r + 1
            ));
            let args = self.sim_args(key, r, seed, &records);
            let start = Instant::now();
            concord(self.exe, &args)?;
            let wall = start.elapsed().as_secs_f64();
            Ok((read_collections(&records, &args)?, wall))
        })?;
        let mut sims: Sims = HashMap::new();
        let mut speed: Vec<SpeedSample> = Vec::new();
        for (&(key, r, seed), (collections, wall)) in jobs.iter().zip(outcomes) {
            speed.push((
                machine_of(key, self.quick)?,
                key.gc_threads,
                (wall, collections.len()),
            ));
            sims.insert((key, r, seed), collections);
        }
        let figures = FIGURES
            .iter()
            .map(|spec| {
                let mut results = Vec::new();
                for &r in &mine {
                    for &seed in &seeds {
                        let value = figure_value(spec.id, &sims, self.quick, r, seed)
                            .with_context(|| format!("figure {}", spec.id))?;
                        results.push(Point {
                            recording: r + 1,
                            seed,
                            value,
                        });
                    }
                }
                Ok(Figure::of(
                    spec.id.into(),
                    spec.paper.into(),
                    spec.what.into(),
                    spec.target,
                    spec.paper_value.into(),
                    results,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let speed = speeds(speed);
        Ok(summarize(PapersResult {
            tier: 3,
            figures,
            inputs: INPUTS
                .iter()
                .map(|(f, why)| (f.to_string(), why.to_string()))
                .collect(),
            passed: 0,
            pass_fraction: 0.0,
            pass: false,
            recordings: self.recordings,
            recorded: mine.iter().map(|r| r + 1).collect(),
            seeds,
            sched: self.sched.to_string(),
            costs: self.costs.map(|c| c.display().to_string()),
            quick: self.quick,
            shard: self.shard,
            speed,
        }))
    }
}

/// The simulated collections of each (setting, recording, seed).
type Sims = HashMap<(SimKey, usize, u64), Vec<Collection>>;

/// The simulated machine of `key`: its label (as the flags give it) and logical CPUs, from
/// the simulator's own named machines.
fn machine_of(key: SimKey, quick: bool) -> Result<(String, usize)> {
    let name = studies(quick)[key.study].machine;
    let smt = key.variant == Variant::SmtOn;
    let machine = concord_sim::machine::Machine::named(name, smt.then_some(true))
        .map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
    let label = if smt {
        format!("{name} --smt on")
    } else {
        name.to_string()
    };
    Ok((label, machine.cpus()))
}

/// A simulation's machine, GC threads, wall seconds and collections.
type SpeedSample = ((String, usize), usize, (f64, usize));

/// The speed samples grouped by machine, smallest first.
fn speeds(samples: Vec<SpeedSample>) -> Vec<Speed> {
    let machines: BTreeSet<(usize, String)> = samples
        .iter()
        .map(|((label, cpus), _, _)| (*cpus, label.clone()))
        .collect();
    machines
        .into_iter()
        .map(|(cpus, label)| {
            let mine: Vec<&SpeedSample> = samples.iter().filter(|s| s.0 .0 == label).collect();
            Speed::of(
                label,
                cpus,
                mine.iter().map(|s| s.1).max().unwrap_or(0),
                mine.iter().map(|s| s.2).collect(),
            )
        })
        .collect()
}

/// The sum of the pauses, ms.
fn gc_time(collections: &[Collection]) -> f64 {
    collections.iter().map(|c| c.pause_ms).sum()
}

/// The median over young collections of the distinct CPUs their workers ran on.
fn distinct_cpus(collections: &[Collection]) -> f64 {
    let counts: Vec<f64> = collections
        .iter()
        .filter(|c| !c.full && !c.cpus.is_empty())
        .map(|c| c.cpus.len() as f64)
        .collect();
    median(&counts)
}

/// The value of figure `id` for recording `r` under `seed`.
fn figure_value(id: &str, sims: &Sims, quick: bool, r: usize, seed: u64) -> Result<f64> {
    let [suo, naps] = studies(quick);
    let get = |study: usize, preset: &'static str, gc_threads: usize, variant: Variant| {
        let key = SimKey {
            study,
            preset,
            gc_threads,
            variant,
        };
        sims.get(&(key, r, seed))
            .map(Vec::as_slice)
            .with_context(|| format!("no simulation of {key:?}, recording {}, seed {seed}", r + 1))
    };
    let plain = |study, preset, n| get(study, preset, n, Variant::Plain);
    let reference = REFERENCE_THREADS;
    // GC time at the reference count over its minimum across the sweep.
    let scaling = |preset| -> Result<f64> {
        let times = suo
            .threads
            .iter()
            .map(|&n| plain(0, preset, n).map(gc_time))
            .collect::<Result<Vec<f64>>>()?;
        let least = times.iter().copied().fold(f64::INFINITY, f64::min);
        Ok(gc_time(plain(0, preset, reference)?) / least)
    };
    let [vanilla, suo18] = suo.presets;
    let [ps, naps_preset] = naps.presets;
    let most = *naps.threads.last().unwrap_or(&1);
    Ok(match id {
        "000-fig3c-vanilla" => scaling(vanilla)?,
        "000-fig3c-suo18" => scaling(suo18)?,
        "000-fig4b-vanilla" => distinct_cpus(plain(0, vanilla, reference)?),
        "000-fig4b-suo18" => distinct_cpus(plain(0, suo18, reference)?),
        "000-fig15" => {
            let busy = |p| get(0, p, reference, Variant::TenBusyLoops).map(gc_time);
            busy(suo18)? / busy(vanilla)?
        }
        "000-fig16" => {
            gc_time(get(0, vanilla, reference, Variant::SmtOn)?)
                / gc_time(plain(0, vanilla, reference)?)
        }
        // Throughput is bytes allocated per pause second: the same trace allocates the same
        // bytes at every thread count, so its ratio is the inverse ratio of the GC times.
        "004-fig7-naps" => {
            gc_time(plain(1, naps_preset, 1)?) / gc_time(plain(1, naps_preset, most)?)
        }
        "004-fig7-first-touch" => {
            let at = gc_time(plain(1, ps, FLAT_PAST)?);
            let mut best = f64::NEG_INFINITY;
            for &n in naps.threads.iter().filter(|&&n| n > FLAT_PAST) {
                best = best.max(at / gc_time(plain(1, ps, n)?));
            }
            best
        }
        other => bail!("no figure {other}"),
    })
}

/// `result` with its pass count and verdict filled in from its figures.
pub fn summarize(mut result: PapersResult) -> PapersResult {
    result.passed = result.figures.iter().filter(|f| f.pass).count();
    result.pass_fraction = if result.figures.is_empty() {
        0.0
    } else {
        result.passed as f64 / result.figures.len() as f64
    };
    result.pass = !result.figures.is_empty() && result.passed == result.figures.len();
    result
}

/// Joins the shards of one tier-3 run: each of the N shards once, measured alike, and
/// together every recording; the figures' values concatenated and judged as one run would.
pub fn merge(parts: &[(PathBuf, PapersResult)]) -> Result<PapersResult> {
    let (_, first) = &parts[0];
    let shards: Vec<(&Path, Option<Shard>, bool)> = parts
        .iter()
        .map(|(path, p)| {
            let alike = p.recordings == first.recordings
                && p.seeds == first.seeds
                && p.sched == first.sched
                && p.costs == first.costs
                && p.quick == first.quick
                && p.figures
                    .iter()
                    .map(|f| &f.id)
                    .eq(first.figures.iter().map(|f| &f.id));
            (path.as_path(), p.shard, alike)
        })
        .collect();
    check_shards(
        3,
        &shards,
        "recordings, seeds, model, costs, figures or shard count differ",
    )?;
    let mut recorded: Vec<usize> = parts.iter().flat_map(|(_, p)| p.recorded.clone()).collect();
    recorded.sort_unstable();
    if recorded != (1..=first.recordings).collect::<Vec<_>>() {
        bail!(
            "--merge: the tier-3 shards hold recordings {recorded:?}, not each of 1..={} once",
            first.recordings
        );
    }
    let figures = first
        .figures
        .iter()
        .map(|f| {
            let results = parts
                .iter()
                .flat_map(|(_, p)| p.figures.iter().filter(|g| g.id == f.id))
                .flat_map(|g| g.results.clone())
                .collect();
            Figure::of(
                f.id.clone(),
                f.paper.clone(),
                f.what.clone(),
                f.target,
                f.paper_value.clone(),
                results,
            )
        })
        .collect();
    let sizes: BTreeSet<usize> = parts
        .iter()
        .flat_map(|(_, p)| p.speed.iter().map(|s| s.cpus))
        .collect();
    let speed = sizes
        .into_iter()
        .map(|cpus| {
            let of: Vec<&Speed> = parts
                .iter()
                .flat_map(|(_, p)| p.speed.iter().filter(|s| s.cpus == cpus))
                .collect();
            Speed::of(
                of[0].machine.clone(),
                cpus,
                of.iter().map(|s| s.most_gc_threads).max().unwrap_or(0),
                of.iter().flat_map(|s| s.samples.clone()).collect(),
            )
        })
        .collect();
    Ok(summarize(PapersResult {
        figures,
        recorded,
        shard: None,
        speed,
        ..first.clone()
    }))
}

/// Prints tier 3's result as a table.
pub fn print(result: &PapersResult) -> Result<()> {
    outln!(
        "tier 3: the papers' figures at their scale ({} recording{} x {} seed{}, {} model, {})",
        result.recorded.len(),
        if result.recorded.len() == 1 { "" } else { "s" },
        result.seeds.len(),
        if result.seeds.len() == 1 { "" } else { "s" },
        result.sched,
        result.costs.as_deref().unwrap_or("built-in costs")
    )?;
    outln!(
        "{:<22} {:<12} {:<17} {:>6}  result",
        "figure",
        "target",
        "range",
        "values"
    )?;
    for f in &result.figures {
        let range = f
            .range
            .map_or("-".to_string(), |[lo, hi]| format!("{lo:.2} .. {hi:.2}"));
        outln!(
            "{:<22} {:<12} {:<17} {:>6}  {}",
            f.id,
            f.target_text,
            range,
            f.results.len(),
            if f.pass { "pass" } else { "MISS" }
        )?;
        outln!("    {}: {}; the paper: {}", f.paper, f.what, f.paper_value)?;
        if f.missed > 0 {
            let misses: Vec<String> = f
                .results
                .iter()
                .filter(|p| !f.target.met(p.value))
                .map(|p| format!("recording {} seed {}: {:.2}", p.recording, p.seed, p.value))
                .collect();
            outln!(
                "    missed by {} of {}: {}",
                f.missed,
                f.results.len(),
                misses.join(", ")
            )?;
        }
    }
    for (figure, why) in &result.inputs {
        outln!("not counted: {figure}: {why}")?;
    }
    for s in &result.speed {
        outln!(
            "simulation speed on {} ({} CPUs, up to {} GC threads): median {:.2} s per \
             simulation ({} simulated), {:.1} ms per simulated collection",
            s.machine,
            s.cpus,
            s.most_gc_threads,
            s.median_wall_s,
            s.simulations,
            s.median_ms_per_collection
        )?;
    }
    outln!(
        "tier 3: {} of {} figures pass: {}{}",
        result.passed,
        result.figures.len(),
        if result.pass { "PASS" } else { "MISS" },
        if result.quick {
            " (--quick: small inputs, not the tier's grid)"
        } else {
            ""
        }
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn colls(pauses: &[f64], cpus: &[&[u32]]) -> Vec<Collection> {
        pauses
            .iter()
            .zip(cpus)
            .enumerate()
            .map(|(i, (&p, c))| Collection {
                id: i as u64,
                pause_ms: p,
                cpus: c.iter().copied().collect(),
                ..Collection::default()
            })
            .collect()
    }

    /// Every setting simulated with GC time `time(key)` and workers on `spread(key)` CPUs.
    fn sims_of(quick: bool, time: impl Fn(SimKey) -> f64, spread: impl Fn(SimKey) -> u32) -> Sims {
        let mut sims = Sims::new();
        for key in settings(quick) {
            let cpus: Vec<u32> = (0..spread(key)).collect();
            sims.insert(
                (key, 0, 1),
                colls(&[time(key) / 2.0, time(key) / 2.0], &[&cpus, &cpus]),
            );
        }
        sims
    }

    #[test]
    fn the_figures_values_are_computed_from_their_settings_as_the_docs_define_them() {
        // vanilla's time grows past 8 threads, suo18's falls; naps scales linearly; PS is flat
        // past 8; busy loops quadruple vanilla; SMT halves it.
        let time = |k: SimKey| {
            let n = k.gc_threads as f64;
            let base = match (k.study, k.preset) {
                (0, "vanilla") => (10.0 + (n - 8.0).abs()) * 2.0,
                (0, _) => 100.0 / n,
                (_, "naps") => 480.0 / n,
                _ => 100.0 / n.min(8.0),
            };
            match k.variant {
                Variant::Plain => base,
                Variant::TenBusyLoops if k.preset == "vanilla" => base * 4.0,
                Variant::TenBusyLoops => base,
                Variant::SmtOn => base / 2.0,
            }
        };
        let spread = |k: SimKey| if k.preset == "vanilla" { 6 } else { 15 };
        let sims = sims_of(false, time, spread);
        let v = |id| figure_value(id, &sims, false, 0, 1).unwrap();
        // vanilla at 15: 2·17 = 34 against its minimum 2·10 = 20 at 8 threads.
        assert!((v("000-fig3c-vanilla") - 1.7).abs() < 1e-9);
        // suo18's minimum is at 20 threads: (100/15)/(100/20).
        assert!((v("000-fig3c-suo18") - 20.0 / 15.0).abs() < 1e-9);
        assert_eq!(v("000-fig4b-vanilla"), 6.0);
        assert_eq!(v("000-fig4b-suo18"), 15.0);
        assert!((v("000-fig15") - (100.0 / 15.0) / (34.0 * 4.0)).abs() < 1e-9);
        assert!((v("000-fig16") - 0.5).abs() < 1e-9);
        assert!((v("004-fig7-naps") - 48.0).abs() < 1e-9);
        assert!((v("004-fig7-first-touch") - 1.0).abs() < 1e-9);
        // A missing simulation is an error naming it, not a value.
        let mut partial = sims.clone();
        partial.retain(|(k, _, _), _| k.variant != Variant::SmtOn);
        let e = figure_value("000-fig16", &partial, false, 0, 1).unwrap_err();
        assert!(e.to_string().contains("SmtOn"), "{e}");
    }

    #[test]
    fn a_figure_passes_only_if_every_value_meets_its_target() {
        let point = |recording, value| Point {
            recording,
            seed: 1,
            value,
        };
        let f = |values: &[f64]| {
            Figure::of(
                "x".into(),
                "p".into(),
                "w".into(),
                Target::Between(0.13, 0.33),
                "0.23".into(),
                values
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| point(i + 1, v))
                    .collect(),
            )
        };
        assert!(f(&[0.2, 0.3, 0.13]).pass);
        let miss = f(&[0.2, 0.34, 0.3]);
        assert!(!miss.pass);
        assert_eq!(miss.missed, 1);
        assert_eq!(miss.range, Some([0.2, 0.34]));
        assert!(!f(&[]).pass, "no value is no pass");
        assert!(Target::Below(1.0).met(0.99) && !Target::Below(1.0).met(1.0));
        assert!(Target::AtLeast(20.0).met(20.0) && !Target::AtMost(1.1).met(1.2));
    }

    fn result(shard: Option<Shard>, recorded: Vec<usize>) -> PapersResult {
        let figures = FIGURES
            .iter()
            .map(|s| {
                let results = recorded
                    .iter()
                    .map(|&r| Point {
                        recording: r,
                        seed: 1,
                        value: r as f64,
                    })
                    .collect();
                Figure::of(
                    s.id.into(),
                    s.paper.into(),
                    s.what.into(),
                    s.target,
                    s.paper_value.into(),
                    results,
                )
            })
            .collect();
        summarize(PapersResult {
            tier: 3,
            figures,
            inputs: vec![],
            passed: 0,
            pass_fraction: 0.0,
            pass: false,
            recordings: 3,
            recorded: recorded.clone(),
            seeds: vec![1],
            sched: "cfs".into(),
            costs: None,
            quick: false,
            shard,
            speed: vec![Speed::of(
                "xeon-2x10".into(),
                20,
                15,
                recorded.iter().map(|&r| (r as f64, 4)).collect(),
            )],
        })
    }

    #[test]
    fn shards_of_tier_3_merge_into_the_whole_and_a_missing_or_doubled_one_is_an_error() {
        let whole = result(None, vec![1, 2, 3]);
        let s = |index| Some(Shard { index, count: 2 });
        let parts = vec![
            (PathBuf::from("b"), result(s(1), vec![2])),
            (PathBuf::from("a"), result(s(0), vec![1, 3])),
        ];
        let merged = merge(&parts).unwrap();
        assert_eq!(merged.figures, whole.figures);
        assert_eq!(merged.recorded, whole.recorded);
        assert_eq!(merged.speed[0].median_wall_s, whole.speed[0].median_wall_s);
        assert_eq!(merged.speed[0].simulations, 3);
        let e = merge(&parts[..1]).unwrap_err().to_string();
        assert!(e.contains("shard 1/2 of tier 3 is missing"), "{e}");
        let doubled = vec![parts[0].clone(), parts[0].clone()];
        assert!(merge(&doubled).unwrap_err().to_string().contains("twice"));
        let mut other = parts.clone();
        other[1].1.seeds = vec![1, 2];
        assert!(merge(&other)
            .unwrap_err()
            .to_string()
            .contains("differently"));
    }

    #[test]
    fn shards_take_every_nth_recording_and_every_setting_is_simulated_once() {
        let run = |shard| PapersRun {
            exe: Path::new("concord"),
            quick: false,
            recordings: 5,
            costs: None,
            sched: SchedModel::Cfs,
            dir: Path::new("/tmp"),
            jobs: 1,
            shard,
        };
        assert_eq!(run(None).mine(), vec![0, 1, 2, 3, 4]);
        assert_eq!(run(Some(Shard { index: 1, count: 2 })).mine(), vec![1, 3]);
        let keys = settings(false);
        let unique: std::collections::HashSet<_> = keys.iter().collect();
        assert_eq!(unique.len(), keys.len());
        // 2 presets x 7 counts, 2 x 8, and the three variants.
        assert_eq!(keys.len(), 14 + 16 + 3);
        let args = run(None).sim_args(keys[keys.len() - 1], 0, 2, Path::new("r.jsonl"));
        let text = args.join(" ");
        assert!(text.starts_with("sim search --rounds 3 --mutators 16 --preset vanilla --gc-threads 15 --machine xeon-2x10 --smt on"), "{text}");
        assert!(
            text.contains("--seed 2 --trace /tmp/tier3-000-vanilla-rec1.trace"),
            "{text}"
        );
    }
}
